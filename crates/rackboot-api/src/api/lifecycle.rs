//! `/api/v1/machines/{id}/{release,rescue,return,retire,unretire}`: day two (see
//! `provision::lifecycle`). Operator role, audited, like every change; a release that erases
//! is never retried by itself.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use rackboot_agent::wire::EraseMode;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::cmdb::Machine;
use crate::provision::{lifecycle, Run, Task};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(release))
        .routes(routes!(rescue))
        .routes(routes!(give_back))
        .routes(routes!(retire))
        .routes(routes!(unretire))
}

/// How a machine is released.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    /// `none`, `quick` (partition tables and signatures), `zero` (every byte) or `secure` (the
    /// device's own erase; refused, with nothing written, where a disk cannot do it). No default:
    /// the caller says what happens to the data.
    #[schema(value_type = String)]
    pub erase: EraseMode,
    /// Keep the machine's address reservation (default: dropped).
    #[serde(default)]
    pub keep_reservation: bool,
}

/// How a machine is rescued.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RescueRequest {
    /// Mount every file system on its disks read-only under `/mnt/rescue/<device>`.
    #[serde(default)]
    pub mount: bool,
}

fn engine(s: &ApiState) -> Result<&std::sync::Arc<crate::provision::engine::Engine>, ApiError> {
    s.engine.as_ref().ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "provisioning is not running"))
}

/// Releases a machine: it boots BootOS (through its installed agent or its BMC), its disks are
/// erased as asked, with progress on its timeline, and it goes back to `ready`. The installed
/// system's agent credential is superseded by BootOS's enrollment; the reservation is dropped
/// unless kept. A machine in rescue is erased from there.
#[utoipa::path(post, path = "/machines/{id}/release", tag = "machines", request_body = ReleaseRequest,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 201, description = "The release's task (one run)", body = Task),
        (status = 409, description = "The machine is busy (an install under way) or retired", body = super::Problem, content_type = "application/problem+json")))]
async fn release(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<ReleaseRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let Json(req) = body?;
    let engine = engine(&s)?;
    let m = resolve(&s, &key).await?;
    let task = lifecycle::release(&s.cmdb, &m, req.erase, req.keep_reservation).await?;
    engine.wake();
    Ok((StatusCode::CREATED, Json(task)))
}

/// Boots an installed (or failed) machine into BootOS without touching its disks and holds it
/// there: jobs reach it as on any BootOS machine. `POST .../return` boots its disk again.
#[utoipa::path(post, path = "/machines/{id}/rescue", tag = "machines", request_body = RescueRequest,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 201, description = "The rescue's task (one run)", body = Task),
        (status = 409, description = "The machine is not installed or failed", body = super::Problem, content_type = "application/problem+json")))]
async fn rescue(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<RescueRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let Json(req) = body?;
    let engine = engine(&s)?;
    let m = resolve(&s, &key).await?;
    let task = lifecycle::rescue(&s.cmdb, &m, req.mount).await?;
    engine.wake();
    Ok((StatusCode::CREATED, Json(task)))
}

/// Returns a rescued machine to its disk: it reboots into its installed system, and its
/// rescue run ends when that system's agent checks in.
#[utoipa::path(post, path = "/machines/{id}/return", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The rescue's run, now rebooting the machine", body = Run),
        (status = 409, description = "The machine is not rescued", body = super::Problem, content_type = "application/problem+json")))]
async fn give_back(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Run>, ApiError> {
    let engine = engine(&s)?;
    let m = resolve(&s, &key).await?;
    let run = lifecycle::give_back(&s.cmdb, &m).await?;
    engine.wake();
    Ok(Json(run))
}

/// Takes a ready, failed or discovered machine out of every pool: no task selects it and no
/// `next` run binds it until it is brought back.
#[utoipa::path(post, path = "/machines/{id}/retire", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine, retired", body = Machine),
        (status = 409, description = "The machine is installed or busy: release it first", body = super::Problem, content_type = "application/problem+json")))]
async fn retire(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Machine>, ApiError> {
    let m = resolve(&s, &key).await?;
    Ok(Json(lifecycle::retire(&s.cmdb, &m).await?.shown()))
}

/// Brings a retired machine back to the pool (`ready`).
#[utoipa::path(post, path = "/machines/{id}/unretire", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The machine, ready", body = Machine),
        (status = 409, description = "The machine is not retired", body = super::Problem, content_type = "application/problem+json")))]
async fn unretire(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Machine>, ApiError> {
    let m = resolve(&s, &key).await?;
    Ok(Json(lifecycle::unretire(&s.cmdb, &m).await?.shown()))
}
