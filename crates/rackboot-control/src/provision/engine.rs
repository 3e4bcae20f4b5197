//! The provisioning engine: walks every active run one step at a time, every second, whenever
//! something happens (a task is created, a job ends), and at once after a pass that moved a run
//! to a step of its own. It keeps no state of its own:
//! each decision reads the run, its machine, its agent and its job from the CMDB and writes the
//! run back, so a restart picks every run up where it was.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rackboot_agent::wire::AgentMode;
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::decide::bios::{BiosCall, BiosOutcome};
use super::decide::firmware::FirmwareOutcome;
use super::decide::{decide, Decision, Effect};
use super::{Run, RunState, Step, Task, TaskState};
use crate::cmdb::EventKind;
use crate::cmdb::{now_ms, now_secs, InstallerBoot, MachineFilter, MachineState, MachineUpdate};
use crate::config::{HardwareProfile, ProvisionConfig};
use crate::controller::Hub;
use crate::render::Renderer;
use rackboot_model::bios::FirmwareCert;

/// How many passes may follow one another at once while runs keep moving.
const MAX_QUICK_PASSES: u32 = 8;

pub struct Engine {
    pub hub: Arc<Hub>,
    pub cfg: ProvisionConfig,
    pub renderer: Arc<Renderer>,
    /// Base URL of the appliance for agents and images.
    pub http_base: String,
    /// The DNS domain the installed systems live in.
    pub domain: String,
    /// The HTTPS base URL and the CA (PEM) installed agents are given.
    pub agent_url: String,
    pub ca_pem: String,
    /// The HTTP and HTTPS base URLs on the appliance's IPv6 address (dual-stack): a machine
    /// whose agent came in over IPv6 is given these.
    pub six: Option<(String, String)>,
    /// The appliance's data directory (the certificates BIOS steps enrol).
    data_dir: Option<std::path::PathBuf>,
    wake: Notify,
    passes: std::sync::atomic::AtomicU64,
    /// Powers machines with a BMC up (set once, at start).
    pub(super) power: std::sync::OnceLock<Arc<crate::bmc::Power>>,
    /// The Tang server a layout's encrypted file systems are bound to (set once, at start).
    pub(super) tang: std::sync::OnceLock<Arc<crate::tang::Tang>>,
    /// Boots machines set to it from virtual media (set once, at start).
    pub(super) vmedia: std::sync::OnceLock<Arc<crate::vmedia::VirtualMedia>>,
    /// The commissioning tools' SHA-256, with the file's size and time it was taken at.
    pub(super) tools_sha: std::sync::Mutex<Option<ToolsStamp>>,
    /// What runs' BIOS calls to their BMCs came to: by run, with the phase they were made for.
    pub(super) bios_outcomes: Arc<std::sync::Mutex<HashMap<u64, (u64, BiosOutcome)>>>,
    /// Brings machines to their firmware baselines (set once, at start).
    pub(super) firmware: std::sync::OnceLock<Arc<crate::firmware::Firmware>>,
    /// Where runs' firmware updates are: by run, with the phase they were asked in.
    pub(super) firmware_outcomes: Arc<std::sync::Mutex<HashMap<u64, (u64, FirmwareOutcome)>>>,
}

/// A file's size and modification time, and its SHA-256 then.
pub(super) type ToolsStamp = ((u64, Option<std::time::SystemTime>), String);

impl Engine {
    pub fn new(
        hub: Arc<Hub>,
        cfg: ProvisionConfig,
        renderer: Arc<Renderer>,
        http_base: String,
        domain: String,
        (agent_url, ca_pem): (String, String),
    ) -> Engine {
        let passes = Default::default();
        let power = std::sync::OnceLock::new();
        let tools_sha = std::sync::Mutex::new(None);
        Engine {
            hub,
            cfg,
            renderer,
            http_base,
            domain,
            agent_url,
            ca_pem,
            six: None,
            data_dir: None,
            wake: Notify::new(),
            passes,
            power,
            tang: std::sync::OnceLock::new(),
            vmedia: std::sync::OnceLock::new(),
            tools_sha,
            bios_outcomes: Arc::default(),
            firmware: std::sync::OnceLock::new(),
            firmware_outcomes: Arc::default(),
        }
    }

    /// Where the certificates BIOS steps enrol are kept (the appliance's data directory).
    pub fn with_data_dir(self, data_dir: std::path::PathBuf) -> Engine {
        Engine { data_dir: Some(data_dir), ..self }
    }

    /// The IPv6 base URLs (HTTP, HTTPS) for machines whose agents call in over IPv6.
    pub fn with_ipv6(self, six: Option<(String, String)>) -> Engine {
        Engine { six, ..self }
    }

