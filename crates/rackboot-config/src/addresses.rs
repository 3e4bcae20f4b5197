//! The appliance's addresses, resolved once at start from the config and the interface facts:
//! which interface and address the provisioning services use, the HTTP base URL machines are
//! given, and the networks that default to the DHCP subnets.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use anyhow::Context;
use tracing::warn;

use crate::value::slash24;
use crate::{Config, DhcpMode, Ipv4Net};
use rackboot_base::net;

/// What start-up decided from the config and the interface it found.
#[derive(Debug, Clone, PartialEq)]
pub struct Addresses {
    /// Interface the provisioning sockets bind to ("": every interface).
    pub interface: String,
    /// The appliance's address on it (server identifier, next-server, DNS), found when DHCP or
    /// DNS runs.
    pub server_ip: Option<Ipv4Addr>,
    /// Base URL machines reach the HTTP server at, without a trailing slash (firmware).
    pub http_base: String,
    /// Base URL of the HTTPS server (agents, the CLI): `http.public_url`'s host, else the
    /// appliance's address, with the HTTPS port.
    pub https_base: String,
    /// The boot listener's base URL (firmware's HTTPS boot), once it is bound; `None`: off.
    pub boot_https_base: Option<String>,
    /// The DHCP mode that runs: `Off` when proxy mode found no interface to serve on.
    pub dhcp: DhcpMode,
    /// Whether DNS runs: configured, with an address to answer on (and, after binding, bound).
    pub dns: bool,
    /// Networks whose reverse zones DNS serves: `dns.reverse_zones`, else the DHCP subnets,
    /// else the appliance's /24.
    pub reverse_zones: Vec<Ipv4Net>,
    /// Networks whose agents enroll without approval: `agent.networks`, else as above.
    pub agent_networks: Vec<Ipv4Net>,
    /// The name server DHCP gives subnets that name none: this appliance, once DNS is bound on
    /// port 53 (clients cannot be pointed at another port).
    pub name_server: Option<Ipv4Addr>,
    /// The appliance's IPv6 address on the interface inside a `[[dhcp6.subnets]]` prefix, when
    /// the DHCPv6 server runs (boot URLs, DNS, HTTP and HTTPS listen there too).
    pub server_ip6: Option<std::net::Ipv6Addr>,
}

/// Resolves the addresses from `cfg`, the bound HTTP address, the bound HTTPS port and `lookup`
/// (the interface and its address; asked only when DHCP or DNS needs them; [`lookup_interface`]
/// in the appliance).
pub fn resolve(
    cfg: &Config,
    http_addr: SocketAddr,
    https_port: u16,
    lookup: impl FnOnce(&Config) -> anyhow::Result<(String, Ipv4Addr)>,
) -> anyhow::Result<Addresses> {
    let (mut dhcp, mut dns) = (cfg.dhcp.mode, cfg.dns.enabled);
    let mut found = None;
    if dhcp != DhcpMode::Off || dns {
        match lookup(cfg) {
            Ok(f) => found = Some(f),
            // Beside another DHCP server nobody depends on us: serve HTTP and TFTP alone.
            Err(error) if dhcp != DhcpMode::Full && cfg.interface.is_empty() => {
                warn!(%error, "no usable interface found; proxy DHCP and DNS stay off");
                (dhcp, dns) = (DhcpMode::Off, false);
            }
            Err(error) => return Err(error),
        }
    }
    let server_ip = found.as_ref().map(|(_, ip)| *ip);
    let public_ip = server_ip.or(cfg.address).unwrap_or(match http_addr.ip() {
        IpAddr::V4(ip) if !ip.is_unspecified() => ip,
        _ => Ipv4Addr::LOCALHOST,
    });
    let http_base = match (cfg.public_url.as_str(), http_addr.port()) {
        ("", 80) => format!("http://{public_ip}"),
        ("", port) => format!("http://{public_ip}:{port}"),
        (url, _) => url.to_string(),
    };
    let host = net::url_host(&cfg.public_url).unwrap_or_else(|| public_ip.to_string());
    let host = if host.contains(':') { format!("[{host}]") } else { host };
    let https_base = match https_port {
        443 => format!("https://{host}"),
        port => format!("https://{host}:{port}"),
    };
    let subnets = cfg.dhcp.networks();
    let or_default = |configured: &[Ipv4Net]| match (configured.is_empty(), subnets.is_empty()) {
        (false, _) => configured.to_vec(),
        (true, false) => subnets.clone(),
        (true, true) => vec![slash24(public_ip)],
    };
    let mut agent_networks = or_default(&cfg.agent.networks);
    // Nodes on the fallback network are the appliance's own.
    agent_networks.extend(cfg.fallback);
    Ok(Addresses {
        interface: found.map(|(iface, _)| iface).unwrap_or_else(|| cfg.interface.clone()),
        server_ip,
        http_base,
        https_base,
        boot_https_base: None,
        dhcp,
        dns,
        reverse_zones: or_default(&cfg.dns.reverse_zones),
        agent_networks,
        name_server: None,
        server_ip6: None,
    })
}

