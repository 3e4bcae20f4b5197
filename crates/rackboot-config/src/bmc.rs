//! `[bmc]`: power by remote control (timeouts, retries, the caps on commands in flight, the
//! power-state refresh, ipmitool).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireBmc {
    pub request_timeout_secs: u64,
    pub action_deadline_secs: u64,
    pub soft_off_timeout_secs: u64,
    pub poll_interval_ms: u64,
    pub retries: u32,
    pub retry_backoff_ms: u64,
    pub max_concurrent: usize,
    pub auth_hold_secs: u64,
    pub refresh_interval_secs: u64,
    pub ipmitool: PathBuf,
    pub ipmi_cipher_suite: u8,
    pub inband_accounts: bool,
    pub inband_username: String,
    pub inband_channel: u8,
    pub inband_networks: Vec<String>,
    pub vmedia_tool: PathBuf,
    pub vmedia_ttl_secs: u64,
}

impl Default for WireBmc {
    fn default() -> Self {
        WireBmc {
            request_timeout_secs: 10,
            action_deadline_secs: 300,
            soft_off_timeout_secs: 60,
            poll_interval_ms: 2000,
            retries: 3,
            retry_backoff_ms: 1000,
            max_concurrent: 16,
            auth_hold_secs: 300,
            refresh_interval_secs: 300,
            ipmitool: "/usr/bin/ipmitool".into(),
            ipmi_cipher_suite: 3,
            inband_accounts: false,
            inband_username: "rackboot".into(),
            inband_channel: 1,
            inband_networks: Vec::new(),
            vmedia_tool: "/usr/bin/grub-mkrescue".into(),
            vmedia_ttl_secs: 1800,
        }
    }
}

/// Validated `[bmc]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct BmcConfig {
    /// One request to a BMC (connect, TLS, answer), or one ipmitool run.
    pub request_timeout: Duration,
    /// A whole power action, retries and verification included.
    pub action_deadline: Duration,
    /// How long `off` waits for a graceful shutdown before forcing it.
    pub soft_off_timeout: Duration,
    /// How often the power state is read back while an action waits for it.
    pub poll_interval: Duration,
    /// Retries of a request that timed out, could not connect or got a 5xx.
    pub retries: u32,
    /// The first retry's wait; it doubles each time.
    pub retry_backoff: Duration,
    /// Power actions in flight at once over all BMCs (one per BMC at most, always).
    pub max_concurrent: usize,
    /// After a BMC refused the credentials, nothing is sent to it for this long unless its
    /// record changes (so rackboot never locks the account out).
    pub auth_hold: Duration,
    /// How often every BMC's power state is read; `None`: never (only on actions).
    pub refresh_interval: Option<Duration>,
    /// The ipmitool program.
    pub ipmitool: PathBuf,
    /// The RMCP+ cipher suite ipmitool uses (`-C`).
    pub ipmi_cipher_suite: u8,
    /// A BootOS agent that finds a BMC in band on a machine with none on record sets up the
    /// appliance's own account on it (`inband_username`, LAN channel `inband_channel`).
    pub inband_accounts: bool,
    pub inband_username: String,
    pub inband_channel: u8,
    /// The networks an in-band BMC address may be in (a node reports it: anything else, and
    /// another machine's recorded BMC, is refused).
    pub inband_networks: Vec<ipnet::IpNet>,
    /// The program that makes a virtual-media boot ISO (`grub-mkrescue`).
    pub vmedia_tool: PathBuf,
    /// A virtual CD not ejected by then (its machine's BootOS never called in) is ejected.
    pub vmedia_ttl: Duration,
}

impl Default for BmcConfig {
    fn default() -> Self {
        BmcConfig::try_from(WireBmc::default()).expect("the defaults are valid")
    }
}

impl TryFrom<WireBmc> for BmcConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireBmc) -> anyhow::Result<Self> {
        let WireBmc {
            request_timeout_secs,
            action_deadline_secs,
            soft_off_timeout_secs,
            poll_interval_ms,
            retries,
            retry_backoff_ms,
            max_concurrent,
            auth_hold_secs,
            refresh_interval_secs,
            ipmitool,
            ipmi_cipher_suite,
            inband_accounts,
            inband_username,
            inband_channel,
            inband_networks,
            vmedia_tool,
            vmedia_ttl_secs,
        } = w;
        let inband_networks = inband_networks
            .iter()
            .map(|n| n.parse::<ipnet::IpNet>().map_err(|e| anyhow::anyhow!("bmc.inband_networks: {n:?}: {e}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(
            !inband_accounts || !inband_networks.is_empty(),
            "bmc.inband_accounts needs bmc.inband_networks: the networks a BMC found in band may have its address in"
        );
        anyhow::ensure!(vmedia_tool.is_absolute(), "bmc.vmedia_tool must be an absolute path");
        anyhow::ensure!((60..=86_400).contains(&vmedia_ttl_secs), "bmc.vmedia_ttl_secs must be 60..=86400");
        anyhow::ensure!(
            (1..=16).contains(&inband_username.len())
                && inband_username.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "bmc.inband_username must be 1 to 16 letters, digits, '-' or '_'"
        );
        anyhow::ensure!((1..=11).contains(&inband_channel), "bmc.inband_channel must be a LAN channel, 1..=11");
        anyhow::ensure!((1..=120).contains(&request_timeout_secs), "bmc.request_timeout_secs must be 1..=120");
        anyhow::ensure!((10..=3600).contains(&action_deadline_secs), "bmc.action_deadline_secs must be 10..=3600");
        anyhow::ensure!(
            soft_off_timeout_secs < action_deadline_secs,
            "bmc.soft_off_timeout_secs must be below bmc.action_deadline_secs"
        );
        anyhow::ensure!((100..=60_000).contains(&poll_interval_ms), "bmc.poll_interval_ms must be 100..=60000");
        anyhow::ensure!(retries <= 10, "bmc.retries must be 0..=10");
        anyhow::ensure!((10..=60_000).contains(&retry_backoff_ms), "bmc.retry_backoff_ms must be 10..=60000");
        anyhow::ensure!((1..=1024).contains(&max_concurrent), "bmc.max_concurrent must be 1..=1024");
        anyhow::ensure!(ipmitool.is_absolute(), "bmc.ipmitool must be an absolute path");
        anyhow::ensure!(ipmi_cipher_suite <= 17, "bmc.ipmi_cipher_suite must be 0..=17");
        anyhow::ensure!(
            refresh_interval_secs == 0 || refresh_interval_secs >= 10,
            "bmc.refresh_interval_secs must be 0 (off) or at least 10"
        );
        Ok(BmcConfig {
            request_timeout: Duration::from_secs(request_timeout_secs),
            action_deadline: Duration::from_secs(action_deadline_secs),
            soft_off_timeout: Duration::from_secs(soft_off_timeout_secs),
            poll_interval: Duration::from_millis(poll_interval_ms),
            retries,
            retry_backoff: Duration::from_millis(retry_backoff_ms),
            max_concurrent,
            auth_hold: Duration::from_secs(auth_hold_secs),
            refresh_interval: (refresh_interval_secs > 0).then(|| Duration::from_secs(refresh_interval_secs)),
            ipmitool,
            ipmi_cipher_suite,
            inband_accounts,
            inband_username,
            inband_channel,
            inband_networks,
            vmedia_tool,
            vmedia_ttl: Duration::from_secs(vmedia_ttl_secs),
        })
    }
}
