//! `/agent/v1`: what node agents call. Enrollment needs no credential; every other call carries
//! the machine's bearer credential (see `rackboot_agent::wire` for the protocol).

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use rackboot_agent::wire::{
    EnrollRequest, EnrollResponse, Inventory, JobResult, JobSpec, OutputAck, OutputChunk, Stats,
};
use serde::Deserialize;
use serde_json::json;

use super::{ApiError, ApiState};
use crate::cmdb::{Admission, EnrollOutcome, NonceCheck};
use crate::controller::{AuthError, Hub, JobEvent};

/// Largest output chunk accepted; agents send at most 16 KiB at a time.
const MAX_CHUNK: usize = 64 * 1024;

pub fn routes() -> Router<ApiState> {
    Router::new()
        .route("/enroll", post(enroll))
        .route("/nonce", post(super::agent_nonce::boot_nonce))
        .route("/inventory", put(inventory))
        .route("/jobs/next", get(next_job))
        .route("/jobs/{id}/output", post(output))
        .route("/jobs/{id}/result", post(result))
        .route("/jobs/{id}/bmc-account", post(super::agent_bmc::bmc_account))
        .route("/stats", post(stats))
        .route("/plugins/{sha256}", get(plugin_blob))
}

pub(super) fn bad_json(e: JsonRejection) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, e.body_text())
}

/// The calling machine, from its credential.
pub(super) async fn machine(s: &ApiState, headers: &HeaderMap) -> Result<u64, ApiError> {
    let bearer =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    s.hub.authenticate(bearer).await.map_err(|e| match e {
        AuthError::Unauthorized => {
            ApiError::new(StatusCode::UNAUTHORIZED, "missing, forged or superseded agent credential")
        }
        AuthError::NotApproved => {
            ApiError::new(StatusCode::FORBIDDEN, "enrolled; waiting for an operator to approve this machine")
        }
        AuthError::Storage(why) => {
            tracing::warn!(%why, "an agent credential could not be checked");
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, super::STORE_UNREACHABLE)
        }
    })
}

/// A copy of `headers`' Authorization header alone, sharing no buffer with the request.
fn credential_only(headers: &HeaderMap) -> HeaderMap {
    let mut only = HeaderMap::new();
    if let Some(v) = headers.get(header::AUTHORIZATION).and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()) {
        only.insert(header::AUTHORIZATION, v);
    }
    only
}

/// Where the enrolling machine's rescue is, if it is in one: (a BootOS boot of the rescue, which
/// keeps the installed system's credential; the installed system coming back after the return).
async fn rescue_phase(s: &ApiState, req: &EnrollRequest) -> Result<(bool, bool), ApiError> {
    use crate::provision::{Purpose, Step};
    use rackboot_agent::wire::AgentMode;
    let mac = req.boot_mac.as_deref().or(req.macs.first().map(String::as_str));
    let Some(brief) = mac.and_then(|m| m.parse().ok()).and_then(|m| s.cmdb.brief_by_mac(m)) else {
        return Ok((false, false));
    };
    if !matches!(brief.state, crate::cmdb::MachineState::Rescue | crate::cmdb::MachineState::Installed) {
        return Ok((false, false));
    }
    // The machine's newest run (its own index), if still going.
    let runs = s.cmdb.machine_runs(brief.id, 1).await?;
    let Some(run) = runs.first().filter(|r| r.state == crate::provision::RunState::Active) else {
        return Ok((false, false));
    };
    if !matches!(s.cmdb.task(run.task_id).await?.spec.purpose, Purpose::Rescue { .. }) {
        return Ok((false, false));
    }
    let keep = req.mode == AgentMode::Bootos && matches!(run.step, Step::WaitAgent | Step::Rescue | Step::Rescued);
    let returning = req.mode == AgentMode::Installed && matches!(run.step, Step::Reboot | Step::WaitInstalled);
    Ok((keep, returning))
}

