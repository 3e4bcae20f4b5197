//! The provisioning engine: walks every active run one step at a time, every second and
//! whenever something happens (a task is created, a job ends). It keeps no state of its own:
//! each decision reads the run, its machine, its agent and its job from the CMDB and writes the
//! run back, so a restart picks every run up where it was.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use rackboot_agent::wire::{Action, AgentMode};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{profile_fits, step_name, Run, RunState, Step, Task, TaskState};
use crate::cmdb::{now_ms, now_secs, InstallerBoot, Machine, MachineFilter, MachineState, MachineUpdate};
use crate::config::{HardwareProfile, ProvisionConfig};
use crate::controller::Hub;
use crate::jobs::{JobState, NewJob};
use crate::render::{IdentityVars, Renderer};

/// Deliveries of one step's job before the step counts as failed (a node that reboots under
/// its agent loses the job; it is delivered again).
const JOB_ATTEMPTS: u32 = 3;

pub struct Engine {
    pub hub: Arc<Hub>,
    pub cfg: ProvisionConfig,
    pub renderer: Arc<Renderer>,
    /// Base URL of the appliance for agents and images.
    pub http_base: String,
    /// The DNS domain the installed systems live in.
    pub domain: String,
    wake: Notify,
    passes: std::sync::atomic::AtomicU64,
}

impl Engine {
    pub fn new(
        hub: Arc<Hub>,
        cfg: ProvisionConfig,
        renderer: Arc<Renderer>,
        http_base: String,
        domain: String,
    ) -> Engine {
        Engine { hub, cfg, renderer, http_base, domain, wake: Notify::new(), passes: Default::default() }
    }

