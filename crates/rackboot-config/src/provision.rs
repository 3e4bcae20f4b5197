//! `[provision]`: images, post-install scripts, hardware profiles, installer repositories and the
//! named networks installed nodes take static addresses in.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rackboot_model::network::Network;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireProvision {
    pub images_dir: PathBuf,
    pub postinstall_dir: PathBuf,
    pub hardware_profiles: Vec<HardwareProfile>,
    pub kickstart_repo: String,
    pub preseed_mirror: String,
    pub autoinstall_mirror: String,
    pub installer_proxy: String,
    pub networks: Vec<WireNetwork>,
    pub test_profiles: Vec<rackboot_model::commission::TestProfile>,
    /// The commissioning tools' overlay in the boot directory (`bootos/tools.sh OUT`).
    pub test_tools: String,
    /// The iperf3 binary the appliance serves network tests with.
    pub iperf3: PathBuf,
}

/// The port of the appliance's iperf3 server (iperf3's own default).
pub const IPERF3_PORT: u16 = 5201;

/// `[[provision.networks]]`: a named network installed nodes take static addresses in.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireNetwork {
    pub name: String,
    pub cidr: String,
    #[serde(default)]
    pub gateway: Option<std::net::Ipv4Addr>,
    #[serde(default)]
    pub vlan: Option<u16>,
    #[serde(default)]
    pub dns: Vec<std::net::Ipv4Addr>,
    /// `FIRST-LAST` inside `cidr`: the static addresses; unset, the whole CIDR.
    #[serde(default)]
    pub range: Option<String>,
    #[serde(default)]
    pub mtu: Option<u16>,
}

impl Default for WireProvision {
    fn default() -> Self {
        WireProvision {
            images_dir: PathBuf::new(),
            postinstall_dir: PathBuf::new(),
            hardware_profiles: Vec::new(),
            kickstart_repo: "https://dl.rockylinux.org/pub/rocky/9/BaseOS/x86_64/os/".into(),
            preseed_mirror: "http://deb.debian.org/debian".into(),
            autoinstall_mirror: "http://archive.ubuntu.com/ubuntu".into(),
            installer_proxy: String::new(),
            networks: Vec::new(),
            test_profiles: Vec::new(),
            test_tools: "bootos-tools.tar.gz".into(),
            iperf3: PathBuf::from("/usr/bin/iperf3"),
        }
    }
}

/// A hardware-configuration profile: scripts run in BootOS before the install, on machines
/// whose vendor and model match (substrings; empty: any).
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareProfile {
    pub name: String,
    #[serde(default)]
    pub vendors: Vec<String>,
    #[serde(default)]
    pub models: Vec<String>,
    /// Script bodies (`/bin/sh`), in order; `$RACKBOOT_DISK` is the target disk.
    #[serde(default)]
    pub scripts: Vec<String>,
    /// Signed vendor plugins run after the scripts, in order, on machines their `[match]` fits.
    #[serde(default)]
    pub plugins: Vec<rackboot_model::plugins::refs::PluginRef>,
    /// BIOS attributes set through the machine's Redfish BMC before the scripts (a restart,
    /// then read back); a machine without a Redfish BMC fails the step.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub bios: rackboot_model::bios::Settings,
    /// Certificates put into the firmware through the Redfish BMC in the same step:
    /// `"https-boot"` (the boot CA, for HTTPS boot), `"secure-boot-db"` (BootOS's signing
    /// certificate, into Secure Boot's db).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub firmware_certificates: Vec<rackboot_model::bios::FirmwareCert>,
    /// The firmware baseline (`[[firmware.baselines]]`) its machines are brought to, through
    /// their Redfish BMC, before the BIOS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware_baseline: Option<String>,
}

/// Validated provisioning settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvisionConfig {
    /// Raw disk images, served at `/boot/files/images/<name>`.
    pub images_dir: PathBuf,
    /// Post-install scripts tasks name.
    pub postinstall_dir: PathBuf,
    pub hardware_profiles: BTreeMap<String, HardwareProfile>,
    /// Repository or mirror URL per installer answer-file kind.
    pub answer_repos: BTreeMap<String, String>,
    /// HTTP proxy installers reach their repository through (empty: none).
    pub installer_proxy: String,
    /// Named networks installed nodes take static addresses in, in the file's order.
    pub networks: Vec<Network>,
    /// Commissioning test profiles by name.
    pub test_profiles: BTreeMap<String, rackboot_model::commission::TestProfile>,
    /// The tools' overlay, a plain file name in the boot directory.
    pub test_tools: String,
    /// The iperf3 binary; the appliance runs its server while a test profile tests the network.
    pub iperf3: PathBuf,
}

impl ProvisionConfig {
    /// Whether a test profile tests the network (the appliance then runs an iperf3 server).
    pub fn tests_network(&self) -> bool {
        self.test_profiles.values().any(|p| p.network_secs.is_some())
    }
}

