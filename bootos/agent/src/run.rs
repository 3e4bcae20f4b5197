//! The agent's life: bring the network up (BootOS), enroll, send the inventory, then long-poll
//! for jobs and run them one at a time, while stats go out on their own schedule. Any failure to
//! reach the appliance (it restarted, the network blinked) is retried with backoff; a credential
//! the appliance no longer accepts leads to a new enrollment. Nothing is lost: a job in flight
//! keeps its result until the appliance takes it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;

use crate::client::{Client, Reply};
use crate::jobs::{run_script, Sink};
use crate::wire::{Action, AgentMode, EnrollRequest, EnrollResponse, JobResult, JobSpec, Outcome};
use crate::{inventory, lldp, stats};

/// How the agent is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// The appliance, e.g. `http://198.18.0.1:8080`.
    pub url: String,
    pub mode: AgentMode,
    /// Where the credential is kept (installed mode; BootOS keeps it in memory only).
    pub state_dir: Option<PathBuf>,
    pub boot_mac: Option<String>,
    /// File-system root the inventory and stats are read from ("/").
    pub root: PathBuf,
    /// Where job scripts are written.
    pub workdir: PathBuf,
    /// MACs to enroll with instead of the NICs found (tests and simulations).
    pub macs: Option<Vec<String>>,
    /// Listen for LLDP neighbours (needs root).
    pub lldp: bool,
    /// Actually reboot/power off for those actions (off in tests).
    pub power_actions: bool,
}

const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// What a poll or report concluded.
enum Next {
    /// Carry on.
    Continue,
    /// The credential is no longer accepted: enroll again.
    Reenroll,
}

pub struct Agent {
    opts: Options,
    client: Client,
    session: Option<EnrollResponse>,
    lldp: lldp::Neighbours,
    lldp_changed: Arc<AtomicBool>,
    stats_task: Option<tokio::task::JoinHandle<()>>,
}

impl Agent {
    pub fn new(opts: Options) -> anyhow::Result<Agent> {
        let client = Client::new(&opts.url)?;
        let lldp: lldp::Neighbours = Arc::default();
        let lldp_changed = Arc::new(AtomicBool::new(false));
        if opts.lldp {
            let flag = lldp_changed.clone();
            lldp::spawn_listener(lldp.clone(), move || flag.store(true, Ordering::Relaxed));
        }
        Ok(Agent { opts, client, session: None, lldp, lldp_changed, stats_task: None })
    }