/// Counts an enrollment against its source address's budget a minute
/// (`agent.enrollments_per_minute_per_source`); past it: 429 with Retry-After. (A machine's own
/// budget counts only its proven enrollments, inside the enrollment's transaction.)
pub(super) fn limit_source(s: &ApiState, from: std::net::IpAddr) -> Result<(), ApiError> {
    let Err(wait) = s.hub.enrollments.reserve("", from, std::time::Instant::now()) else { return Ok(()) };
    tracing::warn!(%from, "enrollment refused: too many from this address a minute");
    Err(too_many("too many enrollments from this address; try again later", wait))
}

fn too_many(what: &str, wait: std::time::Duration) -> ApiError {
    ApiError::retry_after(StatusCode::TOO_MANY_REQUESTS, what, wait.as_secs())
}

/// A machine's proven enrollments passed their bound a minute: 429, and its timeline says so
/// once a minute.
async fn too_often(s: &ApiState, id: u64, from: std::net::IpAddr) -> ApiError {
    let now = std::time::Instant::now();
    if s.hub.note_limited(id, now) {
        let detail = serde_json::json!({"from": from.to_string(), "reason": "too many enrollments a minute"});
        if let Err(error) = s.hub.cmdb.note_enroll_limited(id, detail).await {
            tracing::warn!(machine = id, %error, "enrollment limit not noted");
        }
    }
    tracing::warn!(machine = id, %from, "enrollment refused: too many for this machine a minute");
    too_many("too many enrollments of this machine; try again later", std::time::Duration::from_secs(60))
}

/// Longest boot nonce read (rackboot issues 32 hex digits).
const MAX_NONCE: usize = 128;

/// Enrollment. A BootOS agent proves its boot with the boot nonce (accepted at once when policy
/// allows it for the caller's address); an installed node with the machine's current
/// credential. Without either, a machine whose agent holds a live credential is not touched
/// (409, recorded as `agent.enroll_conflict`) and a new one waits for the operator.
async fn enroll(
    State(s): State<ApiState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Json<EnrollRequest>, JsonRejection>,
) -> Result<Json<EnrollResponse>, ApiError> {
    let Json(req) = body.map_err(bad_json)?;
    limit_source(&s, peer.ip())?;
    let auto = s.hub.auto_approves(peer.ip());
    let bearer =
        headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
    // The presented credential is checked against the stored one inside the enrollment's own
    // transaction, not here: one superseded in between must not admit the enrollment.
    let nonce = match req.nonce.as_deref() {
        Some(n) if n.len() > MAX_NONCE => {
            return Err(ApiError::field("nonce", format!("nonce longer than {MAX_NONCE} characters")))
        }
        n => n.map(crate::cmdb::nonce_hash),
    };
    let (keep_installed, returning) = rescue_phase(&s, &req).await?;
    let per_machine = s.hub.per_machine();
    let admission =
        Admission { auto, presented: Hub::presented(bearer), nonce, keep_installed, returning, per_machine };
    let (secret, hash) = Hub::new_secret().map_err(|e| ApiError::internal(e.to_string()))?;
    let enrolled = match s.hub.cmdb.enroll_agent(req, hash, admission, Some(peer.ip())).await? {
        EnrollOutcome::Enrolled(e) => e,
        EnrollOutcome::Conflict { machine_id, nonce } => {
            let reason = nonce.reason();
            tracing::warn!(machine = ?machine_id, from = %peer.ip(), reason, "enrollment refused");
            let what = match machine_id {
                Some(id) if nonce == NonceCheck::Foreign => format!("machine {id} is not the machine this boot nonce was issued for"),
                Some(id) => format!("machine {id} has an enrolled agent and this enrollment proves neither its credential nor a boot rackboot served"),
                None => "this boot nonce was issued for another MAC than the enrolling machine's".to_string(),
            };
            return Err(ApiError::conflict(format!("{what} ({reason}); boot the machine again to re-enroll it")));
        }
        EnrollOutcome::TooOften { machine_id } => return Err(too_often(&s, machine_id, peer.ip()).await),
        EnrollOutcome::TooManyMacs { machine_id, would_have } => {
            tracing::warn!(machine = machine_id, from = %peer.ip(), would_have, "enrollment refused: too many MACs");
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "machine {machine_id} would have {would_have} MACs, more than the {} one machine may have",
                    crate::cmdb::MAX_MACHINE_MACS
                ),
            ));
        }
    };
    s.hub.forget(enrolled.machine_id);
    let cfg = &s.hub.cfg;
    Ok(Json(EnrollResponse {
        machine_id: enrolled.machine_id,
        credential: format!("{}.{secret}", enrolled.machine_id),
        approved: enrolled.approved,
        poll_secs: cfg.poll.as_secs(),
        stats_secs: cfg.stats.as_secs(),
        lease_secs: cfg.lease.as_secs(),
    }))
}

