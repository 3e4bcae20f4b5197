//! The agent action of a job step: what each step asks the machine's agent to do (a script
//! rendered for the machine, an image to write, a reboot, an erase), and the disks a task's
//! hints and layout pick from the machine's inventory.

use rackboot_agent::wire::Action;

use super::engine::Engine;
use super::{step_name, Run, Step, Task};
use crate::cmdb::Machine;
use crate::render::IdentityVars;

/// What the identity step writes besides the task's own values.
#[derive(Default)]
pub(super) struct IdentityInputs {
    /// The systemd-networkd files of the machine's network.
    pub files: Vec<crate::render::NetFile>,
    /// The Tang server's URL and advertisement its encrypted file systems bind to.
    pub tang: Option<(String, String)>,
    /// The seed token of this install, in the NoCloud seed URL the system keeps.
    pub seed_token: String,
}

impl Engine {
    /// The agent action for a job step. `identity`: the identity step's inputs; `from`: the
    /// address the machine's agent came in from (an IPv6 one is answered with IPv6 URLs).
    pub(super) fn action(
        &self,
        step: Step,
        (run, task, machine): (&Run, &Task, &Machine),
        identity: IdentityInputs,
        from: Option<&str>,
    ) -> Result<Action, String> {
        let IdentityInputs { files: network_files, tang, seed_token } = identity;
        let spec = &task.spec;
        let (http_base, agent_url) = self.bases(from);
        let disk = target_disk(&spec.disk, spec.root_device.as_ref(), machine)?;
        // A declared layout's disks are found before the image is written.
        let layout = spec.layout.as_ref().filter(|l| !l.is_plain());
        let mirror = match layout.and_then(|l| l.mirror.as_ref()) {
            Some(hints) => Some(mirror_disk(hints, &disk, machine)?),
            None => None,
        };
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
            Step::Install if spec.installer.is_some() => Ok(Action::Reboot { network: true, disk: None }),
            Step::Install => {
                let image = spec.image.as_deref().ok_or("the task has no image")?;
                let sum = spec.image_sha256.as_deref().ok_or("the task has no image checksum")?;
                // A qcow2 image goes out as its raw conversion (made when the task was created).
                let (path, sha256) = super::images::served(&self.cfg.images_dir, image, sum)?;
                Ok(Action::DeployImage { url: format!("{http_base}/boot/files/images/{path}"), sha256, disk })
            }
            Step::Identity => {
                let vars = IdentityVars {
                    disk: layout.and_then(|l| l.root_device()).unwrap_or_else(|| disk.clone()),
                    hostname: hostname.clone(),
                    domain: self.domain.clone(),
                    appliance_url: http_base.to_string(),
                    agent_url: agent_url.to_string(),
                    ca_pem: self.ca_pem.clone(),
                    // BootOS copies its own agent: nothing is downloaded.
                    agent_sha256: String::new(),
                    ssh_keys: spec.ssh_keys.clone(),
                    session: None,
                    network_files,
                    cloud_init_url: cloud_init_url(http_base, machine, &seed_token),
                    boot_mac: boot_mac(machine),
                };
                let mut body = match layout {
                    // The layout first, in the same job: the identity step's disk is its root.
                    Some(l) => {
                        let mut vars = crate::render::LayoutVars::new(l, &disk, mirror.as_deref());
                        if let Some(tang) = tang {
                            vars = vars.with_tang(tang);
                        }
                        self.renderer.layout(&vars).map_err(|e| e.to_string())? + "\n"
                    }
                    None => String::new(),
                };
                body += &self.renderer.identity(&vars).map_err(|e| e.to_string())?;
                Ok(script(body, env(&[])))
            }
            // Into the new system: its disk once, past a network-first boot order (UEFI).
            Step::Reboot => Ok(Action::Reboot { network: false, disk: Some(disk.clone()) }),
            Step::Erase => {
                let crate::provision::Purpose::Release { erase, .. } = spec.purpose else {
                    return Err("only a release erases disks".into());
                };
                Ok(Action::Erase { disks: all_disks(machine)?, mode: erase })
            }
            Step::Commission => {
                let profile = spec.test_profile().ok_or("this run has no test profile")?;
                let p = self
                    .cfg
                    .test_profiles
                    .get(profile)
                    .ok_or_else(|| format!("no test profile {profile:?} in the config"))?;
                let disks: Vec<String> =
                    all_disks(machine)?.iter().map(|d| d.trim_start_matches("/dev/").to_string()).collect();
                let server = rackboot_base::net::url_host(http_base).unwrap_or_default();
                let vars = crate::render::CommissionVars::new(
                    p,
                    self.test_tools()?,
                    &disks,
                    (server, crate::config::IPERF3_PORT),
                );
                Ok(script(self.renderer.commission(&vars).map_err(|e| e.to_string())?, env(&[])))
            }
            Step::Rescue => {
                let crate::provision::Purpose::Rescue { mount } = spec.purpose else {
                    return Err("only a rescue has a rescue step".into());
                };
                Ok(script(self.renderer.rescue(mount).map_err(|e| e.to_string())?, env(&[])))
            }
            Step::PostInstall(i) => {
                let name = spec.post_install.get(i).ok_or("no such post-install script")?;
                let path = self.cfg.postinstall_dir.join(name);
                let body = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(script(body, env(&[("RACKBOOT_URL", http_base)])))
            }
            other => Err(format!("{} is not a job step", step_name(other))),
        }
    }
}