    /// The (HTTP, HTTPS) base URLs for a machine whose agent came from `from`: the IPv6 ones
    /// for an IPv6 address (not an IPv4-mapped one), where the appliance has them.
    pub(super) fn bases(&self, from: Option<&str>) -> (&str, &str) {
        let v6 =
            from.and_then(|f| f.parse::<std::net::Ipv6Addr>().ok()).is_some_and(|ip| ip.to_ipv4_mapped().is_none());
        match &self.six {
            Some((http, https)) if v6 => (http, https),
            _ => (&self.http_base, &self.agent_url),
        }
    }

    /// Lets runs power machines that have a BMC up through it.
    pub fn use_power(&self, power: Arc<crate::bmc::Power>) {
        let _ = self.power.set(power);
    }

    /// Boots machines whose BMC says so from virtual media.
    pub fn use_vmedia(&self, vmedia: Arc<crate::vmedia::VirtualMedia>) {
        let _ = self.vmedia.set(vmedia);
    }

    /// Brings machines to their hardware profile's firmware baseline in the firmware step.
    pub fn use_firmware(&self, firmware: Arc<crate::firmware::Firmware>) {
        let _ = self.firmware.set(firmware);
    }

    /// Binds layouts' encrypted file systems to this Tang server.
    pub fn use_tang(&self, tang: Arc<crate::tang::Tang>) {
        let _ = self.tang.set(tang);
    }

