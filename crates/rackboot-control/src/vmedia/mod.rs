//! BootOS from virtual media, where no DHCP answers a machine (an edge site, a routed
//! fabric): for a machine whose BMC is set with `boot_via = "virtual-media"` (Redfish), the
//! appliance makes a small ISO of BootOS with the machine's command line (the appliance's URL,
//! the CA pin, a one-time enrollment nonce, its static address), serves it over HTTPS at
//! `/vmedia/{machine}.iso` to that BMC only (its address, and a one-time password the BMC is
//! given with the URL), has the BMC insert it, boot from it once and power-cycle, and ejects it
//! once BootOS has called in (or after `bmc.vmedia_ttl_secs`).
//!
//! - [`iso`]: the ISO (`grub-mkrescue`) and the static address on the command line.

pub mod iso;

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rackboot_model::network::Network;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::bmc::model::BootVia;
use crate::bmc::{Power, Protocol};
use crate::cmdb::{now_ms, Cmdb, EventKind, Machine, Sighting};
use crate::config::Profile;
use crate::render::ScriptVars;
use iso::StaticNet;

/// The user name the BMC fetches the ISO with.
pub const USER: &str = "rackboot-vmedia";
/// How often inserted media are looked at.
const SWEEP: Duration = Duration::from_secs(5);

/// What the service needs of the appliance.
pub struct Settings {
    /// Where the ISOs are made and kept while inserted (`<data_dir>/vmedia`).
    pub dir: PathBuf,
    /// The boot directory (BootOS's kernel and initrd).
    pub boot_root: PathBuf,
    pub tool: PathBuf,
    pub ttl: Duration,
    pub http_base: String,
    pub agent_url: String,
    pub ca_pin: String,
    pub discovery_profile: String,
    pub profiles: BTreeMap<String, Profile>,
    pub templates: crate::templates::Templates,
    /// Named networks (a machine's static address from its network spec).
    pub networks: Vec<Network>,
    /// DHCP subnets (a reserved address's prefix and router).
    pub subnets: Vec<rackboot_config::Subnet>,
    pub nonce_ttl_secs: u64,
}

/// One inserted ISO.
struct Session {
    mac: crate::mac::Mac,
    password_sha256: [u8; 32],
    path: PathBuf,
    /// The BMC's addresses: only they may fetch it.
    peers: Vec<IpAddr>,
    at_ms: u64,
    fetches: u32,
}

/// Why a fetch of an ISO was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No ISO is inserted for that machine.
    NotFound,
    /// Missing or wrong credentials.
    Unauthorized,
    /// Right credentials from another address than the BMC's.
    Forbidden,
}

/// The virtual-media service.
pub struct VirtualMedia {
    s: Settings,
    cmdb: Cmdb,
    power: Arc<Power>,
    sessions: Mutex<HashMap<u64, Session>>,
}

