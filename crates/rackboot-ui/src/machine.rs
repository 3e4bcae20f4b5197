//! `/ui/machines/{id}`: one machine — summary, inventory (CPU, memory, disks, NICs with their
//! LLDP neighbours, BMC), its provisioning run, its jobs with their output, and its timeline,
//! which [`super::live`] keeps current.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;

use minijinja::Value as V;

use super::session::Session;
use super::view::message;
use super::UiState;
use rackboot_store::{Event, JobFilter};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/machines/{id}", get(show)).route("/ui/machines/{id}/live", get(super::live::stream))
}

/// Timeline entries a page shows (newest first); older ones are in the API.
const TIMELINE: usize = 200;
/// Jobs a page shows (newest first), and output chunks per job.
const JOBS: usize = 10;
const CHUNKS: usize = 40;

/// A timeline entry as the page shows it.
#[derive(Serialize)]
pub struct EventRow {
    pub seq: u64,
    pub at_ms: u64,
    pub kind: String,
    pub state: Option<String>,
    /// The event's facts as compact JSON, cut at 300 characters.
    pub detail: String,
}

impl From<&Event> for EventRow {
    fn from(e: &Event) -> EventRow {
        let mut detail = if e.detail.is_null() { String::new() } else { e.detail.to_string() };
        if detail.chars().count() > 300 {
            detail = detail.chars().take(300).collect::<String>() + "…";
        }
        EventRow {
            seq: e.seq,
            at_ms: e.at_ms,
            kind: e.kind.as_str().to_string(),
            state: e.state.map(|s| super::view::state_name(&s)),
            detail,
        }
    }
}

/// A job as the page shows it, with the end of its output.
#[derive(Serialize)]
pub struct JobRow {
    job: rackboot_model::jobs::Job,
    kind: String,
    state: String,
    output: String,
}

/// A job's row: its action's kind, its state in words and the last [`CHUNKS`] output chunks.
pub async fn job_row(cmdb: &rackboot_store::Cmdb, job: rackboot_model::jobs::Job) -> JobRow {
    let chunks = cmdb.last_output(job.id, CHUNKS).await.unwrap_or_default();
    let output = chunks.into_iter().filter(|c| c.attempt == job.attempt).map(|c| c.data).collect::<String>();
    let name = |v: Option<serde_json::Value>| v.and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let kind = name(serde_json::to_value(&job.action).ok().map(|v| v["kind"].clone()));
    let state = name(serde_json::to_value(job.state).ok());
    JobRow { kind, state, output, job }
}

/// A provisioning run as the page shows it: the step in words (`configure 2`).
#[derive(Serialize)]
pub struct RunView {
    id: u64,
    task_id: u64,
    state: serde_json::Value,
    step: String,
    progress: u8,
    step_started_ms: u64,
    error: Option<String>,
}

impl From<rackboot_control::provision::Run> for RunView {
    fn from(r: rackboot_control::provision::Run) -> RunView {
        let v = serde_json::to_value(r.step).unwrap_or_default();
        let mut step = v["step"].as_str().unwrap_or("").replace('_', " ");
        if let Some(i) = v["index"].as_u64() {
            step = format!("{step} {}", i + 1);
        }
        RunView {
            id: r.id,
            task_id: r.task_id,
            state: serde_json::to_value(r.state).unwrap_or_default(),
            step,
            progress: r.progress,
            step_started_ms: r.step_started_ms,
            error: r.error,
        }
    }
}

/// The machine page's query: the outcome of an action, shown once after its redirect.
#[derive(serde::Deserialize, Default)]
struct PageQuery {
    #[serde(default)]
    notice: String,
}

