//! What the engine reads before it decides about a bound run: the machine, its agent, the job
//! the run is at (with an image write's or erase's progress, and a commissioning job's results
//! judged against its profile), the BMC, the concurrency in use.

use std::collections::HashMap;

use super::action::IdentityInputs;
use super::decide::bios::BiosObserved;
use super::decide::firmware::FirmwareObserved;
use super::decide::Observed;
use super::engine::Engine;
use super::{profile_fits, Run, Step, Task};
use crate::cmdb::{now_ms, TokenUse};
use crate::jobs::JobState;

/// The Tang server's URL and advertisement.
type Tang = (String, String);

impl Engine {
    /// Reads what a decision about a bound run looks at.
    pub(super) async fn observe(
        &self,
        run: &Run,
        task: &Task,
        in_flight: &HashMap<u64, u32>,
    ) -> anyhow::Result<Observed> {
        let cmdb = &self.hub.cmdb;
        let mid = run.machine_id.expect("a bound run");
        let profile = self.profile(task);
        let mut o = Observed {
            now_ms: now_ms(),
            stats_secs: self.hub.cfg.stats.as_secs(),
            slots_in_use: in_flight.get(&task.id).copied().unwrap_or(0),
            configure_scripts: profile.map_or(0, |p| p.scripts.len() + p.plugins.len()),
            ..Default::default()
        };
        o.machine = match cmdb.machine(mid).await {
            Ok(m) => Some(m),
            Err(crate::cmdb::CmdbError::NotFound(_)) => return Ok(o),
            Err(e) => return Err(e.into()),
        };
        let machine = o.machine.as_ref().expect("read above");
        o.agent = cmdb.agent(mid).await?;
        let mut redfish = false;
        if let (Some(_), Some(bmc)) = (self.power.get(), cmdb.bmc(mid).await?) {
            // The BMC's boot mode, else the last architecture DHCP saw; else UEFI.
            o.bmc_uefi = Some(match bmc.boot_mode {
                Some(mode) => mode == crate::bmc::BootMode::Uefi,
                None => !machine.last_arch.as_deref().is_some_and(|a| a.starts_with("bios")),
            });
            redfish = bmc.protocol == crate::bmc::Protocol::Redfish;
            o.bmc_vmedia = bmc.boot_via == crate::bmc::model::BootVia::VirtualMedia;
        }
        if let Some(p) = profile.filter(|p| !p.bios.is_empty() || !p.firmware_certificates.is_empty()) {
            // The outcome of the call made for the run's current phase (another is stale).
            let outcome = run.bios.and_then(|phase| {
                let outcomes = self.bios_outcomes.lock().expect("bios outcomes lock");
                outcomes.get(&run.id).filter(|(at, _)| *at == phase.at_ms()).map(|(_, o)| o.clone())
            });
            let (settings, certificates) = (p.bios.clone(), p.firmware_certificates.clone());
            o.bios = Some(BiosObserved { settings, certificates, redfish, outcome });
        }
        if let (Some(p), Some(_)) = (profile, self.firmware.get()) {
            if let Some(baseline) = p.firmware_baseline.clone() {
                // The update asked in the run's current phase (another is stale; none: lost).
                let outcome = run.firmware.and_then(|phase| {
                    let outcomes = self.firmware_outcomes.lock().expect("firmware outcomes lock");
                    outcomes.get(&run.id).filter(|(at, _)| *at == phase.at_ms()).map(|(_, o)| o.clone())
                });
                o.firmware = Some(FirmwareObserved { baseline, redfish, outcome, ..Default::default() });
            }
        }
        o.profile_fits = profile
            .is_none_or(|p| profile_fits(&p.vendors, &p.models, machine.vendor.as_deref(), machine.model.as_deref()));
        let from = o.agent.as_ref().and_then(|a| a.enrolled_from.as_deref());
        if run.step.is_job() {
            match run.job {
                None => {
                    o.action = Some(match (run.step, profile) {
                        // Past its scripts, a profile's configure steps are its plugins.
                        (Step::Configure(i), Some(p)) if i >= p.scripts.len() => {
                            match p.plugins.get(i - p.scripts.len()) {
                                Some(r) => crate::plugins::usage::step_action(cmdb, &p.name, r, machine).await,
                                None => Err("the hardware profile has fewer plugins now".into()),
                            }
                        }
                        (Step::Identity, _) => {
                            let net = super::network::effective(cmdb, &self.cfg.networks, machine).await?;
                            let tang = self.tang_binding(run, task, mid).await?;
                            let seed_token = match super::action::seed_mac(machine) {
                                Some(mac) => cmdb.issue_boot_token(mac, TokenUse::Seed, String::new(), None).await?,
                                None => String::new(),
                            };
                            tang.and_then(|tang| {
                                net.files().and_then(|files| {
                                    let identity = IdentityInputs { files, tang, seed_token };
                                    self.action(run.step, (run, task, machine), identity, from)
                                })
                            })
                        }
                        // Booted from virtual media: the OS powers off, the BMC starts the disk.
                        (Step::Reboot, _) if o.bmc_vmedia => Ok(rackboot_agent::wire::Action::PowerOff),
                        _ => self.action(run.step, (run, task, machine), IdentityInputs::default(), from),
                    })
                }
                Some(jid) => {
                    let job = cmdb.job(jid).await?;
                    let prefix = match run.step {
                        Step::Install if task.spec.image.is_some() => Some("deploy: "),
                        Step::Erase => Some("erase: "),
                        _ => None,
                    };
                    if let (JobState::Running, Some(prefix)) = (job.state, prefix) {
                        o.job_percent = job_percent(&cmdb.last_output(jid, 4).await?, prefix);
                    }
                    let ended = !matches!(job.state, JobState::Queued | JobState::Running);
                    if let (Step::Commission, true, Some(profile)) = (run.step, ended, task.spec.test_profile()) {
                        o.tests = Some(self.judge(jid, &job, profile).await?);
                    }
                    o.job = Some(job);
                }
            }
        }
        if run.step == Step::Firmware && o.firmware.as_ref().is_some_and(|f| !f.redfish) {
            self.observe_inband_firmware(run, &mut o).await?;
        }
        Ok(o)
    }

