//! Configuration: the TOML "wire" shape, validated into runtime types with `TryFrom`.
//!
//! Every key and its default is documented in `rackboot.example.toml`; with no file at all the
//! embedded default applies, which runs DHCP in `proxy` mode (answers PXE clients only, hands out
//! no addresses), so dropping the binary on a live network cannot take over its DHCP.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

/// The embedded default configuration: what `rackboot serve` runs with no `--config`.
pub const EMBEDDED_DEFAULT: &str = include_str!("../rackboot.example.toml");

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct WireConfig {
    pub server: WireServer,
    pub http: WireHttp,
    pub dhcp: WireDhcp,
    pub tftp: WireTftp,
    pub boot: WireBoot,
    pub dns: WireDns,
    pub agent: WireAgent,
    pub provision: WireProvision,
}

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
}

/// Validated provisioning settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvisionConfig {
    /// Raw disk images, served at `/boot/files/images/<name>`.
    pub images_dir: PathBuf,
    /// Post-install scripts tasks name.
    pub postinstall_dir: PathBuf,
    pub hardware_profiles: std::collections::BTreeMap<String, HardwareProfile>,
    /// Repository or mirror URL per installer answer-file kind.
    pub answer_repos: std::collections::BTreeMap<String, String>,
    /// HTTP proxy installers reach their repository through (empty: none).
    pub installer_proxy: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireAgent {
    pub enroll: String,
    pub networks: Vec<String>,
    pub poll_secs: u64,
    pub lease_secs: u64,
    pub stats_secs: u64,
    pub job_timeout_secs: u64,
    pub max_attempts: u32,
}