    /// Runs a step pass now rather than at the next second.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub async fn run(self: Arc<Self>, token: CancellationToken) -> anyhow::Result<()> {
        let mut quick = 0;
        loop {
            let moved = self.tick().await.unwrap_or_else(|error| {
                warn!(error = format!("{error:#}"), "provisioning pass failed");
                false
            });
            // A run that moved to a step of its own (no job to wait for) takes that step in the
            // next pass at once, not a second later; a few in a row at most, so a decision that
            // kept moving could never spin.
            if moved && quick < MAX_QUICK_PASSES && !token.is_cancelled() {
                quick += 1;
                tokio::task::yield_now().await;
                continue;
            }
            quick = 0;
            tokio::select! {
                _ = token.cancelled() => return Ok(()),
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    /// One pass over every active run; whether one of them moved to a new step without a job
    /// to wait for.
    pub async fn tick(&self) -> anyhow::Result<bool> {
        // Now and then (and on the first pass after a start), tasks whose runs all ended while
        // the appliance was going down are marked done.
        if self.passes.fetch_add(1, std::sync::atomic::Ordering::Relaxed).is_multiple_of(60) {
            self.finish_tasks().await?;
        }
        let runs = self.hub.cmdb.active_runs().await?;
        if runs.is_empty() {
            return Ok(false);
        }
        let mut moved = false;
        let mut tasks: HashMap<u64, Task> = HashMap::new();
        let mut in_flight: HashMap<u64, u32> = HashMap::new();
        let mut bound: HashSet<u64> = HashSet::new();
        for r in &runs {
            bound.extend(r.machine_id);
            if r.step != Step::WaitAgent {
                *in_flight.entry(r.task_id).or_default() += 1;
            }
        }
        let mut still_active: HashSet<u64> = HashSet::new();
        let at_bios: HashSet<u64> = runs.iter().filter(|r| r.step == Step::Bios).map(|r| r.id).collect();
        self.bios_outcomes.lock().expect("bios outcomes lock").retain(|id, _| at_bios.contains(id));
        let at_firmware: HashSet<u64> = runs.iter().filter(|r| r.step == Step::Firmware).map(|r| r.id).collect();
        self.firmware_outcomes.lock().expect("firmware outcomes lock").retain(|id, _| at_firmware.contains(id));
        for run in runs {
            if let std::collections::hash_map::Entry::Vacant(e) = tasks.entry(run.task_id) {
                e.insert(self.hub.cmdb.task(run.task_id).await?);
            }
            let task = &tasks[&run.task_id];
            if task.state != TaskState::Active {
                continue;
            }
            let (id, task_id) = (run.id, run.task_id);
            match self.step(run, task, &mut in_flight, &mut bound).await {
                Ok((RunState::Active, saved)) => {
                    moved |= saved;
                    still_active.insert(task_id);
                }
                Ok(_) => {}
                // Someone (an operator's cancel) wrote the run meanwhile: the next pass re-reads it.
                Err(e)
                    if matches!(
                        e.downcast_ref::<crate::cmdb::CmdbError>(),
                        Some(crate::cmdb::CmdbError::Conflict(_))
                    ) =>
                {
                    still_active.insert(task_id);
                }
                Err(error) => {
                    still_active.insert(task_id);
                    warn!(run = id, error = format!("{error:#}"), "provisioning step failed to run");
                }
            }
        }
        for (id, task) in tasks {
            if task.state == TaskState::Active && !still_active.contains(&id) {
                info!(task = id, "task finished");
                self.hub.cmdb.set_task_state(id, TaskState::Done).await?;
            }
        }
        Ok(moved)
    }

    async fn finish_tasks(&self) -> anyhow::Result<()> {
        for task in self.hub.cmdb.tasks(None, 10_000, None).await?.0 {
            if task.state != TaskState::Active {
                continue;
            }
            let runs = self.hub.cmdb.runs(task.runs.clone()).await?;
            if runs.iter().all(|r| r.state != RunState::Active) {
                self.hub.cmdb.set_task_state(task.id, TaskState::Done).await?;
            }
        }
        Ok(())
    }

    /// Whether the agent has been heard from lately (enrolled, or sent stats, within three
    /// stats periods): a machine that was discovered once and is now off does not count.
    fn live(&self, a: &crate::cmdb::AgentRecord) -> bool {
        let since = now_secs().saturating_sub(3 * self.hub.cfg.stats.as_secs().max(10));
        a.enrolled_at >= since || a.stats_at.is_some_and(|t| t >= since)
    }

    pub(super) fn profile(&self, task: &Task) -> Option<&HardwareProfile> {
        task.spec.hardware_profile.as_ref().and_then(|n| self.cfg.hardware_profiles.get(n))
    }

    /// Advances one run as far as it can go now; returns its state afterwards. Reads what the
    /// decision needs, lets [`decide`] choose, and carries out its effects.
    async fn step(
        &self,
        mut run: Run,
        task: &Task,
        in_flight: &mut HashMap<u64, u32>,
        bound: &mut HashSet<u64>,
    ) -> anyhow::Result<(RunState, bool)> {
        if run.machine_id.is_none() && !self.bind(&mut run, task, bound).await? {
            return Ok((RunState::Active, false));
        }
        let observed = self.observe(&run, task, in_flight).await?;
        let Decision { run, effects } = decide(&run, task, &observed);
        let mid = run.machine_id.expect("bound above");
        let mut saved = false;
        for effect in effects {
            match effect {
                Effect::TakeSlot => *in_flight.entry(task.id).or_default() += 1,
                Effect::CancelJob(id) => {
                    let _ = self.hub.cmdb.cancel_job(id).await;
                }
                Effect::StartJob { job, event, mut update, installer } => {
                    if let Some(i) = installer {
                        // A new token when this run's installer has none yet.
                        let token = match i.keep_token {
                            Some(t) => t,
                            None => Hub::new_secret().map_err(|e| anyhow::anyhow!("{e}"))?.0,
                        };
                        let boot = InstallerBoot { profile: i.profile, run: run.id, token, reported: false };
                        update.installer = Some(Some(boot));
                    }
                    self.hub.cmdb.start_step_job(run.clone(), job, event, update).await?;
                    self.hub.wake(mid);
                }
                Effect::Save { update, event } => {
                    self.hub.cmdb.save_run(run.clone(), update, Some(event)).await?;
                    saved = true;
                }
                Effect::PowerOn { uefi } => self.power_on(mid, uefi),
                Effect::Bios(call) => self.bios_call(run.id, mid, call),
                Effect::Firmware(call) => self.firmware_call(run.id, mid, call),
                Effect::BootDisk { uefi } => {
                    let Some(power) = self.power.get().cloned() else { continue };
                    tokio::spawn(async move {
                        if let Err(error) = power.boot_disk_once(mid, uefi).await {
                            warn!(machine = mid, %error, "the installed system could not be started from its disk");
                        }
                    });
                }
            }
        }
        Ok((run.state, saved))
    }

    /// Into BootOS through the machine's BMC, in the background: PXE once, then on (or a cycle
    /// if it is on), or its virtual CD where its BMC says so; the power service records both on
    /// the machine's timeline, and the run sees the agent that boots.
    fn power_on(&self, mid: u64, uefi: bool) {
        let Some(power) = self.power.get().cloned() else { return };
        let (cmdb, vmedia) = (self.hub.cmdb.clone(), self.vmedia.get().cloned());
        tokio::spawn(async move {
            if let Err(error) = into_bootos(&power, &cmdb, vmedia.as_deref(), mid, uefi).await {
                warn!(machine = mid, %error, "provisioning could not power the machine up");
            }
        });
    }

    /// A BIOS step's call to the machine's BMC, in the background; the run's next pass reads
    /// what it came to (a call lost to a restart of the appliance times out in the run).
    fn bios_call(&self, run: u64, mid: u64, call: BiosCall) {
        let Some(power) = self.power.get().cloned() else { return };
        let (cmdb, vmedia) = (self.hub.cmdb.clone(), self.vmedia.get().cloned());
        let outcomes = self.bios_outcomes.clone();
        let data_dir = self.data_dir.clone();
        let pems = move |certs: &[FirmwareCert]| match &data_dir {
            _ if certs.is_empty() => Ok(Vec::new()),
            Some(dir) => super::firmware_certs::pems(dir, certs),
            None => Err("this appliance has no data directory to enrol certificates from".to_string()),
        };
        let failed =
            |e: crate::bmc::power::PowerError| BiosOutcome::Failed { last: !e.transient(), error: e.to_string() };
        tokio::spawn(async move {
            let (at_ms, outcome) = match pems(call.certificates()) {
                // Nothing to enrol from: trying again cannot help.
                Err(error) => (call.at_ms(), BiosOutcome::Failed { error, last: true }),
                Ok(certs) => match call {
                    BiosCall::Apply { settings, uefi, at_ms, .. } => match power
                        .bios_apply(mid, &settings, &certs)
                        .await
                    {
                        Ok(changed) if changed.is_empty() => (at_ms, BiosOutcome::Applied { changed, restarted_ms: 0 }),
                        // The settings apply at the restart, into BootOS the machine's usual way.
                        Ok(changed) => match into_bootos(&power, &cmdb, vmedia.as_deref(), mid, uefi).await {
                            Ok(()) => (at_ms, BiosOutcome::Applied { changed, restarted_ms: now_ms() }),
                            Err(error) => (at_ms, BiosOutcome::Failed { error, last: false }),
                        },
                        Err(e) => (at_ms, failed(e)),
                    },
                    BiosCall::Verify { settings, at_ms, .. } => match power.bios_verify(mid, &settings, &certs).await {
                        Ok(differing) => (at_ms, BiosOutcome::Verified { differing }),
                        Err(e) => (at_ms, failed(e)),
                    },
                },
            };
            if let BiosOutcome::Failed { error, .. } = &outcome {
                warn!(machine = mid, run, %error, "BIOS settings: the BMC call failed");
            }
            outcomes.lock().expect("bios outcomes lock").insert(run, (at_ms, outcome));
        });
    }

    /// Binds a `next` run to a machine whose BootOS agent is live and that no run holds.
    async fn bind(&self, run: &mut Run, task: &Task, bound: &mut HashSet<u64>) -> anyhow::Result<bool> {
        // Only the task's pool's machines are taken.
        let pool = Some(task.spec.pool().to_string());
        let filter =
            MachineFilter { state: Some(MachineState::Ready), pool, limit: Some(100_000), ..Default::default() };
        let ready = self.hub.cmdb.list_machines(filter).await?.machines;
        for m in ready {
            if bound.contains(&m.id) || m.inventory.is_none() {
                continue;
            }
            let Some(a) = self.hub.cmdb.agent(m.id).await? else { continue };
            if !(a.approved && a.mode == AgentMode::Bootos && self.live(&a)) {
                continue;
            }
            let hostname = match &task.spec.hostname_pattern {
                Some(p) => Some(super::hostname(p, run.index, m.macs.first().copied()).map_err(anyhow::Error::msg)?),
                None => m.hostname.clone(),
            };
            run.machine_id = Some(m.id);
            run.hostname = hostname.clone();
            bound.insert(m.id);
            let update = MachineUpdate {
                state: Some(MachineState::Queued),
                hostname,
                reserved_ip: run.ip,
                ..Default::default()
            };
            let detail = json!({"task": task.id, "run": run.id});
            // The write re-checks that no other run took the machine meanwhile.
            self.hub.cmdb.save_run(run.clone(), update, Some((EventKind::ProvisionQueued, detail))).await?;
            run.rev += 1;
            return Ok(true);
        }
        Ok(false)
    }
}

/// Restarts machine `mid` into BootOS through its BMC: its virtual CD where the BMC is set so
/// (and virtual media runs here), else PXE once and a cycle (on from off).
pub(super) async fn into_bootos(
    power: &crate::bmc::Power,
    cmdb: &crate::cmdb::Cmdb,
    vmedia: Option<&crate::vmedia::VirtualMedia>,
    mid: u64,
    uefi: bool,
) -> Result<(), String> {
    use crate::bmc::power::Caller;
    use crate::bmc::PowerAction;
    let via = cmdb.bmc(mid).await.map_err(|e| e.to_string())?.map(|b| b.boot_via).unwrap_or_default();
    if via == crate::bmc::model::BootVia::VirtualMedia {
        let vmedia = vmedia.ok_or("the machine boots from virtual media, which is not running here")?;
        return vmedia.boot(mid, uefi).await;
    }
    for action in [PowerAction::PxeOnce, PowerAction::Cycle] {
        power.act(mid, action, uefi, Caller::Provision).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}
