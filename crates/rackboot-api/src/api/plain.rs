//! The plain-HTTP router: `/boot` for firmware and installers, `/tang` for Clevis, and
//! `/healthz`; the REST API,
//! the agent API and `/metrics` answer a refusal naming the HTTPS URL, before any token is read.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::api::{self, ApiError, ApiState};

/// The router plain HTTP serves; `https_base` is named in the refusal.
pub fn router(state: ApiState, https_base: String) -> Router {
    let router = Router::new()
        .nest("/boot", api::boot::routes(&state))
        .nest("/tang", api::tang::protocol())
        .route("/healthz", get(crate::assets::healthz))
        .fallback(move |req: Request| refuse(req, https_base.clone()));
    api::bounded(router, &state).with_state(state)
}

/// The boot listener's router (firmware's HTTPS boot): `/boot` and `/healthz`, nothing else.
pub fn boot_only(state: ApiState) -> Router {
    let router = Router::new()
        .nest("/boot", api::boot::routes(&state))
        .route("/healthz", get(crate::assets::healthz))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "the boot listener serves /boot only") });
    api::bounded(router, &state).with_state(state)
}

async fn refuse(req: Request, https_base: String) -> Response {
    let path = req.uri().path();
    let secure =
        ["/api/", "/agent/", "/metrics"].iter().any(|p| path.starts_with(p) || path == p.trim_end_matches('/'));
    if secure {
        // Whatever Authorization header came along is never looked at.
        return ApiError::new(
            StatusCode::FORBIDDEN,
            format!("plain HTTP serves only /boot and /healthz: use {https_base}{path}"),
        )
        .into_response();
    }
    ApiError::new(StatusCode::NOT_FOUND, format!("no such path over plain HTTP (the API is at {https_base}/api/v1)"))
        .into_response()
}