/// The provisioning interface and its address, from the config or the host's interfaces.
pub fn lookup_interface(cfg: &Config) -> anyhow::Result<(String, Ipv4Addr)> {
    if let ("", Some(ip)) = (cfg.interface.as_str(), cfg.address) {
        // An address without an interface: listen on every interface (tests, simple hosts).
        return Ok((String::new(), ip));
    }
    if cfg.interface.is_empty() {
        let (iface, ip) = net::first_usable_interface().context("no interface is up with an IPv4 address")?;
        return Ok((iface, cfg.address.unwrap_or(ip)));
    }
    let ip = match cfg.address {
        Some(ip) => ip,
        None => net::interface_ipv4(&cfg.interface)?,
    };
    Ok((cfg.interface.clone(), ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        Config::parse(text).unwrap()
    }

    fn eth1(_: &Config) -> anyhow::Result<(String, Ipv4Addr)> {
        Ok(("eth1".into(), Ipv4Addr::new(198, 18, 0, 1)))
    }

    fn nothing(_: &Config) -> anyhow::Result<(String, Ipv4Addr)> {
        anyhow::bail!("no interface is up with an IPv4 address")
    }

    const HTTP: &str = "0.0.0.0:80";

    #[test]
    fn proxy_mode_on_the_found_interface() {
        let a = resolve(&cfg(""), HTTP.parse().unwrap(), 443, eth1).unwrap();
        assert_eq!((a.interface.as_str(), a.server_ip), ("eth1", Some(Ipv4Addr::new(198, 18, 0, 1))));
        assert_eq!((a.dhcp, a.dns, a.http_base.as_str()), (DhcpMode::Proxy, true, "http://198.18.0.1"));
        let net24: Ipv4Net = "198.18.0.0/24".parse().unwrap();
        assert_eq!((a.reverse_zones, a.agent_networks), (vec![net24], vec![net24]));
        assert_eq!(a.name_server, None, "set only once DNS is bound");
    }

    #[test]
    fn without_an_interface_proxy_dhcp_and_dns_stay_off_but_full_mode_fails() {
        let a = resolve(&cfg(""), "127.0.0.1:8080".parse().unwrap(), 443, nothing).unwrap();
        assert_eq!((a.dhcp, a.dns, a.server_ip), (DhcpMode::Off, false, None));
        assert_eq!(a.http_base, "http://127.0.0.1:8080");
        assert_eq!(a.https_base, "https://127.0.0.1");
        let full = cfg("[server]\ninterface=\"eth9\"\n[dhcp]\nmode=\"full\"\n[[dhcp.subnets]]\ncidr=\"10.0.0.0/16\"\npools=[\"10.0.1.1-10.0.1.9\"]");
        assert!(resolve(&full, HTTP.parse().unwrap(), 443, nothing).is_err());
        // A named interface that is missing is an error in proxy mode too.
        assert!(resolve(&cfg("[server]\ninterface=\"eth9\""), HTTP.parse().unwrap(), 443, nothing).is_err());
    }

    #[test]
    fn nothing_is_looked_up_when_neither_dhcp_nor_dns_runs() {
        let c = cfg("[server]\ninterface=\"eth2\"\naddress=\"10.1.2.3\"\n[dhcp]\nmode=\"off\"\n[dns]\nenabled=false");
        let a = resolve(&c, HTTP.parse().unwrap(), 8443, |_| panic!("looked up")).unwrap();
        assert_eq!((a.interface.as_str(), a.server_ip, a.http_base.as_str()), ("eth2", None, "http://10.1.2.3"));
        assert_eq!(a.https_base, "https://10.1.2.3:8443");
        assert_eq!(a.agent_networks, vec!["10.1.2.0/24".parse::<Ipv4Net>().unwrap()]);
    }

    #[test]
    fn configured_networks_and_public_url_win_over_derived_ones() {
        let c = cfg("[http]\npublic_url=\"https://boot.example/\"\n[dns]\nreverse_zones=[\"10.9.0.0/16\"]\n[agent]\nnetworks=[\"10.8.0.0/16\"]\n[[dhcp.subnets]]\ncidr=\"10.7.0.0/16\"\npools=[\"10.7.1.1-10.7.1.9\"]");
        let a = resolve(&c, HTTP.parse().unwrap(), 443, eth1).unwrap();
        assert_eq!(a.http_base, "https://boot.example");
        assert_eq!(a.https_base, "https://boot.example");
        assert_eq!(a.reverse_zones, vec!["10.9.0.0/16".parse::<Ipv4Net>().unwrap()]);
        assert_eq!(a.agent_networks, vec!["10.8.0.0/16".parse::<Ipv4Net>().unwrap()]);
        let c = cfg("[[dhcp.subnets]]\ncidr=\"10.7.0.0/16\"\npools=[\"10.7.1.1-10.7.1.9\"]");
        let a = resolve(&c, HTTP.parse().unwrap(), 443, eth1).unwrap();
        assert_eq!(a.reverse_zones, vec!["10.7.0.0/16".parse::<Ipv4Net>().unwrap()]);
    }

    #[test]
    fn an_address_without_an_interface_listens_everywhere() {
        let c = cfg("[server]\naddress=\"127.0.0.1\"");
        assert_eq!(lookup_interface(&c).unwrap(), (String::new(), Ipv4Addr::LOCALHOST));
    }
}
