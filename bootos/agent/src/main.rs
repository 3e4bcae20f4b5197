//! `rackboot-agent`: see the library docs. Settings come from the kernel command line
//! (`rackboot.url=`, `rackboot.ca=sha256:<hex>`, `rackboot.mac=`, `ip=`, `rackboot.fallback=`,
//! `rackboot.fallback_ip=`, `rackboot.ifaces=`) in BootOS, or from flags (which win):
//!
//! ```text
//! rackboot-agent [--url URL] [--ca FILE] [--mode bootos|installed] [--state-dir DIR] [--no-network]
//!                [--udhcpc-script FILE] [--fallback CIDR|off] [--fallback-ip IP] [--interfaces A,B]
//! ```

use std::path::PathBuf;

use rackboot_agent::net;
use rackboot_agent::run::{Agent, Options};
use rackboot_agent::tls::Trust;
use rackboot_agent::wire::AgentMode;

const USAGE: &str = "usage: rackboot-agent [--url URL] [--ca FILE] [--mode bootos|installed] [--state-dir DIR] [--no-network] [--udhcpc-script FILE] [--fallback CIDR|off] [--fallback-ip IP] [--interfaces A,B]";

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let mut cmdline = net::parse_cmdline(&std::fs::read_to_string("/proc/cmdline").unwrap_or_default());
    let mut url = std::env::var("RACKBOOT_URL").ok().or(cmdline.url.clone());
    let mut ca_file: Option<PathBuf> = None;
    let mut mode = AgentMode::Bootos;
    let mut state_dir = None;
    let mut network = true;
    let mut script = "/etc/udhcpc.script".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow::anyhow!("{a} needs a value\n{USAGE}"));
        match a.as_str() {
            "--url" => url = Some(value()?),
            "--ca" => ca_file = Some(PathBuf::from(value()?)),
            "--mode" => {
                mode = match value()?.as_str() {
                    "bootos" => AgentMode::Bootos,
                    "installed" => AgentMode::Installed,
                    other => anyhow::bail!("unknown mode {other:?}\n{USAGE}"),
                }
            }
            "--state-dir" => state_dir = Some(PathBuf::from(value()?)),
            "--udhcpc-script" => script = value()?,
            "--fallback" => cmdline.fallback = net::parse_fallback(&value()?),
            "--fallback-ip" => {
                let v = value()?;
                cmdline.fallback_ip =
                    Some(v.parse().map_err(|_| anyhow::anyhow!("--fallback-ip {v:?} is no IPv4 address"))?);
            }
            "--interfaces" => cmdline.interfaces = net::parse_interfaces(&value()?),
            "--no-network" => network = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let url = url.ok_or_else(|| anyhow::anyhow!("no appliance URL: pass --url or boot with rackboot.url=\n{USAGE}"))?;
    // A CA file wins over the pin; with neither the agent talks to nobody.
    let trust = match (&ca_file, &cmdline.ca_pin) {
        (Some(f), _) => Trust::CaPem(std::fs::read(f).map_err(|e| anyhow::anyhow!("reading {}: {e}", f.display()))?),
        (None, Some(pin)) => Trust::pin(pin)?,
        (None, None) => anyhow::bail!("no CA to trust: pass --ca FILE or boot with rackboot.ca=sha256:<hex>\n{USAGE}"),
    };
    // An installed node keeps its credential across restarts. BootOS keeps it in RAM (/run), so a
    // restarted agent renews with it: this boot's nonce is used up by the first enrollment.
    let state_dir = state_dir.or_else(|| {
        Some(PathBuf::from(if mode == AgentMode::Installed {
            "/var/lib/rackboot-agent"
        } else {
            "/run/rackboot-agent"
        }))
    });
    let mut opts = Options {
        url: url.clone(),
        trust: trust.clone(),
        mode,
        state_dir,
        boot_mac: cmdline.boot_mac.clone(),
        nonce: cmdline.nonce.clone().filter(|_| mode == AgentMode::Bootos),
        root: PathBuf::from("/"),
        workdir: PathBuf::from(if mode == AgentMode::Installed {
            "/var/lib/rackboot-agent/jobs"
        } else {
            "/run/rackboot-agent"
        }),
        // Interfaces named on the command line are the machine's, whatever the inventory would
        // count (it takes NICs with a device behind them).
        macs: cmdline.interfaces.as_ref().map(|list| {
            list.iter()
                .filter_map(|i| std::fs::read_to_string(format!("/sys/class/net/{i}/address")).ok())
                .map(|m| m.trim().to_string())
                .collect()
        }),
        lldp: true,
        machine_actions: true,
        ipmitool: "ipmitool".into(),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async move {
        if network && mode == AgentMode::Bootos {
            let via =
                async |fallback: Option<std::net::Ipv4Addr>| reachable(&net::url_at(&url, fallback), &trust).await;
            if let Some(appliance) = net::bring_up(&cmdline, &script, via).await {
                // Reached on the fallback network: the appliance is there from now on.
                opts.url = net::url_at(&url, Some(appliance));
            }
        }
        Agent::new(opts)?.run().await
    })
}

async fn reachable(url: &str, trust: &Trust) -> bool {
    let Some(rest) = url.strip_prefix("https://") else { return false };
    let base = format!("https://{}", rest.split('/').next().unwrap_or_default());
    let Ok(mut c) = rackboot_agent::client::Client::new(&base, trust) else { return false };
    // Any answer proves the appliance is reachable over this interface: /healthz is 503 while some
    // boot asset is missing (say, the UEFI binary on a BIOS-only rack), which is no reason to
    // give up on the network.
    matches!(c.call::<()>(hyper::Method::GET, "/healthz", None, std::time::Duration::from_secs(3)).await, Ok(r) if r.ok() || r.status == 503)
}
