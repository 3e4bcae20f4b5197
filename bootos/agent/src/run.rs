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

mod execute;

/// How the agent is set up.
#[derive(Debug, Clone)]
pub struct Options {
    /// The appliance's HTTPS URL, e.g. `https://198.18.0.1:8443`.
    pub url: String,
    /// Whom the agent trusts as the appliance (its CA file or pin).
    pub trust: crate::tls::Trust,
    pub mode: AgentMode,
    /// Where the credential is kept (installed mode; BootOS keeps it in memory only).
    pub state_dir: Option<PathBuf>,
    pub boot_mac: Option<String>,
    /// This boot's enrollment nonce (`rackboot.nonce=`; BootOS only).
    pub nonce: Option<String>,
    /// File-system root the inventory and stats are read from ("/").
    pub root: PathBuf,
    /// Where job scripts are written.
    pub workdir: PathBuf,
    /// MACs to enroll with instead of the NICs found (tests and simulations).
    pub macs: Option<Vec<String>>,
    /// Listen for LLDP neighbours (needs root).
    pub lldp: bool,
    /// Act on the machine itself: reboot and power off for those actions, and erase its disks
    /// (off in tests and simulations, whose "machine" is the host running them).
    pub machine_actions: bool,
    /// The ipmitool program the in-band BMC account job runs (its open interface, `/dev/ipmi0`).
    pub ipmitool: PathBuf,
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
    /// The inventory should be (re)sent: after enrolling, and when a new LLDP neighbour is heard.
    inventory_due: Arc<AtomicBool>,
    /// Rung with `inventory_due` by the LLDP listener: a long-poll in progress does not hold a
    /// new neighbour back until it ends (25 s), the inventory goes on a second connection.
    inventory_wake: Arc<tokio::sync::Notify>,
    stats_task: Option<tokio::task::JoinHandle<()>>,
}

impl Agent {
    pub fn new(opts: Options) -> anyhow::Result<Agent> {
        let client = Client::new(&opts.url, &opts.trust)?;
        let lldp: lldp::Neighbours = Arc::default();
        let inventory_due = Arc::new(AtomicBool::new(false));
        let inventory_wake = Arc::new(tokio::sync::Notify::new());
        let agent = Agent { opts, client, session: None, lldp, inventory_due, inventory_wake, stats_task: None };
        if agent.opts.lldp {
            lldp::spawn_listener(agent.lldp_feed());
        }
        Ok(agent)
    }