impl Default for WireAgent {
    fn default() -> Self {
        WireAgent {
            enroll: "auto".into(),
            networks: Vec::new(),
            poll_secs: 25,
            lease_secs: 60,
            stats_secs: 30,
            job_timeout_secs: 3600,
            max_attempts: 3,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireDns {
    pub enabled: bool,
    pub port: u16,
    pub domain: String,
    pub ttl: u32,
    pub reverse_zones: Vec<String>,
    pub upstreams: Vec<String>,
    pub allow_transfer: Vec<String>,
}

impl Default for WireDns {
    fn default() -> Self {
        WireDns {
            enabled: true,
            port: 53,
            domain: "rack.internal".into(),
            ttl: 30,
            reverse_zones: Vec::new(),
            upstreams: Vec::new(),
            allow_transfer: Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireTftp {
    pub enabled: bool,
    pub port: u16,
    pub root: PathBuf,
    pub max_transfers: usize,
}

impl Default for WireTftp {
    fn default() -> Self {
        WireTftp { enabled: true, port: 69, root: PathBuf::new(), max_transfers: 1024 }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireServer {
    pub data_dir: PathBuf,
    pub interface: String,
    pub address: Option<Ipv4Addr>,
    pub log_format: String,
}

impl Default for WireServer {
    fn default() -> Self {
        WireServer {
            data_dir: PathBuf::from("/var/lib/rackboot"),
            interface: String::new(),
            address: None,
            log_format: "human".into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireHttp {
    pub listen: SocketAddr,
    pub public_url: String,
}

impl Default for WireHttp {
    fn default() -> Self {
        WireHttp { listen: ([0, 0, 0, 0], 80).into(), public_url: String::new() }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireDhcp {
    pub mode: String,
    pub port: u16,
    pub proxy_port: u16,
    pub reply_port: u16,
    pub relay_port: u16,
    pub offer_hold_secs: u64,
    pub commit_batch: usize,
    pub router_advertisements: bool,
    pub subnets: Vec<WireSubnet>,
}

impl Default for WireDhcp {
    fn default() -> Self {
        WireDhcp {
            mode: "proxy".into(),
            port: 67,
            proxy_port: 4011,
            reply_port: 68,
            relay_port: 67,
            offer_hold_secs: 60,
            commit_batch: 4096,
            router_advertisements: true,
            subnets: Vec::new(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireSubnet {
    pub cidr: String,
    pub pools: Vec<String>,
    #[serde(default)]
    pub routers: Vec<Ipv4Addr>,
    #[serde(default)]
    pub dns_servers: Vec<Ipv4Addr>,
    #[serde(default)]
    pub domain: String,
    #[serde(default = "default_lease_secs")]
    pub lease_secs: u32,
}

fn default_lease_secs() -> u32 {
    3600
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireBoot {
    pub bios: String,
    pub uefi_x64: String,
    pub uefi_x64_snp: bool,
    pub arm64: String,
    pub discovery_profile: String,
    pub profiles: Vec<WireProfile>,
    pub templates: PathBuf,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireProfile {
    pub name: String,
    pub kernel: String,
    pub initrd: String,
    #[serde(default)]
    pub cmdline: String,
    /// For an installer: the answer file it reads (kickstart, preseed or autoinstall); the
    /// command line then has `{{ answer_url }}`, the file's URL for the booting machine.
    #[serde(default)]
    pub answer: Option<String>,
}

impl Default for WireBoot {
    fn default() -> Self {
        WireBoot {
            bios: "undionly.kpxe".into(),
            uefi_x64: "ipxe.efi".into(),
            uefi_x64_snp: false,
            arm64: "ipxe-arm64.efi".into(),
            discovery_profile: "discovery".into(),
            profiles: Vec::new(),
            templates: PathBuf::new(),
        }
    }
}

/// The discovery profile used when the config names none: BootOS from the boot directory.
fn builtin_discovery() -> Profile {
    Profile {
        name: "discovery".into(),
        kernel: "bootos/vmlinuz".into(),
        initrd: "bootos/initrd.img".into(),
        cmdline: "console=tty0 console=ttyS0 rackboot.url={{ http_base }} rackboot.mac={{ mac }}".into(),
        answer: None,
    }
}

/// Validated runtime configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    /// Provisioning interface; DHCP binds to it with SO_BINDTODEVICE. Empty: auto-detect.
    pub interface: String,
    /// The appliance's IPv4 address on that interface (server identifier, next-server).
    pub address: Option<Ipv4Addr>,
    pub log_json: bool,
    pub http_listen: SocketAddr,
    /// Base URL machines use to reach the HTTP server; derived from the address if empty.
    pub public_url: String,
    pub dhcp: DhcpConfig,
    pub tftp: TftpConfig,
    pub dns: DnsConfig,
    pub agent: AgentConfig,
    pub provision: ProvisionConfig,
    pub boot: BootFiles,
    /// Directory whose `ipxe/*.ipxe` and `provision/identity.sh` override the embedded templates.
    pub templates: Option<PathBuf>,
}

/// Validated TFTP settings.
#[derive(Debug, Clone)]
pub struct TftpConfig {
    pub enabled: bool,
    pub port: u16,
    /// Transfers at once; a request beyond that gets "server busy" and retries.
    pub max_transfers: usize,
    /// The boot directory served read-only.
    pub root: PathBuf,
}

/// Who may enroll an agent without an operator's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnrollPolicy {
    /// Agents calling from the provisioning networks are accepted at once; others wait for approval.
    Auto,
    /// Every new machine waits for `POST /api/v1/machines/{id}/approve`.
    Approve,
}

/// Validated agent-controller settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentConfig {
    pub enroll: EnrollPolicy,
    /// Networks counted as the provisioning network for `Auto`. Empty: the DHCP subnets, or
    /// the server address's /24 when there are none.
    pub networks: Vec<(Ipv4Addr, u8)>,
    /// Longest a long-poll is held before an empty answer.
    pub poll: Duration,
    /// A claimed job not heard from within this goes back to the queue.
    pub lease: Duration,
    /// How often agents send stats.
    pub stats: Duration,
    /// Default job timeout.
    pub job_timeout_secs: u64,
    /// Default deliveries per job before it fails.
    pub max_attempts: u32,
}

impl TryFrom<WireAgent> for AgentConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireAgent) -> anyhow::Result<Self> {
        let WireAgent { enroll, networks, poll_secs, lease_secs, stats_secs, job_timeout_secs, max_attempts } = w;
        let enroll = match enroll.as_str() {
            "auto" => EnrollPolicy::Auto,
            "approve" => EnrollPolicy::Approve,
            other => anyhow::bail!("agent.enroll must be \"auto\" or \"approve\", not {other:?}"),
        };
        let networks =
            networks.iter().map(|c| parse_cidr(c).context("in agent.networks")).collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!((1..=300).contains(&poll_secs), "agent.poll_secs must be 1..=300");
        anyhow::ensure!(lease_secs > poll_secs.min(30), "agent.lease_secs must be longer than a few seconds");
        anyhow::ensure!(stats_secs >= 1, "agent.stats_secs must be at least 1");
        anyhow::ensure!(job_timeout_secs >= 1, "agent.job_timeout_secs must be at least 1");
        anyhow::ensure!((1..=100).contains(&max_attempts), "agent.max_attempts must be 1..=100");
        Ok(AgentConfig {
            enroll,
            networks,
            poll: Duration::from_secs(poll_secs),
            lease: Duration::from_secs(lease_secs),
            stats: Duration::from_secs(stats_secs),
            job_timeout_secs,
            max_attempts,
        })
    }
}

/// Validated DNS settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DnsConfig {
    pub enabled: bool,
    pub port: u16,
    /// The forward zone, lowercase, without the trailing dot.
    pub domain: String,
    /// TTL of every answer, in seconds.
    pub ttl: u32,
    /// Networks whose reverse zones are served. Empty: the DHCP subnets, else the server's /24.
    pub reverse_zones: Vec<(Ipv4Addr, u8)>,
    /// Resolvers that get names outside our zones; empty: such names are REFUSED.
    pub upstreams: Vec<SocketAddr>,
    /// Clients allowed zone transfers (AXFR, over TCP); empty: none.
    pub allow_transfer: Vec<(Ipv4Addr, u8)>,
}

/// Whether `ip` lies inside the network `net`.
pub fn in_network(ip: Ipv4Addr, net: (Ipv4Addr, u8)) -> bool {
    u32::from(ip) & prefix_mask(net.1) == u32::from(net.0)
}

impl TryFrom<WireDns> for DnsConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireDns) -> anyhow::Result<Self> {
        let WireDns { enabled, port, domain, ttl, reverse_zones, upstreams, allow_transfer } = w;
        let domain = domain.trim_end_matches('.').to_ascii_lowercase();
        anyhow::ensure!(
            !domain.is_empty()
                && domain.len() <= 200
                && domain.split('.').all(crate::cmdb::model::valid_hostname)
                && domain.contains('.'),
            "dns.domain {domain:?} must be a dotted name of letters, digits and '-' (e.g. \"rack.internal\")"
        );
        anyhow::ensure!(ttl <= 86_400, "dns.ttl must be at most 86400 seconds");
        let cidrs = |key: &str, list: Vec<String>| -> anyhow::Result<Vec<(Ipv4Addr, u8)>> {
            list.iter().map(|c| parse_cidr(c).with_context(|| format!("in dns.{key}"))).collect()
        };
        let reverse_zones = cidrs("reverse_zones", reverse_zones)?;
        for (net, len) in &reverse_zones {
            anyhow::ensure!(*len >= 8, "dns.reverse_zones: {net}/{len} is wider than a /8");
        }
        let allow_transfer = cidrs("allow_transfer", allow_transfer)?;
        let upstreams = upstreams
            .iter()
            .map(|u| {
                u.parse::<SocketAddr>()
                    .or_else(|_| u.parse::<std::net::IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                    .with_context(|| format!("dns.upstreams: {u:?} is not an address or address:port"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(DnsConfig { enabled, port, domain, ttl, reverse_zones, upstreams, allow_transfer })
    }
}

/// DHCP service mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DhcpMode {
    /// Leases from pools and reservations, plus PXE boot options.
    Full,
    /// Boot options only, beside another DHCP server (port 67 and 4011).
    Proxy,
    /// No DHCP at all.
    Off,
}

/// Validated DHCP settings.
#[derive(Debug, Clone)]
pub struct DhcpConfig {
    pub mode: DhcpMode,
    pub port: u16,
    pub proxy_port: u16,
    /// Port replies to clients are sent to (68; tests may change it).
    pub reply_port: u16,
    /// Port replies to relay agents (giaddr) are sent to (67).
    pub relay_port: u16,
    pub offer_hold: Duration,
    pub commit_batch: usize,
    /// Answer IPv6 router solicitations with an advertisement that configures nothing, so
    /// iPXE stops waiting for one (see [`crate::ra`]).
    pub router_advertisements: bool,
    pub subnets: Vec<Subnet>,
}

/// One IPv4 subnet served in full mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Subnet {
    pub network: Ipv4Addr,
    pub prefix: u8,
    pub pools: Vec<(Ipv4Addr, Ipv4Addr)>,
    pub routers: Vec<Ipv4Addr>,
    pub dns_servers: Vec<Ipv4Addr>,
    pub domain: String,
    pub lease_secs: u32,
}

impl Subnet {
    /// The netmask for this subnet's prefix length.
    pub fn mask(&self) -> Ipv4Addr {
        Ipv4Addr::from(prefix_mask(self.prefix))
    }

    /// Whether `ip` lies inside the subnet.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & prefix_mask(self.prefix) == u32::from(self.network)
    }

    /// Whether `ip` lies inside one of the pools.
    pub fn in_pool(&self, ip: Ipv4Addr) -> bool {
        self.pools.iter().any(|(a, b)| *a <= ip && ip <= *b)
    }
}

/// iPXE binaries handed to PXE ROMs, by client architecture, and the boot profiles.
#[derive(Debug, Clone)]
pub struct BootFiles {
    pub bios: String,
    pub uefi_x64: String,
    pub uefi_x64_snp: bool,
    pub arm64: String,
    /// Profile that unknown and not yet provisioned machines boot.
    pub discovery_profile: String,
    pub profiles: std::collections::BTreeMap<String, Profile>,
}

/// A named kernel + initrd + command line. Paths are relative to the boot directory (served at
/// `/boot/files/`) or full `http://` URLs; the command line is a template (`{{ mac }}`,
/// `{{ http_base }}`, `{{ hostname }}`, and for an installer `{{ answer_url }}`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Profile {
    pub name: String,
    pub kernel: String,
    pub initrd: String,
    pub cmdline: String,
    /// The answer file an installer profile reads: one of [`crate::render::ANSWER_KINDS`].
    pub answer: Option<String>,
}

fn prefix_mask(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    }
}

fn parse_cidr(s: &str) -> anyhow::Result<(Ipv4Addr, u8)> {
    let (ip, len) = s.split_once('/').with_context(|| format!("{s:?} is not a CIDR (a.b.c.d/n)"))?;
    let ip: Ipv4Addr = ip.parse().with_context(|| format!("bad network address in {s:?}"))?;
    let len: u8 = len.parse().with_context(|| format!("bad prefix length in {s:?}"))?;
    anyhow::ensure!((1..=30).contains(&len), "prefix length of {s:?} must be 1..=30");
    anyhow::ensure!(u32::from(ip) & !prefix_mask(len) == 0, "{s:?} has host bits set");
    Ok((ip, len))
}

fn parse_range(s: &str) -> anyhow::Result<(Ipv4Addr, Ipv4Addr)> {
    let (a, b) = s.split_once('-').with_context(|| format!("pool {s:?} is not FIRST-LAST"))?;
    let a: Ipv4Addr = a.trim().parse().with_context(|| format!("bad first address in pool {s:?}"))?;
    let b: Ipv4Addr = b.trim().parse().with_context(|| format!("bad last address in pool {s:?}"))?;
    anyhow::ensure!(a <= b, "pool {s:?} ends before it starts");
    Ok((a, b))
}

impl TryFrom<WireSubnet> for Subnet {
    type Error = anyhow::Error;

    fn try_from(w: WireSubnet) -> anyhow::Result<Self> {
        let WireSubnet { cidr, pools, routers, dns_servers, domain, lease_secs } = w;
        let (network, prefix) = parse_cidr(&cidr)?;
        let mut subnet = Subnet { network, prefix, pools: Vec::new(), routers, dns_servers, domain, lease_secs };
        anyhow::ensure!(lease_secs >= 60, "subnet {cidr}: lease_secs must be at least 60");
        anyhow::ensure!(!pools.is_empty(), "subnet {cidr}: at least one pool is needed");
        for p in &pools {
            let (a, b) = parse_range(p)?;
            anyhow::ensure!(
                subnet.contains(a) && subnet.contains(b),
                "subnet {cidr}: pool {p:?} is outside the subnet"
            );
            subnet.pools.push((a, b));
        }
        // The allocator walks pools in address order and wraps to the lowest.
        subnet.pools.sort();
        for w in subnet.pools.windows(2) {
            anyhow::ensure!(
                w[0].1 < w[1].0,
                "subnet {cidr}: pools {}-{} and {}-{} overlap",
                w[0].0,
                w[0].1,
                w[1].0,
                w[1].1
            );
        }
        Ok(subnet)
    }
}

impl TryFrom<WireConfig> for Config {
    type Error = anyhow::Error;

    fn try_from(w: WireConfig) -> anyhow::Result<Self> {
        let WireConfig { server, http, dhcp, tftp, boot, dns, agent, provision } = w;
        let dns = DnsConfig::try_from(dns)?;
        let agent = AgentConfig::try_from(agent)?;
        let WireTftp { enabled: tftp_enabled, port: tftp_port, root: tftp_root, max_transfers } = tftp;
        anyhow::ensure!(max_transfers >= 1, "tftp.max_transfers must be at least 1");
        let WireServer { data_dir, interface, address, log_format } = server;
        let WireHttp { listen, public_url } = http;
        let WireDhcp {
            mode,
            port,
            proxy_port,
            reply_port,
            relay_port,
            offer_hold_secs,
            commit_batch,
            router_advertisements,
            subnets,
        } = dhcp;
        let WireBoot { bios, uefi_x64, uefi_x64_snp, arm64, discovery_profile, profiles, templates } = boot;
        let templates = (!templates.as_os_str().is_empty()).then_some(templates);
        let mut profile_map = std::collections::BTreeMap::new();
        for p in profiles {
            let WireProfile { name, kernel, initrd, cmdline, answer } = p;
            anyhow::ensure!(
                crate::cmdb::model::valid_hostname(&name),
                "boot profile name {name:?} must be letters, digits and '-'"
            );
            anyhow::ensure!(
                !kernel.is_empty() && !initrd.is_empty(),
                "boot profile {name}: kernel and initrd are required"
            );
            if let Some(a) = &answer {
                anyhow::ensure!(
                    crate::render::ANSWER_KINDS.contains(&a.as_str()),
                    "boot profile {name}: answer {a:?} is not one of {:?}",
                    crate::render::ANSWER_KINDS
                );
            }
            let dup = profile_map.insert(name.clone(), Profile { name: name.clone(), kernel, initrd, cmdline, answer });
            anyhow::ensure!(dup.is_none(), "boot profile {name} is defined twice");
        }
        // The built-in discovery profile, unless the config defines its own.
        if !profile_map.contains_key("discovery") {
            let d = builtin_discovery();
            profile_map.insert(d.name.clone(), d);
        }
        anyhow::ensure!(
            profile_map.contains_key(&discovery_profile),
            "boot.discovery_profile {discovery_profile:?} is not among [[boot.profiles]]"
        );

        let log_json = match log_format.as_str() {
            "human" => false,
            "json" => true,
            other => anyhow::bail!("server.log_format must be \"human\" or \"json\", not {other:?}"),
        };
        let mode = match mode.as_str() {
            "full" => DhcpMode::Full,
            "proxy" => DhcpMode::Proxy,
            "off" => DhcpMode::Off,
            other => anyhow::bail!("dhcp.mode must be \"full\", \"proxy\" or \"off\", not {other:?}"),
        };
        let mut subnets = subnets
            .into_iter()
            .map(Subnet::try_from)
            .collect::<anyhow::Result<Vec<_>>>()
            .context("in [[dhcp.subnets]]")?;
        if dns.enabled {
            // Clients should look names up under the zone we answer for.
            for s in subnets.iter_mut().filter(|s| s.domain.is_empty()) {
                s.domain = dns.domain.clone();
            }
        }
        if mode == DhcpMode::Full {
            anyhow::ensure!(!subnets.is_empty(), "dhcp.mode = \"full\" needs at least one [[dhcp.subnets]]");
            anyhow::ensure!(
                !interface.is_empty() || address.is_some(),
                "dhcp.mode = \"full\" needs server.interface (or server.address)"
            );
        }
        for (i, a) in subnets.iter().enumerate() {
            for b in &subnets[i + 1..] {
                anyhow::ensure!(
                    !a.contains(b.network) && !b.contains(a.network),
                    "subnets {}/{} and {}/{} overlap",
                    a.network,
                    a.prefix,
                    b.network,
                    b.prefix
                );
            }
        }
        anyhow::ensure!(commit_batch >= 1, "dhcp.commit_batch must be at least 1");
        if !public_url.is_empty() {
            anyhow::ensure!(
                public_url.starts_with("http://") || public_url.starts_with("https://"),
                "http.public_url must start with http:// or https://"
            );
        }
        let tftp_root = if tftp_root.as_os_str().is_empty() { data_dir.join("boot") } else { tftp_root };
        let WireProvision {
            images_dir,
            postinstall_dir,
            hardware_profiles,
            kickstart_repo,
            preseed_mirror,
            autoinstall_mirror,
            installer_proxy,
        } = provision;
        anyhow::ensure!(
            installer_proxy.is_empty() || installer_proxy.starts_with("http://"),
            "provision.installer_proxy must be empty or an http:// URL"
        );
        let mut answer_repos = std::collections::BTreeMap::new();
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
        let mut profiles_hw = std::collections::BTreeMap::new();
        for p in hardware_profiles {
            anyhow::ensure!(
                crate::cmdb::model::valid_hostname(&p.name),
                "hardware profile name {:?} must be letters, digits and '-'",
                p.name
            );
            let name = p.name.clone();
            anyhow::ensure!(profiles_hw.insert(name.clone(), p).is_none(), "hardware profile {name} is defined twice");
        }
        // Images are served from the boot directory (/boot/files/images/...), so they live in it.
        let images_dir = if images_dir.as_os_str().is_empty() { tftp_root.join("images") } else { images_dir };
        anyhow::ensure!(
            images_dir == tftp_root.join("images"),
            "provision.images_dir must be <tftp root>/images ({}), where /boot/files/images/ serves it",
            tftp_root.join("images").display()
        );
        let provision = ProvisionConfig {
            images_dir,
            postinstall_dir: if postinstall_dir.as_os_str().is_empty() {
                data_dir.join("postinstall")
            } else {
                postinstall_dir
            },
            hardware_profiles: profiles_hw,
            answer_repos,
            installer_proxy,
        };
        Ok(Config {
            data_dir,
            interface,
            address,
            log_json,
            http_listen: listen,
            public_url: public_url.trim_end_matches('/').to_string(),
            dhcp: DhcpConfig {
                mode,
                port,
                proxy_port,
                reply_port,
                relay_port,
                offer_hold: Duration::from_secs(offer_hold_secs),
                commit_batch,
                router_advertisements,
                subnets,
            },
            tftp: TftpConfig { enabled: tftp_enabled, port: tftp_port, max_transfers, root: tftp_root },
            dns,
            agent,
            provision,
            boot: BootFiles { bios, uefi_x64, uefi_x64_snp, arm64, discovery_profile, profiles: profile_map },
            templates,
        })
    }
}

impl Config {
    /// Parses and validates TOML text.
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        let wire: WireConfig = toml::from_str(text)?;
        Config::try_from(wire)
    }

    /// Loads the file at `path`, or the embedded default when `path` is `None`.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Self> {
        match path {
            None => Config::parse(EMBEDDED_DEFAULT).context("embedded default config"),
            Some(p) => {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading config {}", p.display()))?;
                Config::parse(&text).with_context(|| format!("config {}", p.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_default_is_safe() {
        let cfg = Config::load(None).unwrap();
        assert_ne!(cfg.dhcp.mode, DhcpMode::Full, "default must never be a full DHCP server");
        assert!(cfg.dhcp.subnets.is_empty());
    }

    #[test]
    fn full_mode_config_validates() {
        let cfg = Config::parse(
            r#"
            [server]
            interface = "eth1"
            [dhcp]
            mode = "full"
            [[dhcp.subnets]]
            cidr = "198.18.0.0/24"
            pools = ["198.18.0.100-198.18.0.199"]
            routers = ["198.18.0.1"]
            "#,
        )
        .unwrap();
        let s = &cfg.dhcp.subnets[0];
        assert_eq!(s.mask(), Ipv4Addr::new(255, 255, 255, 0));
        assert!(s.in_pool("198.18.0.150".parse().unwrap()));
        assert!(!s.in_pool("198.18.0.99".parse().unwrap()));
        assert_eq!(s.lease_secs, 3600);
    }

    #[test]
    fn pools_are_kept_in_address_order() {
        let s = Subnet::try_from(WireSubnet {
            cidr: "198.18.0.0/24".into(),
            pools: vec!["198.18.0.200-198.18.0.210".into(), "198.18.0.100-198.18.0.110".into()],
            routers: vec![],
            dns_servers: vec![],
            domain: String::new(),
            lease_secs: 600,
        })
        .unwrap();
        assert_eq!(s.pools[0].0, Ipv4Addr::new(198, 18, 0, 100));
    }

    #[test]
    fn bad_configs_say_why() {
        let cases = [
            ("[dhcp]\nmode = \"bogus\"", "dhcp.mode"),
            ("[dhcp]\nmode = \"full\"", "at least one"),
            ("[server]\ntypo = 1", "unknown field"),
            (
                "[server]\ninterface=\"x\"\n[dhcp]\nmode=\"full\"\n[[dhcp.subnets]]\ncidr=\"198.18.0.0/24\"\npools=[\"198.18.1.1-198.18.1.2\"]",
                "outside the subnet",
            ),
            ("[dns]\ndomain = \"bad_name.test\"", "dns.domain"),
            ("[agent]\nenroll = \"anyone\"", "agent.enroll"),
            ("[agent]\nnetworks = [\"10.0.0.0/33\"]", "agent.networks"),
            ("[dns]\nupstreams = [\"resolver\"]", "dns.upstreams"),
            ("[dns]\nreverse_zones = [\"10.0.0.0/7\"]", "wider than a /8"),
            ("[dns]\nallow_transfer = [\"198.18.0.0\"]", "dns.allow_transfer"),
            (
                "[[dhcp.subnets]]\ncidr=\"198.18.0.1/24\"\npools=[\"198.18.0.5-198.18.0.9\"]",
                "host bits",
            ),
            (
                "[[dhcp.subnets]]\ncidr=\"198.18.0.0/24\"\npools=[\"198.18.0.5-198.18.0.9\", \"198.18.0.8-198.18.0.20\"]",
                "overlap",
            ),
        ];
        for (text, want) in cases {
            let err = format!("{:#}", Config::parse(text).unwrap_err());
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
