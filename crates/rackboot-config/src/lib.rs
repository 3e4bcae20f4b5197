//! Configuration: the TOML "wire" shape, validated into runtime types with `TryFrom`.
//!
//! Every key and its default is documented in `rackboot.example.toml`; with no file at all the
//! embedded default applies, which runs DHCP in `proxy` mode (answers PXE clients only, hands out
//! no addresses), so dropping the binary on a live network cannot take over its DHCP.
//!
//! One module per section: each holds its wire struct (every key optional, defaults in its
//! `Default`, unknown keys refused) and the validated type; [`value`] holds the small value types
//! (networks, pools) they share. This module checks what spans sections.

pub mod addresses;
mod agent;
mod auth;
mod bmc;
mod boot;
mod dhcp;
mod dhcp6;
mod dns;
mod firmware;
mod https;
mod ldap;
mod oidc;
mod pair;
mod plugins;
mod provision;
mod proxy;
mod server;
mod store;
mod tftp;
pub mod value;
mod webhooks;
mod windows;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

pub use agent::{AgentConfig, EnrollPolicy, WireAgent};
pub use auth::{AuthConfig, WireAuth, MAX_SESSION_SECS};
pub use bmc::{BmcConfig, WireBmc};
pub use boot::{
    builtin_discovery, ArchBoot, BootFiles, Profile, UefiLoader, WireBoot, WireProfile, EFI_STUB, GRUB_EFI,
    GRUB_EFI_ARM64,
};
pub use dhcp::{DhcpConfig, DhcpMode, Subnet, WireDhcp, WireSubnet};
pub use dhcp6::{Dhcp6Config, Pool6, Subnet6, WireDhcp6, WireSubnet6};
pub use dns::{DnsConfig, WireDns};
pub use firmware::{FirmwareConfig, WireFirmware};
pub use https::{ConnLimits, HttpsConfig, WireHttps};
pub use ldap::{GroupRole, LdapConfig, LdapSecurity, WireLdap};
pub use oidc::{ClaimRole, OidcConfig, WireOidc};
pub use pair::{PairConfig, PairRole, WirePair};
pub use plugins::WirePlugins;
pub use provision::{HardwareProfile, ProvisionConfig, WireProvision, IPERF3_PORT};
pub use proxy::{ProxyConfig, WireProxy};
pub use server::{fallback_address, WireHttp, WireServer};
pub use store::{remote_host, PgConfig, StoreConfig, WireStore};
pub use tftp::{TftpConfig, WireTftp};
pub use value::{Ipv4Net, Pool};
pub use webhooks::{WebhooksConfig, WireWebhooks};
pub use windows::{WindowsConfig, WireWindows};

/// The embedded default configuration: what `rackboot serve` runs with no `--config`.
pub const EMBEDDED_DEFAULT: &str = include_str!("../../../rackboot.example.toml");

/// The file as written: every key optional, unknown keys refused.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct WireConfig {
    pub server: WireServer,
    pub http: WireHttp,
    pub https: WireHttps,
    pub dhcp: WireDhcp,
    pub dhcp6: WireDhcp6,
    pub tftp: WireTftp,
    pub boot: WireBoot,
    pub dns: WireDns,
    pub agent: WireAgent,
    pub provision: WireProvision,
    pub auth: WireAuth,
    pub plugins: WirePlugins,
    pub bmc: WireBmc,
    pub windows: WireWindows,
    pub proxy: WireProxy,
    pub store: WireStore,
    pub webhooks: WireWebhooks,
    pub firmware: WireFirmware,
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
    /// Machines only seen on the network (no operator data, never approved) kept at most; the
    /// oldest go first.
    pub max_unclaimed_machines: usize,
    /// The last-resort network nodes fall back to when neither a static address nor DHCP
    /// reaches the appliance; the appliance answers at its `.254` on `interface`.
    pub fallback: Option<Ipv4Net>,
    /// Scheduled snapshots of the CMDB into `data_dir/backups`: (every, how many kept).
    pub backups: Option<(std::time::Duration, usize)>,
    pub http_listen: SocketAddr,
    /// The whole API on the (loopback-only) plain listener as well: for benchmarks.
    pub loopback_api: bool,
    /// Base URL machines use to reach the HTTP server; derived from the address if empty.
    pub public_url: String,
    /// Timeouts and connection caps of the HTTP and HTTPS listeners.
    pub http_limits: ConnLimits,
    /// The HTTPS listener (API, agent API, metrics) and its certificate.
    pub https: HttpsConfig,
    pub dhcp: DhcpConfig,
    /// The DHCPv6 server (`[dhcp6]`).
    pub dhcp6: Dhcp6Config,
    pub tftp: TftpConfig,
    pub dns: DnsConfig,
    pub agent: AgentConfig,
    pub provision: ProvisionConfig,
    /// Users' sessions, the login rate limit and the audit log's size.
    pub auth: AuthConfig,
    /// Caps on vendor plugin bundles (`[plugins]`).
    pub plugins: rackboot_model::plugins::StoreLimits,
    /// Power by remote control through machines' BMCs.
    pub bmc: BmcConfig,
    /// Windows media and its SMB share.
    pub windows: WindowsConfig,
    /// The package proxy for installing nodes.
    pub proxy: ProxyConfig,
    /// Where the CMDB lives.
    pub store: StoreConfig,
    /// Webhook delivery (`[webhooks]`).
    pub webhooks: WebhooksConfig,
    /// Firmware baselines and their images (`[firmware]`).
    pub firmware: FirmwareConfig,
    pub boot: BootFiles,
    /// Directory whose `ipxe/*.ipxe` and `provision/identity.sh` override the embedded templates.
    pub templates: Option<PathBuf>,
}