impl Engine {
    /// The commissioning tools' overlay: its URL and SHA-256 (hashed when it changed).
    fn test_tools(&self) -> Result<(String, String), String> {
        let name = &self.cfg.test_tools;
        let boot = self.cfg.images_dir.parent().ok_or("no boot directory")?;
        let path = boot.join(name);
        let meta = std::fs::metadata(&path).map_err(|e| {
            format!("the test tools {} are missing ({e}): build them with bootos/tools.sh {0}", path.display())
        })?;
        let stamp = (meta.len(), meta.modified().ok());
        let known = self.tools_sha.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let sum = match known {
            Some((s, sum)) if s == stamp => sum,
            // Hashed with the lock released (the file is tens of MB; once per change of it).
            _ => {
                let sum = super::sha256_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                *self.tools_sha.lock().unwrap_or_else(|e| e.into_inner()) = Some((stamp, sum.clone()));
                sum
            }
        };
        Ok((format!("{}/boot/files/{name}", self.http_base), sum))
    }
}

/// Machine `m`'s NoCloud seed URL: by its first MAC (no secret) and the seed token of this
/// install (issued under that MAC, see [`seed_mac`]).
pub fn cloud_init_url(http_base: &str, m: &Machine, token: &str) -> String {
    m.macs.first().map(|mac| format!("{http_base}/boot/cloud-init/{mac}/{token}/")).unwrap_or_default()
}

/// The MAC a machine's seed token is issued under: the first, which its seed URL names.
pub fn seed_mac(m: &Machine) -> Option<crate::mac::Mac> {
    m.macs.first().copied()
}

/// The MAC a machine provisions through, as the identity step's network takes it: its first.
pub fn boot_mac(m: &Machine) -> String {
    m.macs.first().map(|mac| mac.to_string()).unwrap_or_default()
}

/// The disk to install on: the one named; with "auto" the one the root-device hints pick from
/// the inventory (exactly one), or else the largest there.
pub fn target_disk(
    disk: &str,
    hints: Option<&crate::provision::RootDeviceHints>,
    machine: &Machine,
) -> Result<String, String> {
    if disk != "auto" {
        return Ok(disk.to_string());
    }
    let inv = machine.inventory.as_ref().ok_or("no inventory to choose a disk from")?;
    let d = match hints {
        Some(h) => h.pick(&inv.disks)?,
        None => inv.disks.iter().max_by_key(|d| d.size_bytes).ok_or("the inventory lists no disk")?,
    };
    Ok(format!("/dev/{}", d.name))
}

/// Every disk the inventory lists, as device paths (what a release erases).
fn all_disks(machine: &Machine) -> Result<Vec<String>, String> {
    let inv = machine.inventory.as_ref().ok_or("no inventory: the disks to erase are not known")?;
    if inv.disks.is_empty() {
        return Err("the inventory lists no disk to erase".into());
    }
    Ok(inv.disks.iter().map(|d| format!("/dev/{}", d.name)).collect())
}

/// The mirror's disk: the one the hints pick, which must not be the root disk.
fn mirror_disk(hints: &crate::provision::RootDeviceHints, root: &str, machine: &Machine) -> Result<String, String> {
    let inv = machine.inventory.as_ref().ok_or("no inventory to choose the mirror's disk from")?;
    let d = hints.pick(&inv.disks).map_err(|e| format!("layout.mirror: {e}"))?;
    let dev = format!("/dev/{}", d.name);
    if dev == root {
        return Err(format!("layout.mirror picks {dev}, the root disk itself: it needs a second disk"));
    }
    Ok(dev)
}
