//! `/ui/dashboard`: machines by state (each a link to the filtered list), what failed lately
//! (machines in `failed`, failed jobs), the appliance's health (boot assets, as `/healthz`
//! says; active jobs and runs; open live streams) and the last hour in charts ([`charts`]),
//! also served alone at `/ui/dashboard/charts` for the page to refresh each minute.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use minijinja::value::Serde;
use minijinja::Value as V;

use super::charts::{self, pool, Hour};
use super::machine::job_row;
use super::session::Session;
use super::view::state_name;
use super::UiState;
use rackboot_model::jobs::JobState;
use rackboot_store::{now_ms, Cmdb, CmdbError, EventFilter, JobFilter, MachineFilter, MachineState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/dashboard", get(show)).route("/ui/dashboard/charts", get(charts_only))
}

/// Timeline entries the charts read at most, the newest: an hour with more is drawn from where
/// the read began, and says so.
pub const CHART_READ: usize = 20_000;

/// The charts' part of the page's context: `plots`, `pool_counted`, `read_at`, `error`.
async fn charts_ctx(s: &UiState) -> V {
    let now = now_ms();
    let pool_now = pool::reading(&s.api.metrics, now);
    let (plots, error) = match last_hour(&s.api.cmdb, now).await {
        Ok(hour) => (charts::figures::figures(&hour, &s.pool.samples(), pool_now), None),
        Err(e) => {
            tracing::warn!(error = %e, "dashboard charts: the timeline could not be read");
            (Vec::new(), Some(format!("the timeline could not be read: {e}")))
        }
    };
    minijinja::context! { plots => V::from(Serde(&plots)), pool_counted => pool_now.pool > 0, read_at => now, error }
}

/// The hour ending at `now` from the newest [`CHART_READ`] timeline entries and the machines'
/// states now.
async fn last_hour(cmdb: &Cmdb, now: u64) -> Result<Hour, CmdbError> {
    let since = now.saturating_sub(charts::HOUR_MS);
    let counts = cmdb.count_by_state();
    let after = cmdb.event_head().await?.saturating_sub(CHART_READ as u64);
    let filter = EventFilter { kinds: charts::kinds(), since_ms: Some(since), ..Default::default() };
    // Entries committed since the head was read may fall past the scan; the next refresh has them.
    let (events, _) = cmdb.event_log(filter, after, CHART_READ, CHART_READ).await?;
    // Cut short when the oldest entry read is inside the hour: the ones before it were not read.
    let cut = match after {
        0 => None,
        _ => cmdb
            .event_log(EventFilter::default(), after, 1, 1)
            .await?
            .0
            .first()
            .map(|e| e.at_ms)
            .filter(|at| *at > since),
    };
    Ok(charts::hour(&events, now, &counts, cut))
}

/// The charts alone (the page's section, refreshed by htmx).
async fn charts_only(State(s): State<UiState>, _session: Session) -> Response {
    s.views.page("dashboard_charts.html", charts_ctx(&s).await)
}

/// Failed machines and jobs the page lists.
const RECENT: usize = 10;

async fn show(
    State(s): State<UiState>,
    session: Session,
    check: Option<Extension<Arc<rackboot_api::assets::Check>>>,
) -> Response {
    let cmdb = &s.api.cmdb;
    // Counts from the in-memory index; only the failed machines listed are read from storage.
    let by_state = cmdb.count_by_state();
    let total: usize = by_state.values().sum();
    // In lifecycle order.
    let counts: Vec<(&str, usize)> = super::machines::STATES
        .iter()
        .map(|name| {
            let state: MachineState = name.parse().expect("a listed state");
            (*name, by_state.get(&state).copied().unwrap_or(0))
        })
        .collect();
    let f = MachineFilter { state: Some(MachineState::Failed), limit: Some(RECENT), ..Default::default() };
    let failed: Vec<_> = cmdb
        .list_machines(f)
        .await
        .map(|p| p.machines.iter().map(|m| (m.id, m.hostname.clone(), m.updated_at * 1000)).collect())
        .unwrap_or_default();
    let failed_jobs = JobFilter { state: Some(JobState::Failed), limit: Some(RECENT), ..Default::default() };
    let mut jobs = Vec::new();
    for job in cmdb.jobs(failed_jobs).await.map(|(j, _)| j).unwrap_or_default() {
        jobs.push(job_row(cmdb, job).await);
    }
    let assets = match check {
        Some(Extension(c)) => {
            let c = c.clone();
            let gaps = tokio::task::spawn_blocking(move || rackboot_api::assets::missing(&c.root, &c.needed)).await;
            match gaps {
                Ok(g) if g.is_empty() => "ok: every boot asset the config needs is present".to_string(),
                Ok(g) => rackboot_api::assets::report(&g),
                Err(e) => format!("the check failed: {e}"),
            }
        }
        None => String::new(),
    };
    let active_jobs = cmdb.active_job_count().await.unwrap_or(0);
    let active_runs = cmdb.active_runs().await.map(|r| r.len()).unwrap_or(0);
    let streams = rackboot_api::api::MAX_STREAMS - s.api.streams.available_permits();
    // DHCP pool use, as the DHCP service last counted it (every 5 s); none outside full mode.
    let (leased, pool) = (s.api.metrics.leases_in_use.get(), s.api.metrics.pool_addresses.get());
    let pool_use = (pool > 0).then(|| {
        format!("{leased} active leases, {pool} pool addresses ({:.0}% in use)", leased as f64 * 100.0 / pool as f64)
    });
    let ctx = minijinja::context! {
        user => &session.caller.user, role => session.caller.role.as_str(), csrf => &session.csrf,
        operator => session.operator(), total, counts, failed, jobs => V::from(Serde(&jobs)),
        assets, active_jobs, active_runs, streams, max_streams => rackboot_api::api::MAX_STREAMS, pool_use,
        failed_state => state_name(&MachineState::Failed), ..charts_ctx(&s).await
    };
    s.views.page("dashboard.html", ctx)
}
