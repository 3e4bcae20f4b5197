//! `/api/v1/jobs`: operators submit jobs to one machine or every machine with a tag, list and
//! read them, follow their output live (server-sent events), and cancel them. Also machine
//! approval and the agent's record under `/api/v1/machines/{id}`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rackboot_agent::wire::Action;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::machines::resolve;
use super::{page, ApiError, ApiState};
use crate::cmdb::{AgentView, JobFilter, StoredChunk};
use crate::controller::JobEvent;
use crate::jobs::{Job, JobState, NewJob};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, submit))
        .routes(routes!(show))
        .routes(routes!(output))
        .routes(routes!(cancel))
        .routes(routes!(approve))
        .routes(routes!(agent))
}

/// A job submission: exactly one of `machine` (id or MAC) and `tag`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Submit {
    /// A machine id or MAC.
    #[serde(default)]
    machine: Option<String>,
    /// Every machine with this tag.
    #[serde(default)]
    tag: Option<String>,
    action: Action,
    /// Seconds the job may run (default `[agent] job_timeout_secs`).
    #[serde(default)]
    #[schema(minimum = 1, maximum = 86400)]
    timeout_secs: Option<u64>,
    /// Deliveries before the job fails (1-100; default `[agent] max_attempts`).
    #[serde(default)]
    max_attempts: Option<u32>,
}

/// The jobs a submission created (one per machine).
#[derive(Serialize, ToSchema)]
pub struct Submitted {
    pub jobs: Vec<Job>,
}

/// Submits a job to one machine, or to every machine with a tag; wakes their agents at once.
#[utoipa::path(post, path = "/jobs", tag = "jobs", request_body = Submit,
    responses((status = 201, description = "Queued", body = Submitted),
        (status = 404, description = "No such machine, or no machine has the tag", body = super::Problem, content_type = "application/problem+json")))]
async fn submit(
    State(s): State<ApiState>,
    body: Result<Json<Submit>, JsonRejection>,
) -> Result<(StatusCode, Json<Submitted>), ApiError> {
    let Json(req) = body?;
    let machines = match (&req.machine, &req.tag) {
        (Some(m), None) => vec![resolve(&s, m).await?.id],
        (None, Some(t)) => {
            let mut ids = s.hub.cmdb.machines_with_tag(t.clone()).await?;
            // A pool-scoped caller's tag reaches their pools' machines (where they operate) only.
            if let Some(pools) = super::scope::pools_for_call() {
                ids.retain(|id| s.cmdb.machine_pool(*id).is_some_and(|p| pools.contains(&p)));
            }
            if ids.is_empty() {
                return Err(ApiError::not_found(format!("no machine has tag {t:?}")));
            }
            for p in ids.iter().filter_map(|id| s.cmdb.machine_pool(*id)) {
                super::scope::touched(&p);
            }
            ids
        }
        _ => return Err(ApiError::field("machine", "give exactly one of \"machine\" (id or MAC) and \"tag\"")),
    };
    if matches!(req.action, Action::Erase { .. }) {
        return Err(ApiError::field("action", "disks are erased by a release: POST /machines/{id}/release"));
    }
    if matches!(req.action, Action::BmcAccount { .. }) {
        return Err(ApiError::field(
            "action",
            "the in-band BMC account is the appliance's (bmc.inband_username): POST /machines/{id}/bmc/inband",
        ));
    }
    if let Action::Script { interpreter, body, .. } = &req.action {
        if interpreter.trim().is_empty() || body.is_empty() {
            return Err(ApiError::field("action", "a script needs an interpreter and a body"));
        }
    }
    // A plugin runs only as stored: its version must be stored and enabled, the hash its own,
    // the parameters valid; what it runs and for how long come from its manifest.
    let action = match req.action {
        Action::Plugin { name, version, sha256, params, check_only, .. } => {
            let r = crate::plugins::usage::PluginRef { name, version: Some(version), params };
            let resolved =
                crate::plugins::usage::resolve(&s.cmdb, &r).await.map_err(|e| ApiError::field("action", e))?;
            if resolved.version.sha256 != sha256 {
                return Err(ApiError::field(
                    "action",
                    format!("sha256 {sha256} is not that of {} {}", r.name, resolved.version.version),
                ));
            }
            crate::plugins::usage::action(&resolved, &r.params, check_only)
        }
        other => other,
    };
    let timeout_secs = req.timeout_secs.unwrap_or(s.hub.cfg.job_timeout_secs);
    if !(1..=crate::jobs::MAX_TIMEOUT_SECS).contains(&timeout_secs) {
        return Err(ApiError::field(
            "timeout_secs",
            format!("timeout_secs must be 1..={}", crate::jobs::MAX_TIMEOUT_SECS),
        ));
    }
    let max_attempts = req.max_attempts.unwrap_or(s.hub.cfg.max_attempts).clamp(1, 100);
    let jobs = s.hub.cmdb.submit_jobs(machines, NewJob { action, timeout_secs, max_attempts }).await?;
    for j in &jobs {
        s.hub.wake(j.machine_id);
    }
    Ok((StatusCode::CREATED, Json(Submitted { jobs })))
}

