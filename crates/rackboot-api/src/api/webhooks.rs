//! `/api/v1/webhooks`: subscriptions to the event log, delivered as signed POSTs (an admin's,
//! reading too: a subscription says where events go). The secret is answered once, when the
//! subscription is made.

use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::cmdb::Caller;
use crate::webhooks::Webhooks;
use rackboot_model::webhooks::{NewWebhook, Webhook, WebhookPatch};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(show, change, remove))
}

/// Every subscription, with its delivery status.
#[derive(Serialize, ToSchema)]
pub struct WebhookList {
    pub webhooks: Vec<Webhook>,
}

/// A subscription just made, and its signing secret: shown this once.
#[derive(Serialize, ToSchema)]
pub struct CreatedWebhook {
    pub webhook: Webhook,
    /// Verify each delivery's `Rackboot-Signature` with it (docs/webhooks.md).
    pub secret: String,
}

/// A body that must be a JSON object (serde would also read a struct from an array).
fn object<T: serde::de::DeserializeOwned>(Json(v): Json<serde_json::Value>) -> Result<T, ApiError> {
    if !v.is_object() {
        return Err(ApiError::bad("the body must be a JSON object"));
    }
    serde_json::from_value(v).map_err(|e| ApiError::bad(format!("the body: {e}")))
}

fn service(s: &ApiState) -> Result<&Arc<Webhooks>, ApiError> {
    s.webhooks.as_ref().ok_or_else(|| ApiError::not_found("webhooks are not served here"))
}

/// Every subscription, with how far delivery has come.
#[utoipa::path(get, path = "/webhooks", tag = "webhooks",
    responses((status = 200, description = "Every subscription", body = WebhookList)))]
async fn list(State(s): State<ApiState>) -> Result<Json<WebhookList>, ApiError> {
    let webhooks = s.cmdb.webhooks().await?.into_iter().map(Webhook::shown).collect();
    Ok(Json(WebhookList { webhooks }))
}

/// Subscribes a receiver to the events that pass the filter, from the next one on.
#[utoipa::path(post, path = "/webhooks", tag = "webhooks", request_body = NewWebhook,
    responses((status = 201, description = "Subscribed; the secret is shown this once", body = CreatedWebhook),
        (status = 409, description = "As many subscriptions as webhooks.max_subscriptions exist", body = super::Problem, content_type = "application/problem+json")))]
async fn create(
    State(s): State<ApiState>,
    Extension(caller): Extension<Caller>,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<(StatusCode, Json<CreatedWebhook>), ApiError> {
    let new: NewWebhook = object(body?)?;
    let made = service(&s)?.create(new, caller.user).await?;
    // The host only: a query may carry a receiver's token.
    let host = made.webhook.url.split('?').next().unwrap_or_default().to_string();
    tracing::info!(webhook = made.webhook.id, url = %host, "webhook subscribed");
    Ok((StatusCode::CREATED, Json(CreatedWebhook { webhook: made.webhook.shown(), secret: made.secret })))
}

/// One subscription and its delivery status.
#[utoipa::path(get, path = "/webhooks/{id}", tag = "webhooks", params(("id" = u64, Path, description = "Subscription id")),
    responses((status = 200, description = "The subscription", body = Webhook)))]
async fn show(State(s): State<ApiState>, Path(id): Path<u64>) -> Result<Json<Webhook>, ApiError> {
    Ok(Json(s.cmdb.webhook(id).await?.shown()))
}

/// Changes a subscription: its URL, filter or TLS check, or enables it again (delivery goes on
/// after the last event delivered) or stops it.
#[utoipa::path(patch, path = "/webhooks/{id}", tag = "webhooks", params(("id" = u64, Path, description = "Subscription id")),
    request_body = WebhookPatch,
    responses((status = 200, description = "The changed subscription", body = Webhook)))]
async fn change(
    State(s): State<ApiState>,
    Path(id): Path<u64>,
    body: Result<Json<serde_json::Value>, JsonRejection>,
) -> Result<Json<Webhook>, ApiError> {
    let patch: WebhookPatch = object(body?)?;
    Ok(Json(service(&s)?.change(id, patch).await?.shown()))
}

/// Deletes a subscription; nothing more is delivered to it.
#[utoipa::path(delete, path = "/webhooks/{id}", tag = "webhooks", params(("id" = u64, Path, description = "Subscription id")),
    responses((status = 204, description = "Deleted")))]
async fn remove(State(s): State<ApiState>, Path(id): Path<u64>) -> Result<StatusCode, ApiError> {
    service(&s)?.delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}
