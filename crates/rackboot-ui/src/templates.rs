//! Boot templates: `/ui/templates` lists them; `/ui/templates/{name}` shows one's text and, for
//! an admin, a form to edit it. "Preview" renders the text for a MAC typed in (as that machine's
//! boot would) and saves nothing; "Save" and "Reset to default" are `PUT`/`DELETE
//! /api/v1/templates/{name}`, so the API's checks, role table and audit decide. A refused save
//! keeps what was typed and says why (with the template's line).

use axum::extract::{Path, Query, State};
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
    Router::new().route("/ui/templates", get(list)).route("/ui/templates/{name}", get(show).post(submit))
}

/// What the edit form shows besides the API's view of the template.
#[derive(Default)]
struct Page {
    /// The text in the textarea (what was typed, after a refused save or a preview).
    text: Option<String>,
    mac: String,
    preview: Option<Value>,
    error: Option<String>,
    notice: Option<&'static str>,
}

async fn render(s: &UiState, session: &Session, name: Option<&str>, page: Page, status: StatusCode) -> Response {
    let list = forward::as_session(s, session, Method::GET, "/templates", None).await;
    if !list.status.is_success() {
        return message(&s.views, list.status, "Boot templates", &list.message(), session);
    }
    let current = match name {
        Some(n) => {
            let one = forward::as_session(s, session, Method::GET, &format!("/templates/{}", urlencode(n)), None).await;
            if !one.status.is_success() {
                return message(&s.views, one.status, "Boot template", &one.message(), session);
            }
            Some(one.body)
        }
        None => None,
    };
    let text = page.text.or_else(|| current.as_ref().and_then(|c| c["text"].as_str().map(String::from)));
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        admin => session.caller.role == rackboot_control::auth::Role::Admin,
        templates => V::from(Serde(&list.body["templates"])),
        t => current.map(|c| V::from(Serde(&c))), text => text,
        mac => page.mac, preview => page.preview.map(|p| V::from(Serde(&p))),
        error => page.error, notice => page.notice,
    };
    let mut resp = s.views.page("templates.html", ctx);
    *resp.status_mut() = status;
    resp
}

async fn list(State(s): State<UiState>, session: Session) -> Response {
    render(&s, &session, None, Page::default(), StatusCode::OK).await
}

async fn show(
    State(s): State<UiState>,
    session: Session,
    Path(name): Path<String>,
    q: Query<std::collections::HashMap<String, String>>,
) -> Response {
    let notice = match q.get("done").map(String::as_str) {
        Some("saved") => Some("Saved: the next boot uses this text."),
        Some("reset") => Some("Back to the default."),
        _ => None,
    };
    render(&s, &session, Some(&name), Page { notice, ..Page::default() }, StatusCode::OK).await
}

/// "Preview", "Save" or "Reset to default" from the form.
async fn submit(
    State(s): State<UiState>,
    session: Session,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: axum::body::Body,
) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    // Browsers send a textarea's line ends as CRLF; the scripts are Unix text.
    let text = f.get("text").unwrap_or("").replace("\r\n", "\n");
    let mac = f.get("mac").unwrap_or("").trim().to_string();
    let path = format!("/templates/{}", urlencode(&name));
    let (method, path, body) = match f.get("action") {
        Some("preview") => (Method::POST, format!("{path}/preview"), Some(json!({"text": text, "mac": mac}))),
        Some("reset") => (Method::DELETE, path, None),
        _ => (Method::PUT, path, Some(json!({"text": text}))),
    };
    let action = f.get("action").unwrap_or("save").to_string();
    let answer = forward::as_session(&s, &session, method, &path, body).await;
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Boot templates", &answer.message(), &session);
    }
    let page = Page { text: Some(text), mac, ..Page::default() };
    match (answer.status.is_success(), action.as_str()) {
        (true, "preview") => {
            render(&s, &session, Some(&name), Page { preview: Some(answer.body), ..page }, StatusCode::OK).await
        }
        (true, done) => {
            let done = if done == "reset" { "reset" } else { "saved" };
            Redirect::to(&format!("/ui/templates/{}?done={done}", urlencode(&name))).into_response()
        }
        (false, what) => {
            let error = Some(format!("The {what} failed: {}", answer.message()));
            render(&s, &session, Some(&name), Page { error, ..page }, StatusCode::BAD_REQUEST).await
        }
    }
}
