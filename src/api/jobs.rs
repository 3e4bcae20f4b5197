//! `/api/v1/jobs`: operators submit jobs to one machine or every machine with a tag, list and
//! read them, follow their output live (server-sent events), and cancel them. Also machine
//! approval and the agent's record under `/api/v1/machines/{id}`.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rackboot_agent::wire::Action;
use serde::Deserialize;
use serde_json::{json, Value};

use super::machines::resolve;
use super::{ApiError, ApiState};
use crate::cmdb::{JobFilter, StoredChunk};
use crate::controller::JobEvent;
use crate::jobs::NewJob;

pub fn routes() -> Router<ApiState> {
    Router::new()
        .route("/jobs", get(list).post(submit))
        .route("/jobs/{id}", get(show))
        .route("/jobs/{id}/output", get(output))
        .route("/jobs/{id}/cancel", post(cancel))
        .route("/machines/{id}/approve", post(approve))
        .route("/machines/{id}/agent", get(agent))
}

/// A job submission: exactly one of `machine` (id or MAC) and `tag`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Submit {
    #[serde(default)]
    machine: Option<String>,
    #[serde(default)]
    tag: Option<String>,
    action: Action,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    max_attempts: Option<u32>,
}

async fn submit(
    State(s): State<ApiState>,
    body: Result<Json<Submit>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let Json(req) = body.map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))?;
    let bad = |m: &str| ApiError(StatusCode::BAD_REQUEST, m.to_string());
    let machines = match (&req.machine, &req.tag) {
        (Some(m), None) => vec![resolve(&s, m).await?.id],
        (None, Some(t)) => {
            let ids = s.hub.cmdb.machines_with_tag(t.clone()).await?;
            if ids.is_empty() {
                return Err(ApiError(StatusCode::NOT_FOUND, format!("no machine has tag {t:?}")));
            }
            ids
        }
        _ => return Err(bad("give exactly one of \"machine\" (id or MAC) and \"tag\"")),
    };
    if let Action::Script { interpreter, body, .. } = &req.action {
        if interpreter.trim().is_empty() || body.is_empty() {
            return Err(bad("a script needs an interpreter and a body"));
        }
    }
    let timeout_secs = req.timeout_secs.unwrap_or(s.hub.cfg.job_timeout_secs);
    if !(1..=crate::jobs::MAX_TIMEOUT_SECS).contains(&timeout_secs) {
        return Err(bad(&format!("timeout_secs must be 1..={}", crate::jobs::MAX_TIMEOUT_SECS)));
    }
    let max_attempts = req.max_attempts.unwrap_or(s.hub.cfg.max_attempts).clamp(1, 100);
    let jobs = s.hub.cmdb.submit_jobs(machines, NewJob { action: req.action, timeout_secs, max_attempts }).await?;
    for j in &jobs {
        s.hub.wake(j.machine_id);
    }
    Ok((StatusCode::CREATED, Json(json!({ "jobs": jobs }))))
}

async fn list(State(s): State<ApiState>, q: Result<Query<ListQuery>, QueryRejection>) -> Result<Json<Value>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))?;
    let machine = match &q.machine {
        Some(m) => Some(resolve(&s, m).await?.id),
        None => None,
    };
    let state =
        q.state.as_deref().map(str::parse).transpose().map_err(|e: String| ApiError(StatusCode::BAD_REQUEST, e))?;
    let jobs = s.hub.cmdb.jobs(JobFilter { machine, state, limit: q.limit }).await?;
    Ok(Json(json!({ "jobs": jobs })))
}

#[derive(Deserialize)]
struct ListQuery {
    machine: Option<String>,
    state: Option<String>,
    limit: Option<usize>,
}

async fn show(State(s): State<ApiState>, Path(id): Path<u64>) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!(s.hub.cmdb.job(id).await?)))
}

#[derive(Deserialize)]
struct OutputQuery {
    #[serde(default)]
    follow: bool,
}

/// The job's output: JSON (every chunk, and the text of the latest attempt), or with
/// `?follow=true` a server-sent event stream: `output` events as chunks arrive (those stored
/// already first), then one `done` event with the finished job.
async fn output(
    State(s): State<ApiState>,
    Path(id): Path<u64>,
    Query(q): Query<OutputQuery>,
) -> Result<Response, ApiError> {
    if !q.follow {
        let job = s.hub.cmdb.job(id).await?;
        let stored = s.hub.cmdb.output(id).await?;
        let text: String = stored.iter().filter(|c| c.attempt == job.attempt).map(|c| c.data.as_str()).collect();
        return Ok(Json(json!({ "job": job, "text": text, "chunks": stored })).into_response());
    }
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
    tokio::spawn(async move {
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
        follow.await;
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

async fn cancel(State(s): State<ApiState>, Path(id): Path<u64>) -> Result<Json<Value>, ApiError> {
    let job = s.hub.cmdb.cancel_job(id).await?;
    s.hub.publish(id, JobEvent::Done(Box::new(job.clone())));
    Ok(Json(json!(job)))
}

async fn approve(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Value>, ApiError> {
    let m = resolve(&s, &key).await?;
    let rec = s.hub.cmdb.approve_agent(m.id).await?;
    s.hub.forget(m.id);
    Ok(Json(rec.view()))
}

async fn agent(State(s): State<ApiState>, Path(key): Path<String>) -> Result<Json<Value>, ApiError> {
    let m = resolve(&s, &key).await?;
    match s.hub.cmdb.agent(m.id).await? {
        Some(rec) => Ok(Json(rec.view())),
        None => Err(ApiError(StatusCode::NOT_FOUND, format!("no agent has enrolled for machine {}", m.id))),
    }
}