/// Checks one `[[provision.networks]]` entry.
fn network(w: WireNetwork) -> anyhow::Result<Network> {
    let WireNetwork { name, cidr, gateway, vlan, dns, range, mtu } = w;
    let at = format!("provision.networks {name:?}");
    anyhow::ensure!(rackboot_model::records::valid_hostname(&name), "{at}: the name must be letters, digits and '-'");
    let cidr = crate::value::parse_net(&cidr).map_err(|e| anyhow::anyhow!("{at}: cidr: {e:#}"))?;
    if let Some(g) = gateway {
        anyhow::ensure!(
            cidr.contains(&g) && g != cidr.network() && g != cidr.broadcast(),
            "{at}: gateway {g} is not a host of {cidr}"
        );
    }
    anyhow::ensure!(vlan.is_none_or(|v| (1..=4094).contains(&v)), "{at}: vlan must be 1-4094");
    anyhow::ensure!(mtu.is_none_or(|m| (576..=9216).contains(&m)), "{at}: mtu must be 576-9216");
    anyhow::ensure!(dns.len() <= 8, "{at}: at most 8 dns servers");
    let range = match range {
        None => None,
        Some(r) => {
            let p: crate::value::Pool = r.parse().map_err(|e| anyhow::anyhow!("{at}: range: {e:#}"))?;
            anyhow::ensure!(
                cidr.contains(&p.first)
                    && cidr.contains(&p.last)
                    && p.first != cidr.network()
                    && p.last != cidr.broadcast(),
                "{at}: range {p} is not inside {cidr}'s hosts"
            );
            Some(rackboot_model::racks::AddressPlan { first: p.first, last: p.last })
        }
    };
    Ok(Network { name, cidr, gateway, vlan, dns, range, mtu })
}

impl ProvisionConfig {
    /// Validates `[provision]`; empty directories default under `data_dir` and the TFTP root.
    pub fn from_wire(w: WireProvision, data_dir: &Path, tftp_root: &Path) -> anyhow::Result<Self> {
        let WireProvision {
            images_dir,
            postinstall_dir,
            hardware_profiles,
            kickstart_repo,
            preseed_mirror,
            autoinstall_mirror,
            installer_proxy,
            networks: wire_networks,
            test_profiles: wire_tests,
            test_tools,
            iperf3,
        } = w;
        anyhow::ensure!(iperf3.is_absolute(), "provision.iperf3 {:?} must be an absolute path", iperf3.display());
        let mut test_profiles = BTreeMap::new();
        for p in wire_tests {
            p.check().map_err(|e| anyhow::anyhow!("provision.{e}"))?;
            let name = p.name.clone();
            anyhow::ensure!(test_profiles.insert(name.clone(), p).is_none(), "test profile {name} is defined twice");
        }
        anyhow::ensure!(
            !test_tools.is_empty()
                && !test_tools.starts_with('.')
                && test_tools.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "provision.test_tools must be a plain file name in the boot directory"
        );
        let mut networks: Vec<Network> = Vec::new();
        for w in wire_networks {
            let n = network(w)?;
            anyhow::ensure!(
                networks.iter().all(|o| o.name != n.name),
                "provision.networks {:?} is defined twice",
                n.name
            );
            networks.push(n);
        }
        anyhow::ensure!(
            installer_proxy.is_empty() || installer_proxy.starts_with("http://"),
            "provision.installer_proxy must be empty or an http:// URL"
        );
        let mut answer_repos = BTreeMap::new();
        for (kind, key, url) in [
            ("kickstart", "kickstart_repo", kickstart_repo),
            ("preseed", "preseed_mirror", preseed_mirror),
            ("autoinstall", "autoinstall_mirror", autoinstall_mirror),
        ] {
            anyhow::ensure!(
                url.starts_with("http://") || url.starts_with("https://"),
                "provision.{key} must be an http:// or https:// URL"
            );
            answer_repos.insert(kind.to_string(), url);
        }
        let mut by_name = BTreeMap::new();
        for mut p in hardware_profiles {
            let mut seen = std::collections::BTreeSet::new();
            p.firmware_certificates.retain(|c| seen.insert(*c));
            anyhow::ensure!(
                rackboot_model::records::valid_hostname(&p.name),
                "hardware profile name {:?} must be letters, digits and '-'",
                p.name
            );
            for r in &p.plugins {
                anyhow::ensure!(
                    rackboot_model::plugins::manifest::valid_name(&r.name),
                    "hardware profile {}: plugin name {:?} must be letters, digits and '-'",
                    p.name,
                    r.name
                );
                if let Some(v) = &r.version {
                    rackboot_model::plugins::manifest::version(v)
                        .map_err(|e| anyhow::anyhow!("hardware profile {}: plugin {}: {e}", p.name, r.name))?;
                }
                anyhow::ensure!(
                    r.params.is_object(),
                    "hardware profile {}: plugin {}: params must be a table",
                    p.name,
                    r.name
                );
            }
            rackboot_model::bios::check(&p.bios).map_err(|e| anyhow::anyhow!("hardware profile {}: {e}", p.name))?;
            let name = p.name.clone();
            anyhow::ensure!(by_name.insert(name.clone(), p).is_none(), "hardware profile {name} is defined twice");
        }
        // Images are served from the boot directory (/boot/files/images/...), so they live in it.
        let served = tftp_root.join("images");
        let images_dir = if images_dir.as_os_str().is_empty() { served.clone() } else { images_dir };
        anyhow::ensure!(
            images_dir == served,
            "provision.images_dir must be <tftp root>/images ({}), where /boot/files/images/ serves it",
            served.display()
        );
        let postinstall_dir =
            if postinstall_dir.as_os_str().is_empty() { data_dir.join("postinstall") } else { postinstall_dir };
        Ok(ProvisionConfig {
            images_dir,
            postinstall_dir,
            hardware_profiles: by_name,
            answer_repos,
            installer_proxy,
            networks,
            test_profiles,
            test_tools,
            iperf3,
        })
    }
}