    /// For a layout with encrypted file systems: the machine's volumes recorded as bound to the
    /// Tang server's advertised key, and its URL and advertisement for the script.
    async fn tang_binding(&self, run: &Run, task: &Task, mid: u64) -> anyhow::Result<Result<Option<Tang>, String>> {
        let Some(layout) = task.spec.layout.as_ref().filter(|l| l.encrypts()) else { return Ok(Ok(None)) };
        let Some(tang) = self.tang.get() else {
            return Ok(Err("this appliance has no Tang server to bind encrypted file systems to".into()));
        };
        let volumes = layout
            .filesystems
            .iter()
            .filter(|f| f.encrypted)
            .map(|f| format!("/dev/{}/{}", crate::provision::VOLUME_GROUP, f.volume()))
            .collect();
        match tang.bind(mid, run.id, volumes).await {
            Ok(found) => Ok(Ok(Some(found))),
            Err(crate::tang::TangError::Cmdb(e)) => Err(e.into()),
            Err(e) => Ok(Err(e.to_string())),
        }
    }

    /// A commissioning job's results: its last attempt's output judged against the profile (a
    /// job that did not succeed is a failed test too).
    async fn judge(
        &self,
        jid: u64,
        job: &crate::jobs::Job,
        profile: &str,
    ) -> anyhow::Result<Vec<crate::commission::TestResult>> {
        let text: String =
            self.hub.cmdb.output(jid).await?.into_iter().filter(|c| c.attempt == job.attempt).map(|c| c.data).collect();
        let error = match (&job.state, &job.error, job.exit_code) {
            (JobState::Succeeded, _, _) => None,
            (_, Some(e), _) => Some(e.clone()),
            (s, None, c) => Some(format!("the job ended {s:?} (exit code {c:?})").to_lowercase()),
        };
        Ok(match self.cfg.test_profiles.get(profile) {
            Some(p) => crate::commission::judge(p, &text, error.as_deref()),
            None => crate::commission::judge(
                &crate::commission::TestProfile { name: profile.into(), ..Default::default() },
                "",
                Some(&format!("test profile {profile:?} is gone from the config")),
            ),
        })
    }
}

/// The newest percentage a deploy_image or erase job reported (`deploy: 42% ...` lines, with
/// `prefix` "deploy: ").
fn job_percent(chunks: &[crate::cmdb::StoredChunk], prefix: &str) -> Option<u8> {
    chunks.iter().rev().find_map(|c| {
        let line = c.data.lines().rev().find(|l| l.starts_with(prefix) && l.contains('%'))?;
        line[prefix.len()..].split('%').next()?.trim().parse::<u8>().ok().map(|p| p.min(100))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rackboot_agent::wire::Stream;

    fn chunk(data: &str) -> crate::cmdb::StoredChunk {
        crate::cmdb::StoredChunk { attempt: 1, seq: 0, stream: Stream::Stdout, data: data.into(), at_ms: 0 }
    }

    #[test]
    fn job_percent_is_the_newest_reported() {
        assert_eq!(job_percent(&[], "deploy: "), None);
        assert_eq!(job_percent(&[chunk("deploy: 1048576 bytes, 3.0 MB/s\n")], "deploy: "), None, "no size known");
        let chunks = [
            chunk("deploy: 12% 1048576 bytes, 3.0 MB/s\n"),
            chunk("deploy: 40% 4194304 bytes, 3.1 MB/s\ndeploy: 57% 5000000 bytes, 3.1 MB/s\n"),
            chunk("something else\n"),
        ];
        assert_eq!(job_percent(&chunks, "deploy: "), Some(57));
        assert_eq!(job_percent(&[chunk("deploy: 100% 9 bytes in 0.1 s (1 MB/s), sha256 ok\n")], "deploy: "), Some(100));
        let erase = [chunk("erase: quick of /dev/vda (2147483648 bytes): 142606336 bytes to write\nerase: 37% 52428800 of 142606336 bytes, 20.1 MB/s (/dev/vda)\n")];
        assert_eq!(job_percent(&erase, "erase: "), Some(37));
        assert_eq!(job_percent(&erase, "deploy: "), None);
    }
}