async fn show(
    State(s): State<UiState>,
    session: Session,
    Path(key): Path<String>,
    q: Result<axum::extract::Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let notice: String = q.map(|q| q.0.notice).unwrap_or_default().chars().take(500).collect();
    let user = Some(session.caller.user.as_str());
    let found = match key.parse::<u64>() {
        Ok(id) => s.api.cmdb.machine(id).await,
        Err(_) => match key.parse::<rackboot_model::mac::Mac>() {
            Ok(mac) => s.api.cmdb.machine_by_mac(mac).await,
            Err(e) => return message(&s.views, StatusCode::BAD_REQUEST, "Machine", &e.to_string(), &session),
        },
    };
    let m = match found {
        Ok(m) if session.sees(&m.pool) => m.shown(),
        // Another pool's machine is not there for a pool-scoped user, as in the API.
        Ok(_) => {
            let what = match key.parse::<u64>() {
                Ok(id) => format!("machine {id}"),
                Err(_) => format!(
                    "machine with MAC {}",
                    key.parse::<rackboot_model::mac::Mac>().map_or(key.clone(), |m| m.to_string())
                ),
            };
            let hidden = rackboot_store::CmdbError::NotFound(what).to_string();
            return message(&s.views, StatusCode::NOT_FOUND, "Machine", &hidden, &session);
        }
        Err(e) => return message(&s.views, StatusCode::NOT_FOUND, "Machine", &e.to_string(), &session),
    };
    let cmdb = &s.api.cmdb;
    let mut events = cmdb.events(m.id, 0, 10_000).await.unwrap_or_default();
    let head = events.last().map_or(0, |e| e.seq);
    let timeline: Vec<EventRow> = events.drain(..).rev().take(TIMELINE).map(|e| EventRow::from(&e)).collect();
    let filter = JobFilter { machine: Some(m.id), limit: Some(JOBS), ..Default::default() };
    let (jobs, _) = cmdb.jobs(filter).await.unwrap_or_default();
    let mut job_rows = Vec::new();
    for job in jobs {
        job_rows.push(job_row(cmdb, job).await);
    }
    let runs = cmdb.active_runs().await.unwrap_or_default();
    let run = runs.into_iter().find(|r| r.machine_id == Some(m.id)).map(RunView::from);
    // The newest commissioning run's results.
    let tested =
        rackboot_control::provision::lifecycle::test_runs(cmdb, m.id).await.unwrap_or_default().into_iter().next();
    let tests = tested.map(|(profile, r)| minijinja::context! { profile, run => r.id, state => V::from(minijinja::value::Serde(&r.state)), error => r.error, tests => V::from(minijinja::value::Serde(&r.tests)) });
    let state = super::view::state_name(&m.state);
    // The power state is everyone's to see; where the BMC is, an operator's (as in the API).
    let bmc = cmdb.bmc(m.id).await.unwrap_or_default();
    let power = bmc.as_ref().map(|b| b.power.clone());
    let bmc_at = bmc.filter(|_| session.operator()).map(|b| format!("{} ({})", b.address, b.view(0).protocol_name()));
    let ctx = minijinja::context! {
        user, role => session.caller.role.as_str(), csrf => &session.csrf, operator => session.operator(),
        scoped => session.scoped(), pools_text => session.pools_text(),
        m => V::from(minijinja::value::Serde(&m)), state, notice, timeline => V::from(minijinja::value::Serde(&timeline)), jobs => V::from(minijinja::value::Serde(&job_rows)),
        run => V::from(minijinja::value::Serde(&run)), head, tests,
        seen_ms => m.last_seen_at.map(|t| t * 1000), created_ms => m.created_at * 1000,
        has_bmc => power.is_some(), power => V::from(minijinja::value::Serde(power.flatten())), bmc_at,
    };
    s.views.page("machine.html", ctx)
}

#[cfg(test)]
mod tests {
    use rackboot_agent::wire::{Firmware, Inventory, LldpNeighbor, Nic};

    use super::*;
    use rackboot_control::provision::{Run, Step};
    use rackboot_store::Machine;