    /// What a heard LLDP frame is given to: it records the neighbour and, when that changes what
    /// the agent knows, has the inventory sent again at once. The listener thread calls it; a
    /// test can too.
    pub fn lldp_feed(&self) -> impl Fn(crate::wire::LldpNeighbor) + Send + Sync + 'static {
        let (found, due, wake) = (self.lldp.clone(), self.inventory_due.clone(), self.inventory_wake.clone());
        move |n| {
            if lldp::record(&found, n) {
                due.store(true, Ordering::Relaxed);
                wake.notify_one();
            }
        }
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
                Ok(Next::Reenroll) => {
                    // Not at once: two nodes claiming the same MACs would otherwise replace each
                    // other's credential in a tight loop.
                    self.drop_session();
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
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
            let _ = std::fs::remove_file(dir.join("session.json"));
        }
    }

    fn macs(&self) -> Vec<String> {
        self.opts.macs.clone().unwrap_or_else(|| inventory::macs(&self.opts.root))
    }

    /// Enrolls (an installed node renews with its saved credential), then queues the inventory
    /// and starts the stats loop.
    async fn enroll(&mut self) -> anyhow::Result<()> {
        // An installed node renews with the credential it was given (the appliance accepts a
        // holder of the machine's current credential at once); a refused one means starting over.
        let saved = self.opts.state_dir.as_ref().and_then(|d| std::fs::read_to_string(d.join("session.json")).ok());
        let saved: Option<EnrollResponse> = saved.and_then(|s| serde_json::from_str(&s).ok());
        let dmi = inventory::dmi(&self.opts.root);
        let (nonce, boot_mac) = match self.opts.nonce.as_deref() {
            Some(crate::wire::NONCE_OVER_TLS) if saved.is_none() => self.fetch_nonce().await,
            Some(crate::wire::NONCE_OVER_TLS) => (None, self.opts.boot_mac.clone()),
            _ => (self.opts.nonce.clone(), self.opts.boot_mac.clone()),
        };
        let req = EnrollRequest {
            macs: self.macs(),
            boot_mac,
            serial: dmi.serial,
            system_uuid: dmi.uuid,
            mode: self.opts.mode,
            version: env!("CARGO_PKG_VERSION").to_string(),
            nonce,
        };
        self.client.credential = saved.as_ref().map(|s| s.credential.clone());
        let mut r = self.client.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(30)).await?;
        // Only a refused credential means starting over; an appliance that is restarting (5xx,
        // no answer) is retried with the credential kept.
        if r.status == 401 && saved.is_some() {
            self.client.credential = None;
            r = self.client.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(30)).await?;
        }
        anyhow::ensure!(r.ok(), "enroll: HTTP {}: {}", r.status, r.error_text());
        let resp: EnrollResponse = r.json()?;
        if let Some(dir) = &self.opts.state_dir {
            save_session(dir, &resp)?;
        }
        tracing::info!(machine = resp.machine_id, approved = resp.approved, renewed = saved.is_some(), "enrolled");
        self.client.credential = Some(resp.credential.clone());
        self.session = Some(resp.clone());
        // The inventory goes first thing in the poll loop, which also sorts out a refusal
        // (not approved yet: wait; credential refused: enroll again).
        self.inventory_due.store(true, Ordering::Relaxed);
        self.start_stats(&resp);
        Ok(())
    }

    /// This boot's nonce and boot MAC, asked for over the pinned TLS session (a BootOS image
    /// with no per-machine command line); none when the appliance gives none (the machine then
    /// enrolls as a boot without a nonce does: an operator approves it).
    async fn fetch_nonce(&mut self) -> (Option<String>, Option<String>) {
        let req = crate::wire::NonceRequest { macs: self.macs() };
        match self.client.call(Method::POST, "/agent/v1/nonce", Some(&req), Duration::from_secs(30)).await {
            Ok(r) if r.ok() => match r.json::<crate::wire::NonceResponse>() {
                Ok(n) => (Some(n.nonce), Some(n.mac)),
                Err(error) => {
                    tracing::warn!(error = format!("{error:#}"), "the appliance's nonce answer is unreadable");
                    (None, self.opts.boot_mac.clone())
                }
            },
            Ok(r) => {
                tracing::warn!(status = r.status, why = r.error_text(), "no boot nonce from the appliance");
                (None, self.opts.boot_mac.clone())
            }
            Err(error) => {
                tracing::warn!(error = format!("{error:#}"), "asking for the boot nonce");
                (None, self.opts.boot_mac.clone())
            }
        }
    }

    /// Collects (off the async thread: ipmitool can take seconds) and uploads the inventory.
    /// `Ok(status)` is the appliance's answer.
    async fn send_inventory(&mut self) -> anyhow::Result<u16> {
        push_inventory(&self.opts.root, &self.lldp, &mut self.client).await
    }

    fn start_stats(&mut self, resp: &EnrollResponse) {
        if let Some(t) = self.stats_task.take() {
            t.abort();
        }
        let (url, cred, root) = (self.opts.url.clone(), resp.credential.clone(), self.opts.root.clone());
        let trust = self.opts.trust.clone();
        let every = Duration::from_secs(resp.stats_secs.max(1));
        self.stats_task = Some(tokio::spawn(async move {
            let Ok(mut c) = Client::new(&url, &trust) else { return };
            c.credential = Some(cred);
            loop {
                // statvfs on a hung mount would block: off the async thread.
                let r = root.clone();
                let Ok(s) = tokio::task::spawn_blocking(move || stats::collect(&r)).await else { return };
                if let Err(error) = c.call(Method::POST, "/agent/v1/stats", Some(&s), Duration::from_secs(15)).await {
                    tracing::debug!(%error, "stats not sent");
                }
                tokio::time::sleep(every).await;
            }
        }));
    }

    /// One long-poll, and the job it brings.
    async fn poll_once(&mut self) -> anyhow::Result<Next> {
        if self.inventory_due.swap(false, Ordering::Relaxed) {
            match self.send_inventory().await {
                Ok(401) => return Ok(Next::Reenroll),
                Ok(403) => self.inventory_due.store(true, Ordering::Relaxed), // after approval
                Ok(_) => {}
                Err(error) => {
                    self.inventory_due.store(true, Ordering::Relaxed);
                    return Err(error);
                }
            }
        }
        let wait = self.session.as_ref().map_or(25, |s| s.poll_secs);
        let path = format!("/agent/v1/jobs/next?wait={wait}");
        let r = long_poll(
            &mut self.client,
            &path,
            Duration::from_secs(wait + 15),
            Beside { opts: &self.opts, lldp: &self.lldp, due: &self.inventory_due, wake: &self.inventory_wake },
        )
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
        if self.opts.machine_actions {
            let plugin_reboot = matches!(spec.action, Action::Plugin { reboot: true, .. })
                && result.plugin.as_ref().is_some_and(|p| p.result == crate::wire::PluginResult::AppliedReboot);
            if plugin_reboot {
                if self.opts.mode == AgentMode::Bootos {
                    // Back into BootOS, whatever the firmware's boot order says.
                    let said = crate::bootnext::network_next(&self.macs());
                    tracing::info!(%said, "rebooting for the plugin");
                }
                power(nix::sys::reboot::RebootMode::RB_AUTOBOOT);
            }
            match spec.action {
                Action::Reboot { .. } => power(nix::sys::reboot::RebootMode::RB_AUTOBOOT),
                Action::PowerOff => power(nix::sys::reboot::RebootMode::RB_POWER_OFF),
                _ => {}
            }
        }
        Ok(Next::Continue)
    }
}

