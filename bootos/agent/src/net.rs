//! Network bring-up the G8OS way: a static configuration from the kernel command line when one
//! is given (`ip=<client>::<gateway>:<netmask>:<hostname>:<device>:off`, the kernel's own
//! syntax), otherwise DHCP on each interface with a link, one by one, until the appliance
//! answers; when that fails too, each interface in turn on the fallback network
//! ([`crate::fallback`]), and the whole round again, for ever. An appliance URL naming an IPv6
//! address (`rackboot.url=https://[fd18::1]`) is reached over IPv6: the kernel configures the
//! address from the appliance's router advertisements (SLAAC). Uses busybox `ip` and `udhcpc` (the BootOS image carries both and the udhcpc
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
    /// `rackboot.fallback=<a.b.c.0/n>|off`: the last-resort network (default 10.254.254.0/24).
    pub fallback: Option<crate::fallback::Net>,
    /// `rackboot.fallback_ip=`: the fallback address to try first (another is chosen when a
    /// node answers for it).
    pub fallback_ip: Option<std::net::Ipv4Addr>,
    /// `rackboot.ifaces=eth0,eth1`: only these interfaces (default: every one with a device).
    pub interfaces: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StaticIp {
    pub address: String,
    pub gateway: Option<String>,
    pub prefix: u8,
    pub device: Option<String>,
}

