//! Network bring-up the G8OS way: a static configuration from the kernel command line when one
//! is given (`ip=<client>::<gateway>:<netmask>:<hostname>:<device>:off`, the kernel's own
//! syntax), otherwise DHCP on each interface with a link, one by one, until the appliance
//! answers. Uses busybox `ip` and `udhcpc` (the BootOS image carries both and the udhcpc
//! script; udhcpc stays in the background after its lease and renews it, since a node can wait
//! in BootOS for a long time). Installed nodes skip all of this: their OS owns the network.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Settings read from the kernel command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cmdline {
    /// `rackboot.url=`: the appliance's base URL.
    pub url: Option<String>,
    /// `rackboot.ca=`: `sha256:<hex>` of the appliance's CA certificate (the pin).
    pub ca_pin: Option<String>,
    /// `rackboot.mac=`: the MAC the machine booted from.
    pub boot_mac: Option<String>,
    /// `rackboot.nonce=`: this boot's one-time enrollment nonce.
    pub nonce: Option<String>,
    /// `ip=` when it is a static configuration.
    pub static_ip: Option<StaticIp>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StaticIp {
    pub address: String,
    pub gateway: Option<String>,
    pub prefix: u8,
    pub device: Option<String>,
}

pub fn parse_cmdline(text: &str) -> Cmdline {
    let mut c = Cmdline::default();
    for word in text.split_whitespace() {
        if let Some(v) = word.strip_prefix("rackboot.url=") {
            c.url = Some(v.to_string());
        } else if let Some(v) = word.strip_prefix("rackboot.ca=") {
            c.ca_pin = Some(v.to_string());
        } else if let Some(v) = word.strip_prefix("rackboot.mac=") {
            c.boot_mac = Some(v.to_ascii_lowercase().replace('-', ":"));
        } else if let Some(v) = word.strip_prefix("rackboot.nonce=") {
            c.nonce = Some(v.to_string());
        } else if let Some(v) = word.strip_prefix("ip=") {
            c.static_ip = parse_ip(v);
        }
    }
    c
}

/// `ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>`; `dhcp` and
/// the like (or no address) mean "not static".
fn parse_ip(v: &str) -> Option<StaticIp> {
    let f: Vec<&str> = v.split(':').collect();
    let address = f.first().filter(|a| a.parse::<std::net::Ipv4Addr>().is_ok())?.to_string();
    let netmask: std::net::Ipv4Addr = f.get(3).and_then(|m| m.parse().ok()).unwrap_or([255, 255, 255, 0].into());
    Some(StaticIp {
        address,
        gateway: f.get(2).filter(|g| !g.is_empty()).map(|g| g.to_string()),
        prefix: u32::from(netmask).count_ones() as u8,
        device: f.get(5).filter(|d| !d.is_empty()).map(|d| d.to_string()),
    })
}

fn run(cmd: &str, args: &[&str]) -> bool {
    match Command::new(cmd).args(args).status() {
        Ok(s) => s.success(),
        Err(error) => {
            tracing::warn!(cmd, %error, "cannot run");
            false
        }
    }
}

/// Interfaces that could reach the appliance: not loopback, with a device behind them.
pub fn candidate_interfaces(sys: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(sys.join("class/net"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.retain(|n| n != "lo" && sys.join(format!("class/net/{n}/device")).exists());
    v.sort();
    v
}

/// Brings the network up until `reachable` says the appliance answers; never gives up (a node
/// that cannot reach the appliance has nothing else to do), backing off up to 30 s.
pub async fn bring_up(cmdline: &Cmdline, udhcpc_script: &str, reachable: impl AsyncFn() -> bool) {
    let mut backoff = Duration::from_secs(1);
    loop {
        run("ip", &["link", "set", "lo", "up"]);
        if let Some(s) = &cmdline.static_ip {
            let dev = s.device.clone().or_else(|| candidate_interfaces(Path::new("/sys")).into_iter().next());
            if let Some(dev) = dev {
                run("ip", &["link", "set", &dev, "up"]);
                run("ip", &["addr", "replace", &format!("{}/{}", s.address, s.prefix), "dev", &dev]);
                if let Some(gw) = &s.gateway {
                    run("ip", &["route", "replace", "default", "via", gw]);
                }
                if reachable().await {
                    tracing::info!(%dev, address = %s.address, "network up (static, from the kernel command line)");
                    return;
                }
            }
        } else {
            for dev in candidate_interfaces(Path::new("/sys")) {
                run("ip", &["link", "set", &dev, "up"]);
                if !wait_for_carrier(&dev, Duration::from_secs(3)).await {
                    continue;
                }
                // One udhcpc per interface: stop the one a previous round left in the background.
                let pidfile = format!("/run/udhcpc.{dev}.pid");
                if let Ok(pid) = std::fs::read_to_string(&pidfile) {
                    if let Ok(pid) = pid.trim().parse::<i32>() {
                        let _ =
                            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM);
                    }
                }
                if run("udhcpc", &["-i", &dev, "-n", "-t", "4", "-T", "2", "-p", &pidfile, "-s", udhcpc_script])
                    && reachable().await
                {
                    tracing::info!(%dev, "network up (dhcp)");
                    return;
                }
            }
        }
        tracing::warn!(retry_in = ?backoff, "the appliance is not reachable yet");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

async fn wait_for_carrier(dev: &str, max: Duration) -> bool {
    let path = format!("/sys/class/net/{dev}/carrier");
    let deadline = tokio::time::Instant::now() + max;
    loop {
        if std::fs::read_to_string(&path).is_ok_and(|s| s.trim() == "1") {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rackboot_settings_and_static_ip() {
        let c = parse_cmdline(
            "console=ttyS0 rackboot.url=https://198.18.0.1:8443 rackboot.ca=sha256:ab12 rackboot.mac=52-54-00-AA-00-01 ip=198.18.0.77::198.18.0.1:255.255.255.0:node7:eth1:off quiet",
        );
        assert_eq!(c.url.as_deref(), Some("https://198.18.0.1:8443"));
        assert_eq!(c.ca_pin.as_deref(), Some("sha256:ab12"));
        assert_eq!(c.boot_mac.as_deref(), Some("52:54:00:aa:00:01"));
        assert_eq!(
            c.static_ip,
            Some(StaticIp {
                address: "198.18.0.77".into(),
                gateway: Some("198.18.0.1".into()),
                prefix: 24,
                device: Some("eth1".into())
            })
        );
        assert_eq!(parse_cmdline("ip=dhcp").static_ip, None);
        assert_eq!(parse_cmdline("ip=10.0.0.5").static_ip.unwrap().prefix, 24);
    }
}
