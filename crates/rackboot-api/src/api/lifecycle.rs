//! `/api/v1/machines/{id}/{release,rescue,return,retire,unretire}`: day two (see
//! `provision::lifecycle`). Operator role, audited, like every change; a release that erases
//! is never retried by itself.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use rackboot_agent::wire::EraseMode;
use serde::{Deserialize, Serialize};
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
        .routes(routes!(commission))
        .routes(routes!(tests))
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
    #[schema(value_type = String, pattern = "^(none|quick|zero|secure)$")]
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

/// Which tests a machine runs.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommissionRequest {
    /// A test profile of the config (`[[provision.test_profiles]]`).
    #[schema(pattern = r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")]
    pub profile: String,
}

/// One commissioning run of a machine and its results.
#[derive(Debug, Serialize, ToSchema)]
pub struct TestRun {
    pub task: u64,
    pub run: u64,
    pub profile: String,
    #[schema(value_type = String)]
    pub state: crate::provision::RunState,
    pub created_at_ms: u64,
    pub finished_at_ms: Option<u64>,
    /// Why it failed (the first failed tests named).
    pub error: Option<String>,
    pub tests: Vec<rackboot_model::commission::TestResult>,
}

/// A machine's commissioning runs, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct TestRuns {
    pub machine_id: u64,
    pub runs: Vec<TestRun>,
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

/// Runs a test profile's tests on a machine in BootOS (CPU, memory, disks, SMART): it is `ready`
/// after, or `failed` with the failed test and its figure named. The disk write test overwrites
/// disks, so an installed machine is released first.
#[utoipa::path(post, path = "/machines/{id}/commission", tag = "machines", request_body = CommissionRequest,
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 201, description = "The commissioning's task (one run)", body = Task),
        (status = 404, description = "No such machine, or no such test profile", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The machine is installed or busy", body = super::Problem, content_type = "application/problem+json")))]
async fn commission(
    State(s): State<ApiState>,
    Path(key): Path<String>,
    body: Result<Json<CommissionRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<Task>), ApiError> {
    let Json(req) = body?;
    let engine = engine(&s)?;
    let Some(profile) = engine.cfg.test_profiles.get(&req.profile) else {
        let known: Vec<&String> = engine.cfg.test_profiles.keys().collect();
        return Err(ApiError::not_found(format!("no test profile {:?}; known: {known:?}", req.profile)));
    };
    let m = resolve(&s, &key).await?;
    let task = lifecycle::commission(&s.cmdb, &m, profile).await?;
    engine.wake();
    Ok((StatusCode::CREATED, Json(task)))
}

/// A machine's commissioning runs and their results (figures, floors, pass or fail), newest
/// first.
#[utoipa::path(get, path = "/machines/{id}/tests", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "Its commissioning runs", body = TestRuns)))]
async fn tests(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<TestRuns>, ApiError> {
    let m = resolve(&s, &key).await?;
    let runs = lifecycle::test_runs(&s.cmdb, m.id).await?.into_iter().map(|(profile, r)| TestRun {
        task: r.task_id,
        run: r.id,
        profile,
        state: r.state,
        created_at_ms: r.created_at_ms,
        finished_at_ms: r.finished_at_ms,
        error: r.error,
        tests: r.tests,
    });
    Ok(Json(TestRuns { machine_id: m.id, runs: runs.collect() }))
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
