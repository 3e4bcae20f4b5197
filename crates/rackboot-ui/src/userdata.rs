//! A machine's cloud-init user-data from the web UI: `/ui/machines/{id}/user-data` shows it to
//! an operator (it may hold secrets: a viewer is refused by the API's role table) with a form
//! to save or remove it, through `PUT`/`DELETE /api/v1/machines/{id}/user-data`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde_json::json;

use super::form::Form;
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::{forward, UiState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/machines/{id}/user-data", get(show).post(submit))
}

async fn render(s: &UiState, session: &Session, key: &str, typed: Option<&str>, error: Option<String>) -> Response {
    let path = format!("/machines/{}", urlencode(key));
    let machine = forward::as_session(s, session, Method::GET, &path, None).await;
    if !machine.status.is_success() {
        return message(&s.views, machine.status, "User-data", &machine.message(), session);
    }
    let stored = forward::as_session(s, session, Method::GET, &format!("{path}/user-data"), None).await;
    let (set, text) = match stored.status {
        StatusCode::NOT_FOUND => (false, String::new()),
        st if st.is_success() => (true, stored.body["text"].as_str().unwrap_or_default().to_string()),
        _ => return message(&s.views, stored.status, "User-data", &stored.message(), session),
    };
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), m => V::from(Serde(&machine.body)), set,
        text => typed.map(String::from).unwrap_or(text), error,
    };
    let mut resp = s.views.page("userdata.html", ctx);
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
    let path = format!("/machines/{}/user-data", urlencode(&key));
    let remove = f.get("action") == Some("remove");
    let answer = match remove {
        true => forward::as_session(&s, &session, Method::DELETE, &path, None).await,
        // Browsers send CRLF line ends; cloud-init reads either, the first line's check wants none.
        false => {
            let text = f.get("text").unwrap_or("").replace("\r\n", "\n");
            forward::as_session(&s, &session, Method::PUT, &path, Some(json!({"text": text}))).await
        }
    };
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "User-data", &answer.message(), &session);
    }
    if answer.status.is_success() {
        let notice =
            if remove { "User-data removed." } else { "User-data saved: the next install's cloud-init gets it." };
        return Redirect::to(&format!("/ui/machines/{}?notice={}", urlencode(&key), urlencode(notice))).into_response();
    }
    let error = format!("Not saved: {}", answer.message());
    render(&s, &session, &key, f.get("text"), Some(error)).await
}
