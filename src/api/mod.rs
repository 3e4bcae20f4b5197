//! HTTP front end: the REST API under `/api/v1` (bearer token), `/healthz` and `/metrics`.
//! Handlers are thin: they parse, call the CMDB, and map its errors to status codes.

pub mod agent;
pub mod boot;
mod jobs;
mod machines;
pub mod profiles;
mod tasks;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::cmdb::{Cmdb, CmdbError};
use crate::metrics::{HttpLabel, Metrics};

/// The OpenAPI document served at `/api/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Shared state of every handler.
#[derive(Clone)]
pub struct ApiState {
    pub cmdb: Cmdb,
    pub metrics: Metrics,
    /// The admin bearer token.
    pub token: Arc<str>,
    /// Boot endpoints (`/boot`); `None` serves none.
    pub boot: boot::SharedBoot,
    /// The agent controller (`/agent/v1`, `/api/v1/jobs`).
    pub hub: Arc<crate::controller::Hub>,
    /// The provisioning engine (`/api/v1/tasks`); `None`: provisioning is off.
    pub engine: Option<Arc<crate::provision::engine::Engine>>,
}

/// Builds the whole HTTP router.
pub fn router(state: ApiState) -> Router {
    let api = machines::routes()
        .merge(profiles::routes())
        .merge(jobs::routes())
        .merge(tasks::routes())
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token))
        .route("/openapi.json", get(|| async { ([(header::CONTENT_TYPE, "application/json")], OPENAPI) }));
    Router::new()
        .nest("/api/v1", api)
        .nest("/boot", boot::routes(&state))
        .nest("/agent/v1", agent::routes())
        .route("/healthz", get(crate::assets::healthz))
        .route("/metrics", get(metrics))
        .layer(middleware::from_fn_with_state(state.clone(), count_requests))
        .with_state(state)
}

async fn metrics(State(s): State<ApiState>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], s.metrics.render())
}

async fn count_requests(State(s): State<ApiState>, req: Request, next: Next) -> Response {
    let method = req.method().to_string();
    let resp = next.run(req).await;
    s.metrics.http_requests.get_or_create(&HttpLabel { method, status: resp.status().as_u16() }).inc();
    resp
}

async fn require_token(State(s): State<ApiState>, req: Request, next: Next) -> Response {
    let given =
        req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    match given {
        Some(t) if constant_time_eq(t.as_bytes(), s.token.as_bytes()) => next.run(req).await,
        _ => ApiError(StatusCode::UNAUTHORIZED, "missing or wrong bearer token".into()).into_response(),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An error answered as `{"error": "..."}` with a status code.
#[derive(Debug)]
pub struct ApiError(pub StatusCode, pub String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<CmdbError> for ApiError {
    fn from(e: CmdbError) -> Self {
        let code = match &e {
            CmdbError::NotFound(_) => StatusCode::NOT_FOUND,
            CmdbError::Conflict(_) => StatusCode::CONFLICT,
            CmdbError::Invalid(_) => StatusCode::BAD_REQUEST,
            CmdbError::Forbidden(_) => StatusCode::FORBIDDEN,
            CmdbError::Storage(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(code, e.to_string())
    }
}
