//! A machine's BMC from the web UI: `/ui/machines/{id}/bmc` shows the record (never the
//! password) and, for an operator, a form to set or remove it. Saving is `PUT
//! /api/v1/machines/{id}/bmc` (removing, `DELETE`), so the API's bounds, sealing, role table and
//! audit decide; a refused save keeps what was typed (except the password) and names the field.
//! A machine without a record gets the address its agent found in band (`ipmitool lan print`
//! in the inventory) filled in. Below it, the last firmware read (BIOS version and attributes,
//! those pending a reboot, the firmware inventory) and a button to read it now (`POST
//! /api/v1/machines/{id}/firmware`).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde_json::{json, Value};

use super::form::Form;
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, UiState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/machines/{id}/bmc", get(show).post(submit))
}

/// The form's fields as typed (or as stored), never the password.
fn fields(f: Option<&Form>, stored: &Value, found_in_band: Option<&str>) -> Value {
    let typed = |k: &str| f.and_then(|f| f.get(k)).map(String::from);
    let tls = &stored["tls"];
    json!({
        "address": typed("address").or_else(|| stored["address"].as_str().map(String::from))
            .or_else(|| found_in_band.map(String::from)).unwrap_or_default(),
        "protocol": typed("protocol").or_else(|| stored["protocol"].as_str().map(String::from))
            .unwrap_or_else(|| "redfish".into()),
        "username": typed("username").or_else(|| stored["username"].as_str().map(String::from)).unwrap_or_default(),
        "fingerprint": typed("fingerprint").or_else(|| tls["sha256"].as_str().map(String::from)).unwrap_or_default(),
        "insecure": f.map_or(tls["mode"] == "insecure", |f| f.get("insecure").is_some()),
        "system_id": typed("system_id").or_else(|| stored["system_id"].as_str().map(String::from)).unwrap_or_default(),
        "boot_mode": typed("boot_mode").or_else(|| stored["boot_mode"].as_str().map(String::from)).unwrap_or_default(),
        "boot_via": typed("boot_via").or_else(|| stored["boot_via"].as_str().map(String::from)).unwrap_or_else(|| "pxe".into()),
    })
}

async fn render(s: &UiState, session: &Session, key: &str, form: Option<&Form>, error: Option<String>) -> Response {
    let path = format!("/machines/{}", urlencode(key));
    let machine = forward::as_session(s, session, Method::GET, &path, None).await;
    if !machine.status.is_success() {
        return message(&s.views, machine.status, "BMC", &machine.message(), session);
    }
    let bmc = forward::as_session(s, session, Method::GET, &format!("{path}/bmc"), None).await;
    let stored = match bmc.status {
        StatusCode::NOT_FOUND => Value::Null,
        st if st.is_success() => bmc.body,
        _ => return message(&s.views, bmc.status, "BMC", &bmc.message(), session),
    };
    let in_band = machine.body["inventory"]["bmc"]["ip"].as_str().map(String::from);
    let firmware = match stored.is_null() {
        true => Value::Null,
        false => {
            let f = forward::as_session(s, session, Method::GET, &format!("{path}/firmware"), None).await;
            if f.status.is_success() {
                f.body
            } else {
                Value::Null
            }
        }
    };
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), m => V::from(Serde(&machine.body)),
        bmc => (!stored.is_null()).then(|| V::from(Serde(&stored))),
        firmware => (!firmware.is_null()).then(|| V::from(Serde(&firmware))),
        f => V::from(Serde(fields(form, &stored, in_band.as_deref()))), in_band, error,
    };
    let mut resp = s.views.page("bmc.html", ctx);
    *resp.status_mut() = status;
    resp
}

async fn show(State(s): State<UiState>, session: Session, Path(key): Path<String>) -> Response {
    render(&s, &session, &key, None, None).await
}

/// "Save" or "Remove" from the form, or "Read firmware now".
async fn submit(
    State(s): State<UiState>,
    session: Session,
    headers: HeaderMap,
    Path(key): Path<String>,
    body: axum::body::Body,
) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    let path = format!("/machines/{}/bmc", urlencode(&key));
    let remove = f.get("action") == Some("remove");
    if f.get("action") == Some("firmware") {
        let answer =
            forward::as_session(&s, &session, Method::POST, &format!("/machines/{}/firmware", urlencode(&key)), None)
                .await;
        if answer.status.is_success() {
            let to = format!("/ui/machines/{}/bmc#firmware", urlencode(&key));
            return Redirect::to(&to).into_response();
        }
        return render(&s, &session, &key, None, Some(format!("Firmware not read: {}", answer.message()))).await;
    }
    let answer = if remove {
        forward::as_session(&s, &session, Method::DELETE, &path, None).await
    } else {
        let mut body = json!({
            "address": f.get("address").unwrap_or("").trim(), "protocol": f.get("protocol").unwrap_or("redfish"),
            "username": f.get("username").unwrap_or(""), "insecure": f.get("insecure").is_some(),
        });
        // Each optional field only when given: an empty password keeps the stored one.
        for k in ["password", "fingerprint", "system_id", "boot_mode", "boot_via"] {
            if let Some(v) = f.get(k) {
                body[k] = json!(if k == "password" { v } else { v.trim() });
            }
        }
        forward::as_session(&s, &session, Method::PUT, &path, Some(body)).await
    };
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "BMC", &answer.message(), &session);
    }
    if answer.status.is_success() {
        let notice = if remove { "BMC removed." } else { "BMC saved; the password is sealed and never shown." };
        return Redirect::to(&format!("/ui/machines/{}?notice={}", urlencode(&key), urlencode(notice))).into_response();
    }
    let field = answer.body["field"].as_str().map(|f| format!(" (field {f})")).unwrap_or_default();
    let error = format!("Not saved{field}: {}", answer.message());
    render(&s, &session, &key, Some(&f), Some(error)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_form_is_filled_from_what_was_typed_then_the_record_then_the_agent() {
        let none = fields(None, &Value::Null, Some("10.1.2.3"));
        assert_eq!((none["address"].as_str(), none["protocol"].as_str()), (Some("10.1.2.3"), Some("redfish")));
        let stored = json!({"address": "10.9.9.9:8443", "protocol": "redfish", "username": "root",
            "tls": {"mode": "fingerprint", "sha256": "ab"}, "boot_mode": "uefi"});
        let shown = fields(None, &stored, Some("10.1.2.3"));
        assert_eq!(shown["address"], "10.9.9.9:8443", "the record wins over the agent's find");
        assert_eq!((shown["fingerprint"].as_str(), shown["boot_mode"].as_str()), (Some("ab"), Some("uefi")));
        assert_eq!(shown["insecure"], false);
        let typed = Form::read(axum::body::Body::from("address=bmc7&password=pw"))
            .await
            .unwrap_or_else(|_| panic!("a small form"));
        let refill = fields(Some(&typed), &stored, None);
        assert_eq!((refill["address"].as_str(), refill["username"].as_str()), (Some("bmc7"), Some("root")));
        assert!(refill.get("password").is_none(), "never the password");
    }
}