async fn inventory(
    State(s): State<ApiState>,
    headers: HeaderMap,
    body: Result<Json<Inventory>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let id = machine(&s, &headers).await?;
    let Json(inv) = body.map_err(bad_json)?;
    let found = inv.bmc.as_ref().is_some_and(|b| b.ip.is_some());
    s.hub.cmdb.put_inventory(id, inv).await?;
    // A BMC found in band on a machine with none on record: the appliance's own account.
    if let (Some(power), true) = (&s.power, found) {
        super::agent_bmc::inventoried(&s, power, id).await;
    }
    // An installed system's network is checked against its spec (a mismatch is an event and
    // stays on the machine until it matches).
    if s.hub.cmdb.agent(id).await?.is_some_and(|a| a.mode == rackboot_agent::wire::AgentMode::Installed) {
        let networks = super::network::named(&s);
        if let Err(error) = crate::provision::network::check_came_up(&s.hub.cmdb, &networks, id).await {
            tracing::warn!(machine = id, %error, "network not checked");
        }
    }
    // A rack with auto_provision queues the machine it placed, now that it is inventoried.
    if let Err(error) = crate::racks::provision::queue_if_due(&s.hub.cmdb, s.engine.as_deref(), id).await {
        tracing::warn!(machine = id, %error, "rack provisioning not queued");
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct Wait {
    wait: Option<u64>,
}

/// The long-poll: the machine's next job, or 204 after `wait` seconds (at most
/// `agent.poll_secs`) without one. A job submitted meanwhile wakes it at once.
async fn next_job(State(s): State<ApiState>, request: HeaderMap, Query(w): Query<Wait>) -> Result<Response, ApiError> {
    // Keep only the credential through the wait: the request's headers are slices of hyper's
    // read buffer, and holding them would keep that buffer (8 KiB or more) per waiting agent
    // while hyper reads into a new one.
    let headers = credential_only(&request);
    drop(request);
    let id = machine(&s, &headers).await?;
    let hub = &s.hub;
    let wait = w.wait.map_or(hub.cfg.poll, Duration::from_secs).min(hub.cfg.poll);
    let deadline = tokio::time::Instant::now() + wait;
    let notify = hub.waiter(id);
    let lease_ms = hub.cfg.lease.as_millis() as u64;
    let mut woken = false;
    loop {
        // Register for a wake-up before looking, so a job queued in between is not missed.
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        // A job goes only to the machine's credential as it is now: one superseded or revoked
        // while this poll waited gets 401, not the job.
        if woken {
            machine(&s, &headers).await?;
        }
        woken = true;
        if hub.cmdb.has_active_jobs(id).await? {
            let (claimed, finished) = hub.cmdb.claim_job(id, lease_ms).await?;
            for job in finished {
                hub.publish(job.id, JobEvent::Done(Box::new(job)));
            }
            if let Some(job) = claimed {
                let spec =
                    JobSpec { id: job.id, attempt: job.attempt, action: job.action, timeout_secs: job.timeout_secs };
                return Ok(Json(spec).into_response());
            }
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline) => return Ok(StatusCode::NO_CONTENT.into_response()),
            // Shutting down: the agent polls again and retries until the appliance is back.
            _ = hub.shutdown.cancelled() => return Ok(StatusCode::NO_CONTENT.into_response()),
        }
    }
}

async fn output(
    State(s): State<ApiState>,
    headers: HeaderMap,
    Path(job_id): Path<u64>,
    body: Result<Json<OutputChunk>, JsonRejection>,
) -> Result<Json<OutputAck>, ApiError> {
    let id = machine(&s, &headers).await?;
    let Json(chunk) = body.map_err(bad_json)?;
    if chunk.data.len() > MAX_CHUNK {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("output chunks are limited to {MAX_CHUNK} bytes"),
        ));
    }
    let (_, stop, stored) = s.hub.cmdb.job_output(id, job_id, chunk, s.hub.cfg.lease.as_millis() as u64).await?;
    // Followers see what was stored, as stored (a chunk cut at the cap, cut).
    if let Some(c) = stored {
        s.hub.publish(job_id, JobEvent::Output(c));
    }
    Ok(Json(OutputAck { stop }))
}

