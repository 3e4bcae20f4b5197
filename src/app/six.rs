//! The appliance on IPv6: dual-stack whenever the provisioning interface has a global IPv6
//! address. Beside the DHCPv6 server that is its address in a `[[dhcp6.subnets]]` prefix (a
//! machine on an IPv6-only link then reaches every service its boot URLs and DNS options
//! name); without it, the interface's first. HTTP, HTTPS, DNS and TFTP listen there too.

use std::net::{Ipv6Addr, SocketAddr};

use anyhow::Context;
use tokio::net::{TcpListener, UdpSocket};
use tracing::{info, warn};

use crate::config::{addresses::Addresses, Config};
use crate::{dns, net};

/// The interface's IPv6 address inside a DHCPv6 subnet, when the DHCPv6 server runs.
pub fn server_ip6(cfg: &Config, interface: &str) -> Option<Ipv6Addr> {
    if !cfg.dhcp6.enabled {
        return None;
    }
    let found =
        net::interface_ipv6(interface).into_iter().find(|ip| cfg.dhcp6.subnets.iter().any(|s| s.prefix.contains(ip)));
    if found.is_none() {
        warn!(
            iface = interface,
            "dhcp6: the interface has no address in a dhcp6 subnet; no boot URLs, and nothing listens on IPv6"
        );
    }
    found
}

/// The sockets on the appliance's IPv6 address.
#[derive(Default)]
pub struct Bound6 {
    pub http: Option<TcpListener>,
    pub https: Option<TcpListener>,
    pub dns: Option<dns::Bound>,
    pub tftp: Option<UdpSocket>,
}

/// Binds HTTP and HTTPS on the same ports as on IPv4, DNS and TFTP on theirs, at `addrs`'s
/// IPv6 address; nothing where there is none, or where a listener already takes every address.
/// A failure is fatal beside the DHCPv6 server (its clients depend on these); otherwise the
/// appliance runs on IPv4 alone, with a warning.
pub async fn bind(cfg: &Config, addrs: &Addresses, http: SocketAddr, https: SocketAddr) -> anyhow::Result<Bound6> {
    match bind_all(cfg, addrs, http, https).await {
        Ok(b) => Ok(b),
        Err(error) if !cfg.dhcp6.enabled => {
            warn!(error = format!("{error:#}"), "not listening on IPv6");
            Ok(Bound6::default())
        }
        Err(error) => Err(error),
    }
}

async fn bind_all(cfg: &Config, addrs: &Addresses, http: SocketAddr, https: SocketAddr) -> anyhow::Result<Bound6> {
    let Some(ip) = addrs.server_ip6 else { return Ok(Bound6::default()) };
    let tcp = |at: SocketAddr| async move {
        if at.is_ipv6() && at.ip().is_unspecified() {
            return Ok(None);
        }
        let want = SocketAddr::from((ip, at.port()));
        TcpListener::bind(want).await.map(Some).with_context(|| format!("binding {want}"))
    };
    let bound = Bound6 {
        http: tcp(http).await?,
        https: tcp(https).await?,
        dns: match addrs.dns {
            true => Some(dns::bind(ip, cfg.dns.port, &addrs.interface)?),
            false => None,
        },
        tftp: match cfg.tftp.enabled {
            true => Some(net::bind_udp6_unicast(cfg.tftp.port, &addrs.interface)?),
            false => None,
        },
    };
    info!(%ip, "listening on IPv6 too (http, https, dns, tftp)");
    Ok(bound)
}
