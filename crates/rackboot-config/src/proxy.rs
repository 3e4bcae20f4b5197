//! `[proxy]`: the package proxy for installing nodes, Debian's `squid` run by rackboot, bound to
//! the provisioning address, open to the DHCP subnets only and only for the upstream hosts listed.

use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireProxy {
    pub enable: bool,
    pub squid: PathBuf,
    pub port: u16,
    pub upstream_hosts: Vec<String>,
    pub parent: String,
    pub cache_mb: u32,
    pub max_object_mb: u32,
}

impl Default for WireProxy {
    fn default() -> Self {
        WireProxy {
            enable: false,
            squid: PathBuf::from("/usr/sbin/squid"),
            port: 3128,
            upstream_hosts: ["deb.debian.org", "security.debian.org", "archive.ubuntu.com", "security.ubuntu.com"]
                .map(String::from)
                .into(),
            parent: String::new(),
            cache_mb: 8192,
            max_object_mb: 1024,
        }
    }
}

/// Validated `[proxy]`.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Run squid (started, restarted and stopped by rackboot) on `<address>:<port>`.
    pub enable: bool,
    /// The `squid` binary.
    pub squid: PathBuf,
    pub port: u16,
    /// The only hosts it fetches from: names (`.example.org` takes its subdomains too) or IPv4
    /// addresses, as written in URLs.
    pub upstream_hosts: Vec<String>,
    /// A proxy squid goes through instead of going direct (`host:port`), e.g. a site's own.
    pub parent: Option<(String, u16)>,
    /// The disk cache's size, in MiB.
    pub cache_mb: u32,
    /// Largest object kept, in MiB.
    pub max_object_mb: u32,
}

/// Whether `h` is a host name (or a `.domain` taking its subdomains) or an IPv4 address: what
/// squid's `dstdomain` takes, and nothing that could break out of its config line.
fn valid_host(h: &str) -> bool {
    let name = h.strip_prefix('.').unwrap_or(h);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

fn parse_parent(parent: &str) -> anyhow::Result<Option<(String, u16)>> {
    if parent.is_empty() {
        return Ok(None);
    }
    let rest = parent.strip_prefix("http://").unwrap_or(parent).trim_end_matches('/');
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| anyhow::anyhow!("proxy.parent {parent:?} must be host:port or http://host:port"))?;
    let port: u16 = port.parse().map_err(|_| anyhow::anyhow!("proxy.parent {parent:?}: bad port {port:?}"))?;
    anyhow::ensure!(valid_host(host) && !host.starts_with('.'), "proxy.parent {parent:?}: bad host {host:?}");
    anyhow::ensure!(port != 0, "proxy.parent {parent:?}: port 0");
    Ok(Some((host.to_string(), port)))
}

impl TryFrom<WireProxy> for ProxyConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireProxy) -> anyhow::Result<Self> {
        let WireProxy { enable, squid, port, upstream_hosts, parent, cache_mb, max_object_mb } = w;
        anyhow::ensure!(squid.is_absolute(), "proxy.squid {:?} must be an absolute path", squid.display());
        anyhow::ensure!(port != 0, "proxy.port must not be 0");
        anyhow::ensure!(
            !enable || !upstream_hosts.is_empty(),
            "proxy.upstream_hosts is empty: the proxy would fetch nothing"
        );
        anyhow::ensure!(upstream_hosts.len() <= 256, "proxy.upstream_hosts: at most 256 hosts");
        for h in &upstream_hosts {
            anyhow::ensure!(valid_host(h), "proxy.upstream_hosts: {h:?} is not a host name or IPv4 address");
        }
        anyhow::ensure!((100..=1 << 22).contains(&cache_mb), "proxy.cache_mb must be 100..=4194304");
        anyhow::ensure!((1..=cache_mb).contains(&max_object_mb), "proxy.max_object_mb must be 1..=cache_mb");
        let parent = parse_parent(&parent)?;
        let upstream_hosts = upstream_hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect();
        Ok(ProxyConfig { enable, squid, port, upstream_hosts, parent, cache_mb, max_object_mb })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(hosts: &[&str], parent: &str) -> WireProxy {
        WireProxy {
            enable: true,
            upstream_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            parent: parent.into(),
            ..WireProxy::default()
        }
    }

    #[test]
    fn upstream_hosts_are_names_domains_or_addresses_and_nothing_that_escapes_a_config_line() {
        let ok =
            ProxyConfig::try_from(wire(&["deb.debian.org", ".ubuntu.com", "198.19.0.2", "Mirror-1.Lab"], "")).unwrap();
        assert_eq!(ok.upstream_hosts, ["deb.debian.org", ".ubuntu.com", "198.19.0.2", "mirror-1.lab"]);
        for bad in ["", "a b", "deb.debian.org\nhttp_access allow all", "*.org", "-x.org", "a..b", "x/y"] {
            assert!(ProxyConfig::try_from(wire(&[bad], "")).is_err(), "{bad:?} accepted");
        }
        assert!(ProxyConfig::try_from(wire(&[], "")).is_err(), "an enabled proxy with no upstream host");
    }

    #[test]
    fn a_parent_proxy_is_host_and_port() {
        let p = ProxyConfig::try_from(wire(&["deb.debian.org"], "http://proxy.corp:3128/")).unwrap();
        assert_eq!(p.parent, Some(("proxy.corp".into(), 3128)));
        for bad in ["proxy.corp", "proxy.corp:x", "http://:3128", "a b:1", "proxy.corp:0"] {
            assert!(ProxyConfig::try_from(wire(&["deb.debian.org"], bad)).is_err(), "{bad:?} accepted");
        }
    }
}