/// Lists jobs, newest first, filtered by machine and state.
#[utoipa::path(get, path = "/jobs", tag = "jobs", params(JobQuery),
    responses((status = 200, description = "A page of jobs", body = JobList)))]
async fn list(
    State(s): State<ApiState>,
    q: Result<Query<JobQuery>, QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    let Query(q) = q?;
    let machine = match &q.machine {
        Some(m) => Some(resolve(&s, m).await?.id),
        None => None,
    };
    let before = page::key("jobs", q.cursor.as_deref())?;
    let limit = Some(page::limit(q.limit, 100)?);
    let pools = super::scope::pools_for_call();
    let (jobs, next) = s.hub.cmdb.jobs(JobFilter { machine, state: q.state, before, limit, pools }).await?;
    Ok(Json(JobList { jobs, next_cursor: next.map(|id| page::cursor("jobs", id)) }))
}

/// Filters and page of the job list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct JobQuery {
    /// A machine id or MAC.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})?$")]
    machine: Option<String>,
    state: Option<JobState>,
    /// Page size (default 100).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(jobs\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A page of jobs, newest first.
#[derive(Serialize, ToSchema)]
pub struct JobList {
    pub jobs: Vec<Job>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One job.
#[utoipa::path(get, path = "/jobs/{id}", tag = "jobs", params(("id" = u64, Path, description = "Job id")),
    responses((status = 200, description = "The job", body = Job)))]
async fn show(State(s): State<ApiState>, Path(id): Path<u64>) -> Result<Json<Job>, ApiError> {
    Ok(Json(visible(&s, id).await?))
}

/// Job `id`, if the caller may reach it: a pool-scoped caller, only a job of their pools'
/// machines (another's answers 404 as a missing one).
async fn visible(s: &ApiState, id: u64) -> Result<Job, ApiError> {
    let job = s.hub.cmdb.job(id).await?;
    super::scope::admit(s.cmdb.machine_pool(job.machine_id).as_deref(), &format!("job {id}"))?;
    Ok(job)
}

/// How to read a job's output.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OutputQuery {
    /// Stream it as server-sent events until the job ends.
    #[serde(default)]
    follow: bool,
}

/// A job's stored output.
#[derive(Serialize, ToSchema)]
pub struct JobOutput {
    pub job: Job,
    /// The text of the latest attempt, stdout and stderr interleaved as they arrived.
    pub text: String,
    /// Every stored chunk of every attempt.
    pub chunks: Vec<StoredChunk>,
}

/// The job's output: JSON (every chunk, and the text of the latest attempt), or with
/// `?follow=true` a server-sent event stream: `output` events as chunks arrive (those stored
/// already first), then one `done` event with the finished job.
#[utoipa::path(get, path = "/jobs/{id}/output", tag = "jobs",
    params(("id" = u64, Path, description = "Job id"), OutputQuery),
    responses((status = 200, description = "The output; with follow=true an event stream of `output` events (a chunk each) and one `done` event (the job)",
        content((JobOutput = "application/json"), (super::SseFrame = "text/event-stream"))),
        (status = 503, description = "Too many streams are open", body = super::Problem, content_type = "application/problem+json")))]