/// What a long-poll needs to send a newly heard LLDP neighbour beside it.
struct Beside<'a> {
    opts: &'a Options,
    lldp: &'a lldp::Neighbours,
    due: &'a AtomicBool,
    wake: &'a tokio::sync::Notify,
}

/// Waits for the poll on `client`. A neighbour heard meanwhile goes out beside it, on a second
/// connection, not after it (once per poll): the poll is never dropped, so a job it brings is
/// never lost.
async fn long_poll(client: &mut Client, path: &str, timeout: Duration, b: Beside<'_>) -> anyhow::Result<Reply> {
    let credential = client.credential.clone();
    let poll = client.call::<()>(Method::GET, path, None, timeout);
    tokio::pin!(poll);
    loop {
        tokio::select! {
            r = &mut poll => return r,
            () = b.wake.notified() => {
                if !b.due.swap(false, Ordering::Relaxed) {
                    continue;
                }
                let sent = async {
                    let mut side = Client::new(&b.opts.url, &b.opts.trust)?;
                    side.credential = credential.clone();
                    push_inventory(&b.opts.root, b.lldp, &mut side).await
                };
                match sent.await {
                    Ok(s) if s != 401 && s != 403 => {}
                    // Sorted out by the poll loop (enroll again, or wait for approval).
                    Ok(_) => b.due.store(true, Ordering::Relaxed),
                    Err(error) => {
                        tracing::debug!(error = format!("{error:#}"), "inventory not sent beside the poll");
                        b.due.store(true, Ordering::Relaxed);
                    }
                }
                // One inventory beside each poll at most: a neighbour on the VLAN sending
                // ever-changing LLDP frames gets the rest folded into the loop's next one.
                return poll.await;
            }
        }
    }
}

/// Collects (off the async thread: ipmitool can take seconds) and uploads the inventory over
/// `client`. `Ok(status)` is the appliance's answer.
async fn push_inventory(root: &std::path::Path, lldp: &lldp::Neighbours, client: &mut Client) -> anyhow::Result<u16> {
    let root = root.to_path_buf();
    let mut inv = tokio::task::spawn_blocking(move || inventory::collect(&root)).await?;
    inv.lldp = lldp.lock().expect("lldp lock").clone();
    let r = client.call(Method::PUT, "/agent/v1/inventory", Some(&inv), Duration::from_secs(30)).await?;
    if !r.ok() && r.status != 401 && r.status != 403 {
        anyhow::bail!("inventory: HTTP {}: {}", r.status, r.error_text());
    }
    Ok(r.status)
}

/// Writes the session (with the credential) readable by root only, from the first byte.
fn save_session(dir: &std::path::Path, resp: &EnrollResponse) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join("session.json.tmp");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    f.write_all(&serde_json::to_vec(resp)?)?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join("session.json"))?;
    Ok(())
}

fn power(mode: nix::sys::reboot::RebootMode) {
    nix::unistd::sync();
    let Err(error) = nix::sys::reboot::reboot(mode);
    tracing::error!(%error, ?mode, "reboot syscall failed");
}