async fn result(
    State(s): State<ApiState>,
    headers: HeaderMap,
    Path(job_id): Path<u64>,
    body: Result<Json<JobResult>, JsonRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = machine(&s, &headers).await?;
    let Json(r) = body.map_err(bad_json)?;
    let (job, accepted) = s.hub.cmdb.finish_job(id, job_id, r).await?;
    if accepted {
        s.hub.publish(job_id, JobEvent::Done(Box::new(job.clone())));
    }
    Ok(Json(json!({ "accepted": accepted, "state": job.state })))
}

async fn stats(
    State(s): State<ApiState>,
    headers: HeaderMap,
    body: Result<Json<Stats>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let id = machine(&s, &headers).await?;
    let Json(st) = body.map_err(bad_json)?;
    if s.hub.stats_due(id) {
        s.hub.cmdb.put_stats(id, st);
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A plugin bundle by its SHA-256, for the agent about to run it: only a stored version whose
/// signing key is still trusted and unrevoked is served (the agent checks the hash again).
async fn plugin_blob(
    State(s): State<ApiState>,
    headers: HeaderMap,
    Path(sha256): Path<String>,
) -> Result<Response, ApiError> {
    let id = machine(&s, &headers).await?;
    let store = s.plugins.as_ref().ok_or_else(|| ApiError::not_found("no plugin store"))?;
    if sha256.len() != 64 || !sha256.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(ApiError::bad("a plugin is fetched by its SHA-256 in lowercase hex"));
    }
    let versions = s.cmdb.plugin_versions().await?;
    let v = versions.iter().find(|v| v.sha256 == sha256).ok_or_else(|| ApiError::not_found("no such plugin bundle"))?;
    let keys = store.trusted_keys().await.map_err(|e| ApiError::internal(e.to_string()))?;
    if !keys.iter().any(|k| k.key_id == v.key_id && k.revoked_at.is_none()) {
        tracing::warn!(machine = id, plugin = %v.name, version = %v.version, "plugin fetch refused: its key is revoked or not trusted here");
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "{} {} is disabled: its signing key {} is revoked or not trusted by this appliance",
                v.name, v.version, v.key_id
            ),
        ));
    }
    let path = store.local_blob(v).await.map_err(|e| {
        tracing::warn!(machine = id, plugin = %v.name, version = %v.version, error = %e, "plugin fetch refused");
        match e {
            crate::plugins::PluginError::Refused(why) => ApiError::new(StatusCode::FORBIDDEN, why),
            e => ApiError::internal(format!("plugin blob: {e}")),
        }
    })?;
    let file =
        tokio::fs::File::open(path).await.map_err(|e| ApiError::internal(format!("plugin blob {sha256}: {e}")))?;
    let body = axum::body::Body::from_stream(tokio_util::io::ReaderStream::new(file));
    Ok(([(header::CONTENT_TYPE, "application/gzip"), (header::CONTENT_LENGTH, &v.size.to_string())], body)
        .into_response())
}