    /// Runs a step pass now rather than at the next second.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    pub async fn run(self: Arc<Self>, token: CancellationToken) -> anyhow::Result<()> {
        loop {
            if let Err(error) = self.tick().await {
                warn!(error = format!("{error:#}"), "provisioning pass failed");
            }
            tokio::select! {
                _ = token.cancelled() => return Ok(()),
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = self.wake.notified() => {}
            }
        }
    }

    /// One pass over every active run.
    pub async fn tick(&self) -> anyhow::Result<()> {
        // Now and then (and on the first pass after a start), tasks whose runs all ended while
        // the appliance was going down are marked done.
        if self.passes.fetch_add(1, std::sync::atomic::Ordering::Relaxed).is_multiple_of(60) {
            self.finish_tasks().await?;
        }
        let runs = self.hub.cmdb.active_runs().await?;
        if runs.is_empty() {
            return Ok(());
        }
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
                Ok(RunState::Active) => {
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
        Ok(())
    }

    async fn finish_tasks(&self) -> anyhow::Result<()> {
        for task in self.hub.cmdb.tasks(None, 10_000).await?.0 {
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

    fn profile(&self, task: &Task) -> Option<&HardwareProfile> {
        task.spec.hardware_profile.as_ref().and_then(|n| self.cfg.hardware_profiles.get(n))
    }

    /// Advances one run as far as it can go now; returns its state afterwards.
    async fn step(
        &self,
        mut run: Run,
        task: &Task,
        in_flight: &mut HashMap<u64, u32>,
        bound: &mut HashSet<u64>,
    ) -> anyhow::Result<RunState> {
        let spec = &task.spec;
        let cmdb = &self.hub.cmdb;
        let now = now_ms();
        let n_conf = self.profile(task).map_or(0, |p| p.scripts.len());
        let n_post = spec.post_install.len();
        let timed_out = now.saturating_sub(run.step_started_ms) > spec.step_timeout_secs.saturating_mul(1000);

        if run.machine_id.is_none() && !self.bind(&mut run, task, bound).await? {
            return Ok(RunState::Active);
        }
        let mid = run.machine_id.expect("bound above");
        let machine = match cmdb.machine(mid).await {
            Ok(m) => m,
            Err(crate::cmdb::CmdbError::NotFound(_)) => {
                run.step_failed("the machine was deleted".into(), 0, now);
                return self.save(run, task).await;
            }
            Err(e) => return Err(e.into()),
        };
        let agent = cmdb.agent(mid).await?;
        let bootos_agent = agent.as_ref().is_some_and(|a| {
            a.approved
                && a.mode == AgentMode::Bootos
                && self.live(a)
                && (!run.reboot_requested || a.enrolled_at >= run.step_started_ms / 1000)
        });

        match run.step {
            Step::WaitAgent => {
                let installed_agent = agent.as_ref().is_some_and(|a| a.mode == AgentMode::Installed && a.approved);
                if spec.reinstall && installed_agent && !run.reboot_requested {
                    // Back into BootOS: the machine is `queued`, so PXE boots discovery again.
                    run.reboot_requested = true;
                    run.step_started_ms = now;
                    let detail = json!({"task": task.id, "run": run.id, "step": "wait_agent"});
                    let new = NewJob {
                        action: Action::Reboot,
                        timeout_secs: spec.step_timeout_secs,
                        max_attempts: JOB_ATTEMPTS,
                    };
                    cmdb.start_step_job(run, new, ("provision.reinstall_reboot", detail), MachineUpdate::default())
                        .await?;
                    self.hub.wake(mid);
                    return Ok(RunState::Active);
                }
                let slots = in_flight.entry(task.id).or_default();
                if !bootos_agent || machine.inventory.is_none() || *slots >= spec.concurrency.max(1) {
                    return Ok(RunState::Active);
                }
                *slots += 1;
                run.advance(n_conf, n_post, now);
            }
            Step::Check => {
                let fits = self.profile(task).is_none_or(|p| {
                    profile_fits(&p.vendors, &p.models, machine.vendor.as_deref(), machine.model.as_deref())
                });
                if fits {
                    run.advance(n_conf, n_post, now);
                } else {
                    let why = format!(
                        "hardware profile {:?} does not fit {} {}",
                        spec.hardware_profile.clone().unwrap_or_default(),
                        machine.vendor.clone().unwrap_or_default(),
                        machine.model.clone().unwrap_or_default()
                    );
                    run.step_failed(why, 0, now);
                }
            }
            Step::WaitInstalled => {
                let since = run.installed_after_ms.unwrap_or(run.step_started_ms);
                let back = agent.as_ref().is_some_and(|a| {
                    // enrolled_at has whole seconds: an enrollment in the second the reboot ended counts.
                    a.approved && a.mode == AgentMode::Installed && a.enrolled_at >= since / 1000
                });
                if back {
                    run.advance(n_conf, n_post, now);
                } else if timed_out {
                    run.step_failed("the installed system's agent did not check in".into(), 0, now);
                } else {
                    return Ok(RunState::Active);
                }
            }
            Step::Done => return Ok(run.state),
            step => match run.job {
                None => {
                    let action = match self.action(step, &run, task, &machine) {
                        Ok(a) => a,
                        Err(why) => {
                            run.step_failed(why, 0, now);
                            return self.save(run, task).await;
                        }
                    };
                    let mut detail =
                        json!({"task": task.id, "run": run.id, "step": step_name(step), "progress": run.progress});
                    let mut update = MachineUpdate::default();
                    if let (Step::Install, Some(profile)) = (step, &spec.installer) {
                        if let Some(pin) = &machine.boot_profile {
                            let why = format!(
                                "the machine is pinned to boot profile {pin:?}, which wins over the installer: unpin it"
                            );
                            run.step_failed(why, 0, now);
                            return self.save(run, task).await;
                        }
                        // PXE boots the installer from now on, until it reports back with this
                        // token (a retry keeps the token an installer may already have).
                        let token = match &machine.installer {
                            Some(b) if b.run == run.id => b.token.clone(),
                            _ => crate::controller::Hub::new_secret().map_err(|e| anyhow::anyhow!("{e}"))?.0,
                        };
                        let boot = InstallerBoot { profile: profile.clone(), run: run.id, token, reported: false };
                        update.installer = Some(Some(boot));
                        detail["installer"] = json!(profile);
                    }
                    let new = NewJob { action, timeout_secs: spec.step_timeout_secs, max_attempts: JOB_ATTEMPTS };
                    cmdb.start_step_job(run, new, ("provision.step", detail), update).await?;
                    self.hub.wake(mid);
                    return Ok(RunState::Active);
                }
                Some(jid) => {
                    let job = cmdb.job(jid).await?;
                    match job.state {
                        JobState::Queued | JobState::Running if timed_out => {
                            let _ = cmdb.cancel_job(jid).await;
                            run.step_failed(
                                format!("no result within {} s", spec.step_timeout_secs),
                                spec.retries,
                                now,
                            );
                        }
                        JobState::Running if step == Step::Install && spec.image.is_some() => {
                            // The image write's progress moves the run's (20% to 70%): each 10%
                            // more of the image is an event on the machine's timeline.
                            let Some(pct) = deploy_percent(&cmdb.last_output(jid, 4).await?) else {
                                return Ok(RunState::Active);
                            };
                            let progress = Step::Install.progress() + pct / 2;
                            if progress < run.progress.saturating_add(5) {
                                return Ok(RunState::Active);
                            }
                            run.progress = progress.min(Step::Identity.progress());
                        }
                        JobState::Queued | JobState::Running => return Ok(RunState::Active),
                        // The machine rebooted into its installer; /boot/installed moves the run on
                        // when the installer reports back. A hung installer is not retried: the
                        // machine sits in it until someone power-cycles it.
                        JobState::Succeeded if step == Step::Install && spec.installer.is_some() => {
                            if !timed_out {
                                return Ok(RunState::Active);
                            }
                            let why = format!("the installer did not report back within {} s", spec.step_timeout_secs);
                            run.step_failed(why, 0, now);
                        }
                        JobState::Succeeded => {
                            run.advance(n_conf, n_post, now);
                            if step == Step::Reboot {
                                run.installed_after_ms = Some(job.finished_at_ms.unwrap_or(now));
                            }
                        }
                        other => {
                            let why = match (&job.error, job.exit_code) {
                                (Some(e), _) => e.clone(),
                                (None, Some(c)) => format!("exit code {c}"),
                                (None, None) => "no exit code".into(),
                            };
                            let state = serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_string));
                            run.step_failed(
                                format!("job {jid} {}: {why}", state.unwrap_or_default()),
                                spec.retries,
                                now,
                            );
                        }
                    }
                }
            },
        }
        self.save(run, task).await
    }

    /// Writes the run back with its machine's state and a timeline event.
    async fn save(&self, run: Run, task: &Task) -> anyhow::Result<RunState> {
        let state = run.state;
        let machine_state = match state {
            // A failure after the reboot leaves an installed OS: the machine keeps booting it.
            RunState::Failed if !run.step.installed() => MachineState::Failed,
            _ => run.step.machine_state(),
        };
        let detail = json!({
            "task": task.id, "run": run.id, "step": step_name(run.step), "progress": run.progress,
            "state": run.state, "error": run.error,
        });
        let kind = match state {
            RunState::Installed => "provision.installed",
            RunState::Failed => "provision.failed",
            _ => "provision.step",
        };
        // An ended run leaves no installer boot behind (a power cycle boots discovery again), nor
        // does one whose installed agent has checked in.
        let installer =
            (state != RunState::Active || !matches!(run.step, Step::Install | Step::WaitInstalled)).then_some(None);
        let update = MachineUpdate { state: Some(machine_state), installer, ..Default::default() };
        self.hub.cmdb.save_run(run, update, Some((kind, detail))).await?;
        Ok(state)
    }

    /// Binds a `next` run to a machine whose BootOS agent is live and that no run holds.
    async fn bind(&self, run: &mut Run, task: &Task, bound: &mut HashSet<u64>) -> anyhow::Result<bool> {
        let filter = MachineFilter { state: Some(MachineState::Ready), limit: Some(100_000), ..Default::default() };
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
            let update =
                MachineUpdate { state: Some(MachineState::Queued), hostname, reserved_ip: run.ip, installer: None };
            let detail = json!({"task": task.id, "run": run.id});
            // The write re-checks that no other run took the machine meanwhile.
            self.hub.cmdb.save_run(run.clone(), update, Some(("provision.queued", detail))).await?;
            run.rev += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// The agent action for a job step.
    fn action(&self, step: Step, run: &Run, task: &Task, machine: &Machine) -> Result<Action, String> {
        let spec = &task.spec;
        let disk = target_disk(&spec.disk, machine)?;
        let hostname =
            run.hostname.clone().or_else(|| machine.hostname.clone()).unwrap_or_else(|| format!("node-{}", machine.id));
        let env = |extra: &[(&str, &str)]| {
            let mut e: std::collections::BTreeMap<String, String> =
                [("RACKBOOT_DISK", disk.as_str()), ("RACKBOOT_HOSTNAME", hostname.as_str())]
                    .iter()
                    .chain(extra)
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            e.insert("RACKBOOT_TASK".into(), task.id.to_string());
            e
        };
        let script = |body: String, env| Action::Script { interpreter: "/bin/sh".into(), body, args: vec![], env };
        match step {
            Step::Configure(i) => {
                let p = self.profile(task).ok_or("the hardware profile is gone from the config")?;
                let body = p.scripts.get(i).ok_or("the hardware profile has fewer scripts now")?.clone();
                Ok(script(body, env(&[])))
            }
            // Into the installer (the job's machine update makes PXE boot it).
            Step::Install if spec.installer.is_some() => Ok(Action::Reboot),
            Step::Install => Ok(Action::DeployImage {
                url: format!(
                    "{}/boot/files/images/{}",
                    self.http_base,
                    spec.image.as_deref().ok_or("the task has no image")?
                ),
                sha256: spec.image_sha256.clone().ok_or("the task has no image checksum")?,
                disk,
            }),
            Step::Identity => {
                let vars = IdentityVars {
                    disk: disk.clone(),
                    hostname: hostname.clone(),
                    domain: self.domain.clone(),
                    appliance_url: self.http_base.clone(),
                    ssh_keys: spec.ssh_keys.clone(),
                    session: None,
                };
                Ok(script(self.renderer.identity(&vars).map_err(|e| e.to_string())?, env(&[])))
            }
            Step::Reboot => Ok(Action::Reboot),
            Step::PostInstall(i) => {
                let name = spec.post_install.get(i).ok_or("no such post-install script")?;
                let path = self.cfg.postinstall_dir.join(name);
                let body = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(script(body, env(&[("RACKBOOT_URL", self.http_base.as_str())])))
            }
            other => Err(format!("{} is not a job step", step_name(other))),
        }
    }
}

/// The newest percentage a deploy_image job reported (`deploy: 42% ...` lines).
fn deploy_percent(chunks: &[crate::cmdb::StoredChunk]) -> Option<u8> {
    chunks.iter().rev().find_map(|c| {
        let line = c.data.lines().rev().find(|l| l.starts_with("deploy: ") && l.contains('%'))?;
        line["deploy: ".len()..].split('%').next()?.trim().parse::<u8>().ok().map(|p| p.min(100))
    })
}

/// The disk to install on: the one named, or with "auto" the largest in the inventory.
pub fn target_disk(disk: &str, machine: &Machine) -> Result<String, String> {
    if disk != "auto" {
        return Ok(disk.to_string());
    }
    let inv = machine.inventory.as_ref().ok_or("no inventory to choose a disk from")?;
    let d = inv.disks.iter().max_by_key(|d| d.size_bytes).ok_or("the inventory lists no disk")?;
    Ok(format!("/dev/{}", d.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rackboot_agent::wire::Stream;

    fn chunk(data: &str) -> crate::cmdb::StoredChunk {
        crate::cmdb::StoredChunk { attempt: 1, seq: 0, stream: Stream::Stdout, data: data.into(), at_ms: 0 }
    }

    #[test]
    fn deploy_percent_is_the_newest_reported() {
        assert_eq!(deploy_percent(&[]), None);
        assert_eq!(deploy_percent(&[chunk("deploy: 1048576 bytes, 3.0 MB/s\n")]), None, "no size known");
        let chunks = [
            chunk("deploy: 12% 1048576 bytes, 3.0 MB/s\n"),
            chunk("deploy: 40% 4194304 bytes, 3.1 MB/s\ndeploy: 57% 5000000 bytes, 3.1 MB/s\n"),
            chunk("something else\n"),
        ];
        assert_eq!(deploy_percent(&chunks), Some(57));
        assert_eq!(deploy_percent(&[chunk("deploy: 100% 9 bytes in 0.1 s (1 MB/s), sha256 ok\n")]), Some(100));
    }
}