    /// Runs forever (until the task is dropped).
    pub async fn run(&mut self) -> anyhow::Result<()> {
        let mut backoff = Duration::from_secs(1);
        loop {
            if self.session.is_none() {
                if let Err(error) = self.enroll().await {
                    tracing::warn!(error = format!("{error:#}"), retry_in = ?backoff, "enrollment failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
                backoff = Duration::from_secs(1);
            }
            match self.poll_once().await {
                Ok(Next::Continue) => backoff = Duration::from_secs(1),
                Ok(Next::Reenroll) => self.drop_session(),
                Err(error) => {
                    tracing::warn!(error = format!("{error:#}"), retry_in = ?backoff, "appliance unreachable");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    fn drop_session(&mut self) {
        self.session = None;
        self.client.credential = None;
        if let Some(t) = self.stats_task.take() {
            t.abort();
        }
        if let Some(dir) = &self.opts.state_dir {
            let _ = std::fs::remove_file(dir.join("credential"));
        }
    }

    fn macs(&self) -> Vec<String> {
        self.opts.macs.clone().unwrap_or_else(|| inventory::macs(&self.opts.root))
    }

    /// Enrolls (or, on an installed node, reuses the saved credential), then sends the
    /// inventory and starts the stats loop.
    async fn enroll(&mut self) -> anyhow::Result<()> {
        let saved = self.opts.state_dir.as_ref().and_then(|d| std::fs::read_to_string(d.join("session.json")).ok());
        let resp = match saved.and_then(|s| serde_json::from_str::<EnrollResponse>(&s).ok()) {
            Some(r) => r,
            None => {
                let dmi = inventory::dmi(&self.opts.root);
                let req = EnrollRequest {
                    macs: self.macs(),
                    boot_mac: self.opts.boot_mac.clone(),
                    serial: dmi.serial,
                    system_uuid: dmi.uuid,
                    mode: self.opts.mode,
                    version: env!("CARGO_PKG_VERSION").to_string(),
                };
                self.client.credential = None;
                let r = self.client.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(30)).await?;
                anyhow::ensure!(r.ok(), "enroll: HTTP {}: {}", r.status, r.error_text());
                let resp: EnrollResponse = r.json()?;
                if let Some(dir) = &self.opts.state_dir {
                    std::fs::create_dir_all(dir)?;
                    let path = dir.join("session.json");
                    std::fs::write(&path, serde_json::to_vec(&resp)?)?;
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
                }
                tracing::info!(machine = resp.machine_id, approved = resp.approved, "enrolled");
                resp
            }
        };
        self.client.credential = Some(resp.credential.clone());
        self.session = Some(resp.clone());
        if let Err(error) = self.send_inventory().await {
            // Not approved yet, or the appliance blinked: the poll loop sorts that out; the
            // inventory goes again once the session is good.
            tracing::info!(error = format!("{error:#}"), "inventory not sent yet");
            self.lldp_changed.store(true, Ordering::Relaxed);
        }
        self.start_stats(&resp);
        Ok(())
    }

    async fn send_inventory(&mut self) -> anyhow::Result<()> {
        let mut inv = inventory::collect(&self.opts.root);
        inv.lldp = self.lldp.lock().expect("lldp lock").clone();
        let r = self.client.call(Method::PUT, "/agent/v1/inventory", Some(&inv), Duration::from_secs(30)).await?;
        anyhow::ensure!(r.ok(), "inventory: HTTP {}: {}", r.status, r.error_text());
        Ok(())
    }

    fn start_stats(&mut self, resp: &EnrollResponse) {
        if let Some(t) = self.stats_task.take() {
            t.abort();
        }
        let (url, cred, root) = (self.opts.url.clone(), resp.credential.clone(), self.opts.root.clone());
        let every = Duration::from_secs(resp.stats_secs.max(1));
        self.stats_task = Some(tokio::spawn(async move {
            let Ok(mut c) = Client::new(&url) else { return };
            c.credential = Some(cred);
            loop {
                let s = stats::collect(&root);
                if let Err(error) = c.call(Method::POST, "/agent/v1/stats", Some(&s), Duration::from_secs(15)).await {
                    tracing::debug!(%error, "stats not sent");
                }
                tokio::time::sleep(every).await;
            }
        }));
    }

    /// One long-poll, and the job it brings.
    async fn poll_once(&mut self) -> anyhow::Result<Next> {
        if self.lldp_changed.swap(false, Ordering::Relaxed) {
            if let Err(error) = self.send_inventory().await {
                self.lldp_changed.store(true, Ordering::Relaxed);
                return Err(error);
            }
        }
        let wait = self.session.as_ref().map_or(25, |s| s.poll_secs);
        let r = self
            .client
            .call::<()>(Method::GET, &format!("/agent/v1/jobs/next?wait={wait}"), None, Duration::from_secs(wait + 15))
            .await?;
        match r.status {
            204 => Ok(Next::Continue),
            200 => {
                let spec: JobSpec = r.json()?;
                let result = self.execute(&spec).await;
                self.report(&spec, &result).await
            }
            401 => Ok(Next::Reenroll),
            403 => {
                tracing::info!("waiting for an operator to approve this machine");
                tokio::time::sleep(Duration::from_secs(wait.min(10))).await;
                Ok(Next::Continue)
            }
            _ => anyhow::bail!("poll: HTTP {}: {}", r.status, r.error_text()),
        }
    }

    async fn execute(&mut self, spec: &JobSpec) -> JobResult {
        tracing::info!(job = spec.id, attempt = spec.attempt, "job started");
        // A heartbeat keeps the lease and is when a cancel is heard: a third of the lease, at
        // most 10 s apart.
        let lease = Duration::from_secs(self.session.as_ref().map_or(60, |s| s.lease_secs));
        let heartbeat = (lease / 3).clamp(Duration::from_secs(1), Duration::from_secs(10));
        let started = std::time::Instant::now();
        let done = |outcome, error: Option<String>| JobResult {
            attempt: spec.attempt,
            outcome,
            exit_code: None,
            duration_ms: started.elapsed().as_millis() as u64,
            error,
        };
        match &spec.action {
            Action::Script { .. } => {
                let workdir = self.opts.workdir.clone();
                let mut sink = Sink::new(&mut self.client, spec);
                run_script(&mut sink, spec, heartbeat, &workdir).await
            }
            Action::RefreshInventory => match self.send_inventory().await {
                Ok(()) => done(Outcome::Succeeded, None),
                Err(e) => done(Outcome::Error, Some(format!("{e:#}"))),
            },
            Action::Reboot | Action::PowerOff => done(Outcome::Succeeded, None),
        }
    }

    /// Reports a result until the appliance has it (idempotent on its side), then carries out a
    /// reboot or power-off.
    async fn report(&mut self, spec: &JobSpec, result: &JobResult) -> anyhow::Result<Next> {
        let path = format!("/agent/v1/jobs/{}/result", spec.id);
        let mut backoff = Duration::from_secs(1);
        loop {
            match self.client.call(Method::POST, &path, Some(result), Duration::from_secs(30)).await {
                Ok(r) if r.ok() || r.status == 404 => break,
                Ok(Reply { status: 401, .. }) => {
                    // Re-enroll (same machine, new credential) and report again.
                    self.drop_session();
                    while let Err(error) = self.enroll().await {
                        tracing::warn!(error = format!("{error:#}"), "re-enrollment failed");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                    }
                }
                Ok(r) => tracing::warn!(status = r.status, error = %r.error_text(), "result refused; retrying"),
                Err(error) => tracing::warn!(error = format!("{error:#}"), "result not delivered; retrying"),
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        tracing::info!(job = spec.id, outcome = ?result.outcome, "job reported");
        if self.opts.power_actions {
            match spec.action {
                Action::Reboot => power(nix::sys::reboot::RebootMode::RB_AUTOBOOT),
                Action::PowerOff => power(nix::sys::reboot::RebootMode::RB_POWER_OFF),
                _ => {}
            }
        }
        Ok(Next::Continue)
    }
}

fn power(mode: nix::sys::reboot::RebootMode) {
    nix::unistd::sync();
    let Err(error) = nix::sys::reboot::reboot(mode);
    tracing::error!(%error, ?mode, "reboot syscall failed");
}
