//! A machine's installed network from the web UI: `/ui/machines/{id}/network` shows the spec in
//! force (its own, its rack's, or DHCP everywhere), the devices and addresses it resolves to,
//! and for an operator a JSON spec to save or remove. Saving is `PUT
//! /api/v1/machines/{id}/network` (removing, `DELETE`), so the API's checks, role table and
//! audit decide; a refused save keeps what was typed and names the field.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde_json::Value;

use super::form::Form;
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, UiState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/machines/{id}/network", get(show).post(submit))
}

/// The spec as the textarea shows it: what was typed, else the machine's own spec, pretty.
fn spec_text(f: Option<&Form>, machine: &Value) -> String {
    match f.and_then(|f| f.get("spec")) {
        Some(typed) => typed.to_string(),
        None if machine["network"].is_object() => serde_json::to_string_pretty(&machine["network"]).unwrap_or_default(),
        None => String::new(),
    }
}

async fn render(s: &UiState, session: &Session, key: &str, form: Option<&Form>, error: Option<String>) -> Response {
    let path = format!("/machines/{}", urlencode(key));
    let machine = forward::as_session(s, session, Method::GET, &path, None).await;
    if !machine.status.is_success() {
        return message(&s.views, machine.status, "Network", &machine.message(), session);
    }
    let net = forward::as_session(s, session, Method::GET, &format!("{path}/network"), None).await;
    if !net.status.is_success() {
        return message(&s.views, net.status, "Network", &net.message(), session);
    }
    let networks = forward::as_session(s, session, Method::GET, "/networks", None).await;
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), m => V::from(Serde(&machine.body)), net => V::from(Serde(&net.body)),
        networks => V::from(Serde(&networks.body["networks"])), spec => spec_text(form, &machine.body), error,
    };
    let mut resp = s.views.page("network.html", ctx);
    *resp.status_mut() = status;
    resp
}

async fn show(State(s): State<UiState>, session: Session, Path(key): Path<String>) -> Response {
    render(&s, &session, &key, None, None).await
}

/// "Save" or "Remove" from the form.
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
    let path = format!("/machines/{}/network", urlencode(&key));
    let remove = f.get("action") == Some("remove");
    let answer = if remove {
        forward::as_session(&s, &session, Method::DELETE, &path, None).await
    } else {
        let spec: Value = match serde_json::from_str(f.get("spec").unwrap_or("").trim()) {
            Ok(v) => v,
            Err(e) => {
                return render(&s, &session, &key, Some(&f), Some(format!("Not saved: the spec is not JSON: {e}")))
                    .await
            }
        };
        forward::as_session(&s, &session, Method::PUT, &path, Some(spec)).await
    };
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Network", &answer.message(), &session);
    }
    if answer.status.is_success() {
        let notice = if remove {
            "Network spec removed: the rack's default (or DHCP) applies."
        } else {
            "Network spec saved: the next install writes it."
        };
        return Redirect::to(&format!("/ui/machines/{}?notice={}", urlencode(&key), urlencode(notice))).into_response();
    }
    let field = answer.body["field"].as_str().map(|f| format!(" (field {f})")).unwrap_or_default();
    let error = format!("Not saved{field}: {}", answer.message());
    render(&s, &session, &key, Some(&f), Some(error)).await
}