    /// The page of a machine only DHCP has seen: nothing optional set (strict templates fail on
    /// a missing field, so every optional one must be there as null).
    #[test]
    fn a_bare_machine_page_renders() {
        let views = super::super::view::Views::new().unwrap();
        let m = Machine::new(8, vec!["52:54:00:00:00:08".parse().unwrap()], 1_795_446_245);
        let ctx = minijinja::context! {
            user => "alice", role => "viewer", csrf => "x", operator => false,
            m => V::from(minijinja::value::Serde(&m)), state => "discovered", notice => "",
            timeline => V::from(minijinja::value::Serde(Vec::<EventRow>::new())),
            jobs => V::from(minijinja::value::Serde(Vec::<JobRow>::new())),
            run => V::from(minijinja::value::Serde(None::<RunView>)), head => 0, tests => None::<V>,
            seen_ms => None::<u64>, created_ms => 1_795_446_245_000_u64,
        };
        let html = views.render("machine.html", ctx).unwrap();
        assert!(html.contains("<dt>UEFI loader</dt><dd>default</dd>"), "{html}");
    }

    /// A failed commissioning run as the page gets it.
    fn tested() -> V {
        let t = rackboot_model::commission::TestResult {
            name: "disk-read:vda".into(),
            passed: false,
            figure: Some(212.5),
            unit: "MB/s".into(),
            floor: Some(400.0),
            note: "212.5 MB/s is below the floor of 400".into(),
        };
        let error = "test disk-read:vda: 212.5 MB/s is below the floor of 400";
        minijinja::context! { profile => "burn-in", run => 4, state => "failed", error, tests => V::from(minijinja::value::Serde(vec![t])) }
    }

    /// The page with everything on it: inventory with an LLDP neighbour, a run, a job.
    #[test]
    fn a_full_machine_page_renders() {
        let views = super::super::view::Views::new().unwrap();
        let mut m = Machine::new(7, vec!["52:54:00:00:00:07".parse().unwrap()], 1_795_446_245);
        m.hostname = Some("r1-u07".into());
        let mut inv = Inventory::default();
        inv.nics.push(Nic { name: "eth0".into(), mac: "52:54:00:00:00:07".into(), link: true, ..Default::default() });
        inv.lldp.push(LldpNeighbor {
            interface: "eth0".into(),
            chassis_id: "aa:bb".into(),
            port_id: "Ethernet7".into(),
            system_name: Some("tor-r1".into()),
            port_description: Some("<b>u7</b>".into()),
        });
        inv.firmware = Firmware { uefi: true, secure_boot: Some(true) };
        inv.arch = "aarch64".into();
        m.inventory = Some(inv);
        m.uefi_loader = Some(rackboot_config::UefiLoader::Shim);
        let mut run = Run::new(3, 2, 1, Some(7), 1_795_446_245_000);
        run.step = Step::Configure(1);
        let ctx = minijinja::context! {
            user => "alice", role => "operator", csrf => "x", operator => true,
            m => V::from(minijinja::value::Serde(&m)), state => "configuring", notice => "",
            timeline => V::from(minijinja::value::Serde(Vec::<EventRow>::new())),
            jobs => V::from(minijinja::value::Serde(Vec::<JobRow>::new())),
            run => V::from(minijinja::value::Serde(Some(RunView::from(run)))), head => 0,
            seen_ms => None::<u64>, created_ms => 1_795_446_245_000_u64, tests => tested(),
        };
        let html = views.render("machine.html", ctx).unwrap();
        assert!(html.contains("<td>tor-r1</td><td>Ethernet7 (&lt;b&gt;u7&lt;&#x2f;b&gt;)</td>"), "{html}");
        assert!(html.contains("configure 2 (0 %)"), "{html}");
        assert!(html.contains("<dt>Firmware</dt><dd>UEFI, Secure Boot on</dd>"), "{html}");
        assert!(html.contains("<dt>Architecture</dt><dd>aarch64</dd>"), "{html}");
        assert!(html.contains("<dt>UEFI loader</dt><dd>shim</dd>"), "{html}");
        assert!(html.contains("2026-11-23T15:04:05Z"));
        assert!(html.contains("test profile <strong>burn-in</strong>: failed, test disk-read:vda"), "{html}");
        assert!(html.contains("<td>disk-read:vda</td><td>FAILED</td><td>212.5 MB&#x2f;s</td><td>400.0</td>"), "{html}");
        assert!(html.contains("data-live=\"/ui/machines/7/live?after=0\""));
        assert!(html.contains("href=\"/ui/machines/7/bmc\" id=\"bmc-link\">Set a BMC"), "an operator can set one");
    }
}
