//! Provisioning pages: `/ui/tasks` (tasks, newest first, with their runs counted by state),
//! `/ui/tasks/{id}` (each run: machine, hostname, address, step, progress, failures, the error)
//! and `/ui/leases` (DHCP leases in address order, paged). Read-only views of what the API
//! serves; starting a task is the machines page's bulk "provision".

use std::net::Ipv4Addr;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use minijinja::value::Serde;
use minijinja::Value as V;
use serde::{Deserialize, Serialize};

use super::session::Session;
use super::view::message;
use super::UiState;
use rackboot_control::provision::{step_name, RunState};
use rackboot_store::{now_secs, LeaseState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/tasks", get(tasks)).route("/ui/tasks/{id}", get(task)).route("/ui/leases", get(leases))
}

/// Rows a page shows.
const PAGE: usize = 100;

#[derive(Debug, Default, Deserialize)]
pub struct TasksQuery {
    before: Option<u64>,
}

#[derive(Serialize)]
struct TaskRow {
    id: u64,
    state: String,
    created_at_ms: u64,
    what: String,
    runs: usize,
    active: usize,
    installed: usize,
    failed: usize,
}

fn lower<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

async fn tasks(
    State(s): State<UiState>,
    session: Session,
    q: Result<Query<TasksQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = q.map(|Query(q)| q).unwrap_or_default();
    let (tasks, next) = match s.api.cmdb.tasks(q.before, PAGE, None).await {
        Ok(t) => t,
        Err(e) => return message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Tasks", &e.to_string(), &session),
    };
    let mut rows = Vec::new();
    for t in tasks {
        let runs = s.api.cmdb.runs(t.runs.clone()).await.unwrap_or_default();
        let count = |st: RunState| runs.iter().filter(|r| r.state == st).count();
        let what = match (&t.spec.image, &t.spec.installer) {
            (Some(image), _) => format!("image {image}"),
            (None, Some(profile)) => format!("installer {profile}"),
            (None, None) => String::new(),
        };
        rows.push(TaskRow {
            id: t.id,
            state: lower(&t.state),
            created_at_ms: t.created_at_ms,
            what,
            runs: runs.len(),
            active: count(RunState::Active),
            installed: count(RunState::Installed),
            failed: count(RunState::Failed),
        });
    }
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), tasks => V::from(Serde(&rows)), next,
    };
    s.views.page("tasks.html", ctx)
}

#[derive(Serialize)]
struct RunRow {
    id: u64,
    machine_id: Option<u64>,
    hostname: Option<String>,
    ip: Option<Ipv4Addr>,
    state: String,
    step: String,
    progress: u8,
    failures: u32,
    job: Option<u64>,
    step_started_ms: u64,
    finished_at_ms: Option<u64>,
    error: Option<String>,
}

async fn task(State(s): State<UiState>, session: Session, Path(id): Path<String>) -> Response {
    let Ok(id) = id.parse::<u64>() else {
        return message(&s.views, StatusCode::NOT_FOUND, "Task", "no such task", &session);
    };
    let t = match s.api.cmdb.task(id).await {
        Ok(t) => t,
        Err(rackboot_store::CmdbError::NotFound(_)) => {
            return message(&s.views, StatusCode::NOT_FOUND, "Task", "no such task", &session)
        }
        Err(e) => return message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Task", &e.to_string(), &session),
    };
    let runs: Vec<RunRow> = s
        .api
        .cmdb
        .runs(t.runs.clone())
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|r| RunRow {
            id: r.id,
            machine_id: r.machine_id,
            hostname: r.hostname,
            ip: r.ip,
            state: lower(&r.state),
            step: step_name(r.step),
            progress: r.progress,
            failures: r.failures,
            job: r.job,
            step_started_ms: r.step_started_ms,
            finished_at_ms: r.finished_at_ms,
            error: r.error,
        })
        .collect();
    let spec = serde_json::to_string_pretty(&t.spec).unwrap_or_default();
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), id => t.id, state => lower(&t.state), created_at_ms => t.created_at_ms,
        spec, runs => V::from(Serde(&runs)),
    };
    s.views.page("task.html", ctx)
}

#[derive(Debug, Default, Deserialize)]
pub struct LeasesQuery {
    after: Option<Ipv4Addr>,
    /// Where the DHCPv6 table's page starts.
    after6: Option<std::net::Ipv6Addr>,
}

#[derive(Serialize)]
struct Lease6Row {
    ip: std::net::Ipv6Addr,
    mac: Option<String>,
    duid: String,
    iaid: u32,
    state: String,
    expires_at_ms: u64,
}

#[derive(Serialize)]
struct LeaseRow {
    ip: Ipv4Addr,
    mac: String,
    hostname: Option<String>,
    state: String,
    expires_at_ms: u64,
}

async fn leases(
    State(s): State<UiState>,
    session: Session,
    q: Result<Query<LeasesQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = q else {
        return message(
            &s.views,
            StatusCode::BAD_REQUEST,
            "Leases",
            "after= must be an IPv4 address, after6= an IPv6 one",
            &session,
        );
    };
    let (page, next) = match s.api.cmdb.lease_page(q.after, PAGE).await {
        Ok(p) => p,
        Err(e) => return message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Leases", &e.to_string(), &session),
    };
    let now = now_secs();
    let rows: Vec<LeaseRow> = page
        .into_iter()
        .map(|l| {
            let state = match l.state {
                LeaseState::Active if l.expires_at <= now => "expired".to_string(),
                other => lower(&other),
            };
            LeaseRow {
                ip: l.ip,
                mac: l.mac.to_string(),
                hostname: l.hostname,
                state,
                expires_at_ms: l.expires_at * 1000,
            }
        })
        .collect();
    let (page6, more6) = match s.api.cmdb.lease6_page(q.after6, PAGE).await {
        Ok(p) => p,
        Err(e) => return message(&s.views, StatusCode::SERVICE_UNAVAILABLE, "Leases", &e.to_string(), &session),
    };
    let next6 = more6.then(|| page6.last().map(|l| l.ip.to_string())).flatten();
    let rows6: Vec<Lease6Row> = page6
        .into_iter()
        .map(|l| Lease6Row {
            state: match l.state {
                LeaseState::Active if l.expires_at <= now => "expired".to_string(),
                other => lower(&other),
            },
            ip: l.ip,
            mac: l.mac.map(|m| m.to_string()),
            duid: l.duid,
            iaid: l.iaid,
            expires_at_ms: l.expires_at * 1000,
        })
        .collect();
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), leases => V::from(Serde(&rows)), next => next.map(|ip| ip.to_string()),
        leases6 => V::from(Serde(&rows6)), next6 => next6,
    };
    s.views.page("leases.html", ctx)
}