pub fn parse_cmdline(text: &str) -> Cmdline {
    let mut c = Cmdline { fallback: Some(crate::fallback::DEFAULT), ..Cmdline::default() };
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
        } else if let Some(v) = word.strip_prefix("rackboot.fallback=") {
            c.fallback = parse_fallback(v);
        } else if let Some(v) = word.strip_prefix("rackboot.fallback_ip=") {
            c.fallback_ip = v.parse().ok();
        } else if let Some(v) = word.strip_prefix("rackboot.ifaces=") {
            c.interfaces = parse_interfaces(v);
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

/// `off` (or anything that is no fallback network) turns the fallback off.
pub fn parse_fallback(v: &str) -> Option<crate::fallback::Net> {
    let net = crate::fallback::Net::parse(v);
    if net.is_none() && v != "off" {
        tracing::warn!(value = v, "rackboot.fallback is no a.b.c.0/n network (n 8..=24): no fallback network");
    }
    net
}

/// A comma-separated list of interface names; none when empty.
pub fn parse_interfaces(v: &str) -> Option<Vec<String>> {
    let list: Vec<String> = v.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect();
    (!list.is_empty()).then_some(list)
}

/// `url` (`https://host[:port][/path]`) with its host replaced by `ip` when given.
pub fn url_at(url: &str, ip: Option<std::net::Ipv4Addr>) -> String {
    let Some(ip) = ip else { return url.to_string() };
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let (authority, path) = rest.split_once('/').map_or((rest, None), |(a, p)| (a, Some(p)));
    let port = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once("]:").map(|(_, p)| p),
        None => authority.rsplit_once(':').map(|(_, p)| p),
    };
    let port = port.map_or(String::new(), |p| format!(":{p}"));
    match path {
        Some(path) => format!("https://{ip}{port}/{path}"),
        None => format!("https://{ip}{port}"),
    }
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

/// Brings the network up until `reachable(None)` says the appliance answers at its URL, or
/// `reachable(Some(ip))` that it answers at `ip` on the fallback network; never gives up (a node
/// that cannot reach the appliance has nothing else to do), backing off up to 30 s. Returns the
/// appliance's fallback address when that is how it was reached.
pub async fn bring_up(
    cmdline: &Cmdline,
    udhcpc_script: &str,
    reachable: impl AsyncFn(Option<std::net::Ipv4Addr>) -> bool,
) -> Option<std::net::Ipv4Addr> {
    let interfaces = || match &cmdline.interfaces {
        Some(list) => list.clone(),
        None => candidate_interfaces(Path::new("/sys")),
    };
    let mut backoff = Duration::from_secs(1);
    loop {
        run("ip", &["link", "set", "lo", "up"]);
        if let Some(s) = &cmdline.static_ip {
            let dev = s.device.clone().or_else(|| interfaces().into_iter().next());
            if let Some(dev) = dev {
                run("ip", &["link", "set", &dev, "up"]);
                run("ip", &["addr", "replace", &format!("{}/{}", s.address, s.prefix), "dev", &dev]);
                if let Some(gw) = &s.gateway {
                    run("ip", &["route", "replace", "default", "via", gw]);
                }
                if reachable(None).await {
                    tracing::info!(%dev, address = %s.address, "network up (static, from the kernel command line)");
                    return None;
                }
            }
        } else if cmdline.url.as_deref().is_some_and(names_ipv6) {
            // The appliance is on IPv6: the kernel takes its address from the router
            // advertisements (SLAAC; the appliance advertises its DHCPv6 prefixes).
            for dev in interfaces() {
                if slaac(&dev).await && reachable(None).await {
                    tracing::info!(%dev, "network up (IPv6, SLAAC)");
                    return None;
                }
            }
        } else {
            for dev in interfaces() {
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
                    && reachable(None).await
                {
                    tracing::info!(%dev, "network up (dhcp)");
                    return None;
                }
            }
        }
        if let Some(net) = &cmdline.fallback {
            for dev in interfaces() {
                run("ip", &["link", "set", &dev, "up"]);
                if !wait_for_carrier(&dev, Duration::from_secs(3)).await {
                    continue;
                }
                let at = async |ip| reachable(Some(ip)).await;
                if crate::fallback::try_interface(net, &dev, cmdline.fallback_ip, &at).await.is_some() {
                    return Some(net.appliance());
                }
            }
        }
        tracing::warn!(retry_in = ?backoff, "the appliance is not reachable yet");
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

/// Whether `url`'s host is an IPv6 address (`https://[addr]...`).
pub fn names_ipv6(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.strip_prefix('[').and_then(|r| r.split_once(']')).is_some_and(|(a, _)| a.parse::<std::net::Ipv6Addr>().is_ok())
}

/// Brings `dev` up with IPv6 autoconfiguration on and waits (up to 15 s) for a global address.
async fn slaac(dev: &str) -> bool {
    for (key, value) in [("disable_ipv6", "0"), ("accept_ra", "1"), ("autoconf", "1")] {
        let _ = std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/{key}"), value);
    }
    run("ip", &["link", "set", dev, "up"]);
    if !wait_for_carrier(dev, Duration::from_secs(3)).await {
        return false;
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while tokio::time::Instant::now() < deadline {
        let out = Command::new("ip").args(["-6", "addr", "show", "dev", dev, "scope", "global"]).output();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
        if text.contains("inet6") && !text.contains("tentative") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
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
        assert_eq!(c.fallback, Some(crate::fallback::DEFAULT), "on unless turned off");
        let c =
            parse_cmdline("rackboot.fallback=10.99.0.0/16 rackboot.fallback_ip=10.99.0.7 rackboot.ifaces=eth1,,eth2");
        assert_eq!(c.fallback.unwrap().appliance(), std::net::Ipv4Addr::new(10, 99, 0, 254));
        assert_eq!(c.fallback_ip, Some(std::net::Ipv4Addr::new(10, 99, 0, 7)));
        assert_eq!(c.interfaces, Some(vec!["eth1".to_string(), "eth2".to_string()]));
        assert_eq!(parse_cmdline("rackboot.fallback=off").fallback, None);
        let ip = Some(std::net::Ipv4Addr::new(10, 254, 254, 254));
        assert_eq!(url_at("https://198.18.0.1:8443", ip), "https://10.254.254.254:8443");
        assert_eq!(url_at("https://rackboot.lab/x", ip), "https://10.254.254.254/x");
        assert_eq!(url_at("https://[fd00::1]:443/", ip), "https://10.254.254.254:443/");
        assert_eq!(url_at("https://[fd00::1]", ip), "https://10.254.254.254");
        assert_eq!(url_at("https://a:1", None), "https://a:1");
        assert_eq!(parse_cmdline("ip=10.0.0.5").static_ip.unwrap().prefix, 24);
        assert!(names_ipv6("https://[fd18::1]:443") && names_ipv6("https://[fd18::1]"));
        assert!(
            !names_ipv6("https://198.18.0.1:443") && !names_ipv6("https://rackboot.lab") && !names_ipv6("https://[x]")
        );
    }
}