impl VirtualMedia {
    /// The service; what an earlier run left in its directory is removed.
    pub fn new(s: Settings, cmdb: Cmdb, power: Arc<Power>) -> anyhow::Result<VirtualMedia> {
        let _ = std::fs::remove_dir_all(&s.dir);
        std::fs::create_dir_all(&s.dir)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&s.dir, std::fs::Permissions::from_mode(0o700))?;
        Ok(VirtualMedia { s, cmdb, power, sessions: Mutex::default() })
    }

    /// Boots machine `mid` into BootOS from virtual media (UEFI or legacy): the ISO made, the
    /// BMC told to insert it and boot it once, the power cycled. Recorded on its timeline.
    pub async fn boot(&self, mid: u64, uefi: bool) -> Result<(), String> {
        let machine = self.cmdb.machine(mid).await.map_err(|e| e.to_string())?;
        let mac = *machine.macs.first().ok_or("the machine has no MAC")?;
        let result = self.insert(&machine, mac, uefi).await;
        if let Err(error) = &result {
            self.forget(mid);
            let event = (EventKind::VmediaFailed, json!({"error": error}));
            self.cmdb.record(Sighting { mac: Some(mac), ..Default::default() }, vec![event]);
        }
        result
    }

    async fn insert(&self, machine: &Machine, mac: crate::mac::Mac, uefi: bool) -> Result<(), String> {
        let mid = machine.id;
        let bmc = self.cmdb.bmc(mid).await.map_err(|e| e.to_string())?.ok_or("the machine has no BMC")?;
        if bmc.protocol != Protocol::Redfish || bmc.boot_via != BootVia::VirtualMedia {
            return Err("the machine's BMC is not set to boot it from virtual media (Redfish)".into());
        }
        let net = self.static_net(machine).await?;
        let ctx = crate::planner::PlanContext {
            http_base: &self.s.http_base,
            discovery_profile: &self.s.discovery_profile,
            profiles: &self.s.profiles,
        };
        let plan = crate::planner::plan_boot(mac, None, &ctx).map_err(|e| e.to_string())?;
        let crate::planner::BootPlan::Profile(p) = plan else {
            return Err("the discovery profile boots nothing".into());
        };
        let (Some(kernel), Some(initrd)) = (&p.kernel_path, &p.initrd_path) else {
            return Err(format!("profile {}'s kernel and initrd must be in the boot directory", p.name));
        };
        let nonce = self
            .cmdb
            .issue_boot_nonce(mac, format!("virtual media via {}", bmc.address), self.s.nonce_ttl_secs)
            .await
            .map_err(|e| e.to_string())?;
        let vars = ScriptVars {
            mac: mac.to_string(),
            hostname: machine.hostname.clone(),
            uefi,
            http_base: self.s.http_base.clone(),
            boot_nonce: Some(nonce),
            agent_url: self.s.agent_url.clone(),
            ca_pin: self.s.ca_pin.clone(),
        };
        let cmdline = self.s.templates.current().cmdline(&p, &vars).map_err(|e| e.to_string())?;
        let cmdline = format!("{cmdline} {}", net.kernel_arg());
        let path = self.s.dir.join(format!("{mid}.iso"));
        iso::build(&self.s.tool, &self.s.boot_root.join(kernel), &self.s.boot_root.join(initrd), &cmdline, &path)
            .await?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let password = random_password().map_err(|e| format!("no random password: {e}"))?;
        let (host, _) = crate::bmc::model::split_address(&bmc.address, 443).ok_or("bad BMC address")?;
        let peers: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::net::lookup_host((host.as_str(), 443))
                .await
                .map_err(|e| format!("resolving the BMC {host}: {e}"))?
                .map(|a| a.ip().to_canonical())
                .collect(),
        };
        let session = Session {
            mac,
            password_sha256: Sha256::digest(password.as_bytes()).into(),
            path: path.clone(),
            peers,
            at_ms: now_ms(),
            fetches: 0,
        };
        self.sessions.lock().expect("vmedia lock").insert(mid, session);
        let url = format!("{}/vmedia/{mid}.iso", self.s.agent_url);
        if let Err(e) = self.power.boot_virtual_cd(mid, &url, (USER, &password), uefi).await {
            // A boot that did not happen leaves nothing in the CD (best effort: there may be none).
            let _ = self.power.eject_virtual_cd(mid).await;
            return Err(e.to_string());
        }
        let detail = json!({"url": url, "bytes": bytes, "address": net.address.to_string(), "uefi": uefi});
        self.cmdb.record(Sighting { mac: Some(mac), ..Default::default() }, vec![(EventKind::VmediaInserted, detail)]);
        Ok(())
    }

    /// The address BootOS comes up with: the static one its network spec gives an Ethernet
    /// port or bond, else its reserved address in a DHCP subnet (that subnet's prefix and
    /// router).
    async fn static_net(&self, m: &Machine) -> Result<StaticNet, String> {
        let eff =
            crate::provision::network::effective(&self.cmdb, &self.s.networks, m).await.map_err(|e| e.to_string())?;
        if let Ok(Some(r)) = &eff.resolved {
            use rackboot_model::network::Kind;
            let dev = r
                .devices
                .iter()
                .find(|d| d.address.is_some() && matches!(d.kind, Kind::Ethernet { .. } | Kind::Bond { .. }));
            if let Some(d) = dev {
                let gateway = r.gateway.as_ref().filter(|(dev, _)| *dev == d.name).map(|(_, g)| *g);
                return Ok(StaticNet { address: d.address.expect("found with one"), gateway });
            }
        }
        if let Some(ip) = m.reserved_ip {
            if let Some(sub) = self.s.subnets.iter().find(|s| s.contains(ip)) {
                let address = ipnet::Ipv4Net::new(ip, sub.net.prefix_len()).map_err(|e| e.to_string())?;
                return Ok(StaticNet { address, gateway: sub.routers.first().copied() });
            }
        }
        Err("no static address for BootOS: give the machine a network spec with one (a named network), or a reservation in a DHCP subnet".into())
    }

    /// Whether `peer`, with the `authorization` header it sent, may fetch machine `mid`'s ISO;
    /// its path if so.
    pub fn authorize(&self, mid: u64, peer: IpAddr, authorization: Option<&str>) -> Result<PathBuf, Refusal> {
        let mut sessions = self.sessions.lock().expect("vmedia lock");
        let s = sessions.get_mut(&mid).ok_or(Refusal::NotFound)?;
        let given = authorization
            .and_then(|h| h.strip_prefix("Basic "))
            .and_then(|b| base64_decode(b.trim()))
            .and_then(|b| String::from_utf8(b).ok());
        let ok = given.as_deref().and_then(|g| g.split_once(':')).is_some_and(|(user, password)| {
            let sha: [u8; 32] = Sha256::digest(password.as_bytes()).into();
            user == USER && constant_eq(&sha, &s.password_sha256)
        });
        if !ok {
            return Err(Refusal::Unauthorized);
        }
        if !s.peers.contains(&peer.to_canonical()) {
            return Err(Refusal::Forbidden);
        }
        s.fetches += 1;
        Ok(s.path.clone())
    }

    fn forget(&self, mid: u64) -> Option<Session> {
        let s = self.sessions.lock().expect("vmedia lock").remove(&mid);
        if let Some(s) = &s {
            let _ = std::fs::remove_file(&s.path);
        }
        s
    }

    /// Ejects what is due: media whose machine's BootOS called in after the insert, and media
    /// inserted longer than the TTL ago.
    pub async fn sweep(&self) {
        let now = now_ms();
        let inserted: Vec<(u64, u64)> =
            self.sessions.lock().expect("vmedia lock").iter().map(|(id, s)| (*id, s.at_ms)).collect();
        for (mid, at_ms) in inserted {
            let enrolled = match self.cmdb.agent(mid).await {
                Ok(Some(a)) => a.mode == rackboot_agent::wire::AgentMode::Bootos && a.enrolled_at >= at_ms / 1000,
                _ => false,
            };
            let expired = now.saturating_sub(at_ms) > self.s.ttl.as_millis() as u64;
            if !enrolled && !expired {
                continue;
            }
            let error = self.power.eject_virtual_cd(mid).await.err().map(|e| e.to_string());
            if let Some(s) = self.forget(mid) {
                let why = if enrolled { "enrolled" } else { "expired" };
                let detail = json!({"why": why, "fetches": s.fetches, "error": error});
                let event = (EventKind::VmediaEjected, detail);
                self.cmdb.record(Sighting { mac: Some(s.mac), ..Default::default() }, vec![event]);
            }
        }
    }

    /// Sweeps every few seconds until `shutdown`.
    pub async fn serve(self: Arc<Self>, shutdown: CancellationToken) -> anyhow::Result<()> {
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = tokio::time::sleep(SWEEP) => self.sweep().await,
            }
        }
    }
}

/// 32 letters and digits.
fn random_password() -> Result<String, getrandom::Error> {
    const SYMBOLS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut out = String::new();
    while out.len() < 32 {
        let mut b = [0u8; 64];
        getrandom::fill(&mut b)?;
        out.extend(b.iter().filter(|x| **x < 248).map(|x| SYMBOLS[(*x % 62) as usize] as char));
    }
    out.truncate(32);
    Ok(out)
}

fn constant_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

#[cfg(test)]
mod tests;
