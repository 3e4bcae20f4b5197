//! The Tang server encrypted file systems are bound to: `/api/v1/tang` (its keys and bindings,
//! and rotation, an admin's) and the protocol itself on plain HTTP under `/tang` (`GET /adv`,
//! `GET /adv/{thp}`, `POST /rec/{kid}`), which Clevis reaches without credentials: what it
//! answers reveals nothing without the disk's own header.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ApiError, ApiState};
use crate::tang::{Tang, TangError};
use rackboot_model::tang::{TangBinding, TangKey};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(keys)).routes(routes!(bindings)).routes(routes!(rotate))
}

/// The protocol's routes, for the plain-HTTP router.
pub fn protocol() -> Router<ApiState> {
    Router::new()
        .route("/adv", get(adv))
        .route("/adv/", get(adv))
        .route("/adv/{thp}", get(adv_by))
        .route("/rec/{kid}", post(rec))
}

fn service(s: &ApiState) -> Result<&Arc<Tang>, ApiError> {
    s.tang.as_ref().ok_or_else(|| ApiError::not_found("no Tang server here"))
}

impl From<TangError> for ApiError {
    fn from(e: TangError) -> ApiError {
        match e {
            TangError::BadRequest(e) => ApiError::bad(e.0),
            TangError::UnknownKey(_) => ApiError::not_found(e.to_string()),
            TangError::Cmdb(e) => e.into(),
            TangError::Keys(_) | TangError::Busy => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
    }
}

fn jose(content_type: &'static str, body: String) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn adv(State(s): State<ApiState>) -> Result<Response, ApiError> {
    let (_, adv) = service(&s)?.advertised().await?;
    Ok(jose("application/jose+json", adv))
}

async fn adv_by(State(s): State<ApiState>, Path(thp): Path<String>) -> Result<Response, ApiError> {
    Ok(jose("application/jose+json", service(&s)?.advertisement_by(&thp).await?))
}

async fn rec(State(s): State<ApiState>, Path(kid): Path<String>, body: Bytes) -> Result<Response, ApiError> {
    let tang = service(&s)?;
    let answer = tang.recover(&kid, &body).await.inspect_err(|e| {
        s.metrics.tang_recoveries(false);
        tracing::debug!(error = %e, "tang recovery refused");
    })?;
    s.metrics.tang_recoveries(true);
    Ok(jose("application/jwk+json", answer.to_string()))
}

/// A Tang key pair (public halves) and how many machines are bound to it.
#[derive(Serialize, ToSchema)]
pub struct ShownTangKey {
    #[serde(flatten)]
    pub key: TangKey,
    /// The signing key's thumbprint (SHA-256): what `clevis encrypt tang` takes as `thp`.
    pub signing_thumbprint: String,
    pub bound_machines: usize,
}

#[derive(Serialize, ToSchema)]
pub struct TangKeyList {
    /// The Tang URL bound volumes reach.
    pub url: String,
    pub keys: Vec<ShownTangKey>,
}

/// The Tang keys, the advertised one last, with the machines bound to each.
#[utoipa::path(get, path = "/tang/keys", tag = "tang",
    responses((status = 200, description = "The keys (public halves)", body = TangKeyList)))]
async fn keys(State(s): State<ApiState>) -> Result<Json<TangKeyList>, ApiError> {
    let tang = service(&s)?;
    let shown = |(key, bound_machines): (TangKey, usize)| {
        let [signing_thumbprint, _] = crate::tang::jose::thumbprints(&key.signing);
        ShownTangKey { key, signing_thumbprint, bound_machines }
    };
    let keys = tang.list().await?.into_iter().map(shown).collect();
    Ok(Json(TangKeyList { url: tang.url.clone(), keys }))
}

#[derive(Serialize, ToSchema)]
pub struct TangBindingList {
    pub bindings: Vec<TangBinding>,
}

/// Which machines' encrypted volumes are bound to which key, and re-binds under way.
#[utoipa::path(get, path = "/tang/bindings", tag = "tang",
    responses((status = 200, description = "Every binding", body = TangBindingList)))]
async fn bindings(State(s): State<ApiState>) -> Result<Json<TangBindingList>, ApiError> {
    Ok(Json(TangBindingList { bindings: s.cmdb.tang_bindings().await? }))
}

#[derive(Serialize, ToSchema)]
pub struct TangRotated {
    pub key: TangKey,
    /// The re-bind job queued on each bound machine.
    pub jobs: Vec<TangRebindJob>,
}

#[derive(Serialize, ToSchema)]
pub struct TangRebindJob {
    pub machine: u64,
    pub job: u64,
}

/// Makes a new key pair the advertised one and queues a re-bind job on every machine bound to
/// an older one; each older key is deleted once no machine is bound to it.
#[utoipa::path(post, path = "/tang/rotate", tag = "tang",
    responses((status = 201, description = "TangRotated", body = TangRotated)))]
async fn rotate(State(s): State<ApiState>) -> Result<(StatusCode, Json<TangRotated>), ApiError> {
    let (key, queued) = service(&s)?.rotate(&s.hub.cfg).await?;
    for (machine, _) in &queued {
        s.hub.wake(*machine);
    }
    let jobs = queued.into_iter().map(|(machine, job)| TangRebindJob { machine, job }).collect();
    Ok((StatusCode::CREATED, Json(TangRotated { key, jobs })))
}