async fn output(
    State(s): State<ApiState>,
    Path(id): Path<u64>,
    headers: HeaderMap,
    q: Result<Query<OutputQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q?;
    visible(&s, id).await?;
    if !q.follow {
        let job = s.hub.cmdb.job(id).await?;
        let stored = s.hub.cmdb.output(id).await?;
        let text: String = stored.iter().filter(|c| c.attempt == job.attempt).map(|c| c.data.as_str()).collect();
        return Ok(Json(JobOutput { job, text, chunks: stored }).into_response());
    }
    // Output streams count against the same cap as event streams.
    let permit = s.streams.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, format!("{} streams are open already", super::MAX_STREAMS))
    })?;
    // Subscribe before reading what is stored, so nothing falls in between.
    let mut rx = s.hub.subscribe(id);
    let loaded = async { Ok::<_, crate::cmdb::CmdbError>((s.hub.cmdb.job(id).await?, s.hub.cmdb.output(id).await?)) };
    let (job, stored) = match loaded.await {
        Ok(v) => v,
        Err(e) => {
            drop(rx);
            s.hub.release(id);
            return Err(e.into());
        }
    };
    let (tx, mut out) = tokio::sync::mpsc::channel::<Event>(64);
    let hub = s.hub.clone();
    let refused = super::auth::refused(&s, &headers);
    tokio::spawn(async move {
        let _permit = permit;
        let mut seen: std::collections::HashSet<(u32, u32)> = std::collections::HashSet::new();
        let follow = async {
            for c in stored {
                seen.insert((c.attempt, c.seq));
                if tx.send(chunk_event(&c)).await.is_err() {
                    return;
                }
            }
            if job.state.is_terminal() {
                let _ = tx.send(done_event(&job)).await;
                return;
            }
            loop {
                let ev = tokio::select! {
                    ev = rx.recv() => ev,
                    // The client went away, or the appliance is stopping.
                    _ = tx.closed() => return,
                    _ = hub.shutdown.cancelled() => return,
                };
                match ev {
                    Ok(JobEvent::Output(c)) => {
                        if seen.insert((c.attempt, c.seq)) && tx.send(chunk_event(&c)).await.is_err() {
                            return;
                        }
                    }
                    Ok(JobEvent::Done(j)) => {
                        let _ = tx.send(done_event(&j)).await;
                        return;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        let _ = tx.send(Event::default().event("lagged").data(n.to_string())).await;
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        };
        // Or until the token that asked stops authenticating.
        tokio::select! {
            () = follow => {}
            () = refused => {}
        }
        drop(rx);
        hub.release(id);
    });
    let stream = futures_util::stream::poll_fn(move |cx| out.poll_recv(cx).map(|e| e.map(Ok::<_, Infallible>)));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))).into_response())
}

fn chunk_event(c: &StoredChunk) -> Event {
    Event::default().event("output").data(json!(c).to_string())
}

fn done_event(j: &crate::jobs::Job) -> Event {
    Event::default().event("done").data(json!(j).to_string())
}

/// Cancels a job; a running agent hears it with its next heartbeat and kills the script.
#[utoipa::path(post, path = "/jobs/{id}/cancel", tag = "jobs", params(("id" = u64, Path, description = "Job id")),
    responses((status = 200, description = "The cancelled job", body = Job),
        (status = 409, description = "The job has finished already", body = super::Problem, content_type = "application/problem+json")))]
async fn cancel(State(s): State<ApiState>, Path(id): Path<u64>) -> Result<Json<Job>, ApiError> {
    visible(&s, id).await?;
    let job = s.hub.cmdb.cancel_job(id).await?;
    s.hub.publish(id, JobEvent::Done(Box::new(job.clone())));
    Ok(Json(job))
}

/// Approves a machine's enrolled agent (with `[agent] enroll = "approve"`).
#[utoipa::path(post, path = "/machines/{id}/approve", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The approved agent", body = AgentView)))]
async fn approve(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<AgentView>, ApiError> {
    let m = resolve(&s, &key).await?;
    let rec = s.hub.cmdb.approve_agent(m.id).await?;
    s.hub.forget(m.id);
    Ok(Json(rec.view()))
}

/// The machine's agent: mode, approval, version, last stats.
#[utoipa::path(get, path = "/machines/{id}/agent", tag = "machines",
    params(("id" = String, Path, description = "Machine id or one of its MACs", pattern = r"^([0-9]{1,19}|[:-]*([0-9A-Fa-f][:-]*){12})$")),
    responses((status = 200, description = "The agent", body = AgentView)))]
async fn agent(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<AgentView>, ApiError> {
    let m = resolve(&s, &key).await?;
    match s.hub.cmdb.agent(m.id).await? {
        Some(rec) => Ok(Json(rec.view())),
        None => Err(ApiError::not_found(format!("no agent has enrolled for machine {}", m.id))),
    }
}