/// Whether `ip` lies inside the network `net`.
pub fn in_network(ip: Ipv4Addr, net: Ipv4Net) -> bool {
    net.contains(&ip)
}

impl TryFrom<WireConfig> for Config {
    type Error = anyhow::Error;

    fn try_from(w: WireConfig) -> anyhow::Result<Self> {
        let WireConfig {
            server,
            http,
            https,
            dhcp,
            dhcp6,
            tftp,
            boot,
            dns,
            agent,
            provision,
            auth,
            plugins,
            bmc,
            windows,
            proxy,
            store,
            webhooks,
            firmware,
        } = w;
        let plugins = rackboot_model::plugins::StoreLimits::try_from(plugins)?;
        let WireServer {
            data_dir,
            interface,
            address,
            log_format,
            max_unclaimed_machines,
            backup_interval_secs,
            backup_keep,
            fallback_network,
        } = server;
        let backups = server::backups(backup_interval_secs, backup_keep)?;
        anyhow::ensure!(
            (100..=10_000_000).contains(&max_unclaimed_machines),
            "server.max_unclaimed_machines must be 100..=10000000"
        );
        let WireHttp {
            listen,
            public_url,
            header_timeout_secs,
            idle_timeout_secs,
            max_connections,
            max_connections_per_client,
            loopback_api,
        } = http;
        let loopback_api = server::loopback_api(loopback_api, listen)?;
        let http_limits =
            https::conn_limits(header_timeout_secs, idle_timeout_secs, max_connections, max_connections_per_client)?;
        let https = HttpsConfig::try_from(https)?;
        let dns = DnsConfig::try_from(dns)?;
        let agent = AgentConfig::try_from(agent)?;
        let auth = AuthConfig::try_from(auth)?;
        let bmc = BmcConfig::try_from(bmc)?;
        let windows = WindowsConfig::try_from(windows)?;
        let proxy = ProxyConfig::try_from(proxy)?;
        let store = StoreConfig::try_from(store)?;
        let webhooks = WebhooksConfig::try_from(webhooks)?;
        let (boot, templates) = BootFiles::from_wire(boot)?;
        let log_json = server::log_json(&log_format)?;
        let dhcp = DhcpConfig::from_wire(dhcp, dns.enabled.then_some(dns.domain.as_str()))?;
        anyhow::ensure!(
            dhcp.pair.is_none() || matches!(store, StoreConfig::Postgres { .. }),
            "dhcp.pair needs the CMDB both appliances share: [store] backend = \"postgres\""
        );
        if dhcp.mode == DhcpMode::Full {
            anyhow::ensure!(
                !interface.is_empty() || address.is_some(),
                "dhcp.mode = \"full\" needs server.interface (or server.address)"
            );
        }
        let dhcp6 = Dhcp6Config::try_from(dhcp6)?;
        anyhow::ensure!(!dhcp6.enabled || !interface.is_empty(), "dhcp6.enabled needs server.interface");
        let public_url = server::public_url(&public_url)?;
        let fallback = server::fallback_network(&fallback_network, &interface, &dhcp.networks())?;
        if fallback.is_some() {
            anyhow::ensure!(
                https.listen.ip().is_unspecified(),
                "server.fallback_network needs https.listen on every address (0.0.0.0): agents reach it at the fallback address"
            );
        }
        let tftp = TftpConfig::from_wire(tftp, &data_dir)?;
        let provision = ProvisionConfig::from_wire(provision, &data_dir, &tftp.root)?;
        let https_boot = rackboot_model::bios::FirmwareCert::HttpsBoot;
        if let Some(p) = provision.hardware_profiles.values().find(|p| p.firmware_certificates.contains(&https_boot)) {
            anyhow::ensure!(
                https.boot_listen.is_some(),
                "hardware profile {} enrols the boot CA for HTTPS boot (\"https-boot\"): set https.boot_port",
                p.name
            );
        }
        let firmware = FirmwareConfig::from_wire(firmware, &tftp.root)?;
        for p in provision.hardware_profiles.values() {
            if let Some(b) = &p.firmware_baseline {
                anyhow::ensure!(
                    firmware.baselines.contains_key(b),
                    "hardware profile {} names firmware baseline {b:?}, which [[firmware.baselines]] does not define",
                    p.name
                );
            }
        }
        Ok(Config {
            data_dir,
            interface,
            address,
            log_json,
            max_unclaimed_machines,
            fallback,
            backups,
            http_listen: listen,
            loopback_api,
            public_url,
            http_limits,
            https,
            dhcp,
            dhcp6,
            tftp,
            dns,
            agent,
            provision,
            auth,
            plugins,
            bmc,
            windows,
            proxy,
            store,
            webhooks,
            firmware,
            boot,
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

    /// The embedded default documents every key with its default: parsing it must give what an
    /// empty file gives (a default changed in one place only is caught here).
    #[test]
    fn embedded_default_matches_the_type_defaults() {
        let (doc, empty) = (Config::load(None).unwrap(), Config::parse("").unwrap());
        assert_eq!(format!("{doc:?}"), format!("{empty:?}"));
    }

    #[test]
    fn a_hardware_profile_declares_bios_settings_as_a_table() {
        let c = Config::parse("[[provision.hardware_profiles]]\nname = \"r640\"\nvendors = [\"Dell\"]\n[provision.hardware_profiles.bios]\nProcTurboMode = \"Disabled\"\nNumCores = 8\nQuietBoot = false\n").unwrap();
        let bios = &c.provision.hardware_profiles["r640"].bios;
        assert_eq!(bios["ProcTurboMode"], "Disabled");
        assert_eq!((bios["NumCores"].as_i64(), bios["QuietBoot"].as_bool()), (Some(8), Some(false)));
        let certs = "[[provision.hardware_profiles]]\nname = \"gen10\"\nfirmware_certificates = [\"https-boot\", \"secure-boot-db\", \"https-boot\"]\n";
        let e = Config::parse(certs).unwrap_err();
        assert!(format!("{e:#}").contains("set https.boot_port"), "{e:#}");
        let c = Config::parse(&format!("[https]\nboot_port = 8443\n{certs}")).unwrap();
        use rackboot_model::bios::FirmwareCert::{HttpsBoot, SecureBootDb};
        assert_eq!(
            c.provision.hardware_profiles["gen10"].firmware_certificates,
            [HttpsBoot, SecureBootDb],
            "once each"
        );
        let e =
            Config::parse("[[provision.hardware_profiles]]\nname = \"x\"\nfirmware_baseline = \"gone\"").unwrap_err();
        assert!(format!("{e:#}").contains("does not define"), "{e:#}");
        let e = Config::parse("[[provision.hardware_profiles]]\nname = \"x\"\nfirmware_certificates = [\"pk\"]")
            .unwrap_err();
        assert!(format!("{e:#}").contains("https-boot"), "{e:#}");
    }

    #[test]
    fn bad_configs_say_why() {
        let cases = [
            ("[dhcp]\nmode = \"bogus\"", "dhcp.mode"),
            ("[dhcp]\nmode = \"full\"", "at least one"),
            ("[server]\ntypo = 1", "unknown field"),
            ("[server]\ntypo = 1", "typo"),
            ("[dns]\nbogus_key = 1", "bogus_key"),
            (
                "[server]\ninterface=\"x\"\n[dhcp]\nmode=\"full\"\n[[dhcp.subnets]]\ncidr=\"198.18.0.0/24\"\npools=[\"198.18.1.1-198.18.1.2\"]",
                "outside the subnet",
            ),
            ("[dns]\ndomain = \"bad_name.test\"", "dns.domain"),
            ("[agent]\nenroll = \"anyone\"", "agent.enroll"),
            ("[agent]\nnetworks = [\"10.0.0.0/33\"]", "agent.networks"),
            ("[dns]\nupstreams = [\"resolver\"]", "dns.upstreams"),
            (
                "[[provision.hardware_profiles]]\nname = \"r640\"\n[provision.hardware_profiles.bios]\n\"Proc Turbo\" = \"Disabled\"",
                "hardware profile r640: BIOS attribute name \"Proc Turbo\"",
            ),
            (
                "[[provision.hardware_profiles]]\nname = \"r640\"\n[provision.hardware_profiles.bios]\nBootOrder = [\"Pxe\"]",
                "BIOS attribute BootOrder: the value must be a string, a number or a boolean",
            ),
            ("[store]\nbackend = \"mysql\"", "store.backend"),
            ("[store]\nbackend = \"postgres\"", "needs store.url"),
            ("[store]\nbackend = \"postgres\"\nurl = \"postgres://u:hunter2@db/x\"", "must not carry the password"),
            ("[store]\nbackend = \"postgres\"\nurl = \"host=db password=hunter2\"", "must not carry the password"),
            ("[store]\nbackend = \"postgres\"\nurl = \"postgres://db/x\"\nschema = \"a;drop\"", "store.schema"),
            ("[store]\nurl = \"postgres://db/x\"", "for backend = \"postgres\""),
            ("[dhcp.pair]\nname = \"vlan10\"", "dhcp.pair is for dhcp.mode = \"full\""),
            (
                "[dhcp]\nmode=\"full\"\n[[dhcp.subnets]]\ncidr=\"198.18.0.0/24\"\npools=[\"198.18.0.5-198.18.0.9\"]\n[dhcp.pair]\nname = \"vlan10\"",
                "dhcp.pair needs the CMDB both appliances share",
            ),
            ("[dhcp.pair]\nname = \"vlan 10\"", "dhcp.pair.name"),
            ("[dhcp.pair]\nname = \"v\"\nrole = \"backup\"", "dhcp.pair.role"),
            ("[dhcp.pair]\nname = \"v\"\ntakeover_secs = 1", "takeover_secs"),
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
            (
                "[[dhcp.subnets]]\ncidr=\"198.18.0.0/16\"\npools=[\"198.18.0.5-198.18.0.9\"]\n[[dhcp.subnets]]\ncidr=\"198.18.1.0/24\"\npools=[\"198.18.1.5-198.18.1.9\"]",
                "subnets 198.18.0.0/16 and 198.18.1.0/24 overlap",
            ),
            ("[http]\npublic_url = \"ftp://x\"", "http.public_url"),
            ("[https]\ncert = \"/etc/c.pem\"", "https.cert and https.key"),
            ("[http]\nloopback_api = true", "needs a loopback http.listen"),
            ("[server]\nbackup_interval_secs = 5", "at least 60"),
            ("[http]\nmax_connections = 10\nmax_connections_per_client = 11", "max_connections_per_client"),
            ("[server]\nlog_format = \"xml\"", "server.log_format"),
            ("[tftp]\nmax_transfers = 0", "tftp.max_transfers"),
            ("[auth]\nsession_ttl_secs = 604801", "auth.session_ttl_secs"),
            ("[auth]\naudit_max_entries = 0", "auth.audit_max_entries"),
            ("[auth]\nlogin_window_secs = 0", "auth.login_window_secs"),
            ("[auth]\nbogus = 1", "bogus"),
            ("[provision]\nimages_dir = \"/srv/images\"", "provision.images_dir"),
            ("[plugins]\nmax_bundle_bytes = 10", "plugins.max_bundle_bytes"),
            ("[[provision.networks]]\nname = \"prod\"\ncidr = \"10.20.0.0/24\"\ngateway = \"10.21.0.1\"", "not a host of"),
            ("[[provision.networks]]\nname = \"prod\"\ncidr = \"10.20.0.0/24\"\nvlan = 4095", "vlan must be 1-4094"),
            ("[[provision.networks]]\nname = \"prod\"\ncidr = \"10.20.0.0/24\"\nrange = \"10.20.0.200-10.20.1.5\"", "not inside"),
            ("[[provision.networks]]\nname = \"p\"\ncidr = \"10.0.0.0/24\"\n[[provision.networks]]\nname = \"p\"\ncidr = \"10.1.0.0/24\"", "defined twice"),
            ("[[provision.networks]]\nname = \"prod\"\ncidr = \"10.20.0.0/24\"\nbogus = 1", "bogus"),
            ("[plugins]\nbogus = 1", "bogus"),
        ];
        for (text, want) in cases {
            let err = format!("{:#}", Config::parse(text).unwrap_err());
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }
}
