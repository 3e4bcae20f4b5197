//! `/ui/webhooks`: every subscription and how its delivery goes (the place reached, the last
//! answer, failures and why it was stopped), with its secret never shown; an admin enables a
//! stopped one again or stops one here. Subscribing is done through the API or
//! `rackboot api POST /webhooks`, which answer the secret once.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde_json::json;

use rackboot_model::webhooks::{DeliveryStatus, Webhook, WebhookFilter};
use serde::Serialize;

use super::form::Form;
use super::session::{self, Session};
use super::view::message;
use super::{forward, UiState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/webhooks", get(list)).route("/ui/webhooks/{id}/enabled", post(set_enabled))
}

async fn list(State(s): State<UiState>, session: Session) -> Response {
    let answer = forward::as_session(&s, &session, Method::GET, "/webhooks", None).await;
    if !answer.status.is_success() {
        return message(&s.views, answer.status, "Webhooks", &answer.message(), &session);
    }
    // Typed again, so every status field is there (absent ones as none) for the template.
    let webhooks: Vec<Webhook> = match serde_json::from_value(answer.body["webhooks"].clone()) {
        Ok(w) => w,
        Err(e) => return message(&s.views, StatusCode::INTERNAL_SERVER_ERROR, "Webhooks", &e.to_string(), &session),
    };
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), webhooks => V::from(Serde(&webhooks.iter().map(Row::from).collect::<Vec<_>>())),
    };
    s.views.page("webhooks.html", ctx)
}

/// One subscription as the page shows it.
#[derive(Serialize)]
struct Row<'a> {
    id: u64,
    url: &'a str,
    tls: &'static str,
    filter: &'a WebhookFilter,
    enabled: bool,
    status: &'a DeliveryStatus,
}

impl<'a> From<&'a Webhook> for Row<'a> {
    fn from(w: &'a Webhook) -> Self {
        let tls = match w.tls {
            rackboot_model::webhooks::WebhookTls::System => "system roots",
            rackboot_model::webhooks::WebhookTls::Ca { .. } => "a pinned CA",
            rackboot_model::webhooks::WebhookTls::Fingerprint { .. } => "a pinned certificate",
        };
        Row { id: w.id, url: &w.url, tls, filter: &w.filter, enabled: w.enabled, status: &w.status }
    }
}

/// "Enable again" or "Stop" from the page: `PATCH /webhooks/{id}` with `enabled`.
async fn set_enabled(
    State(s): State<UiState>,
    session: Session,
    headers: HeaderMap,
    Path(id): Path<u64>,
    body: axum::body::Body,
) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    let enabled = match f.get("enabled") {
        Some("true") => true,
        Some("false") => false,
        _ => return message(&s.views, StatusCode::BAD_REQUEST, "Webhooks", "enabled must be true or false", &session),
    };
    let path = format!("/webhooks/{id}");
    let answer = forward::as_session(&s, &session, Method::PATCH, &path, Some(json!({"enabled": enabled}))).await;
    if !answer.status.is_success() {
        return message(&s.views, answer.status, "Webhooks", &answer.message(), &session);
    }
    Redirect::to("/ui/webhooks").into_response()
}
