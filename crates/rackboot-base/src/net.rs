//! Socket binding (SO_BINDTODEVICE, broadcast) and interface address discovery.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use anyhow::Context;
use nix::ifaddrs::getifaddrs;
use nix::net::if_::InterfaceFlags;
use socket2::{Domain, Protocol, Socket, Type};

/// Binds a UDP socket on `0.0.0.0:port`, restricted to `interface` when it is not empty, with
/// broadcast enabled (DHCP replies to clients without an address are broadcast).
///
/// `share` sets SO_REUSEPORT too, so proxy DHCP can share port 67 with a DHCP server on the same
/// host that does the same (dnsmasq with bind-interfaces); broadcasts reach both sockets.
pub fn bind_udp(port: u16, interface: &str, share: bool) -> anyhow::Result<tokio::net::UdpSocket> {
    let sock = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    // Only a shared port may be bound twice; anywhere else a second rackboot must fail to start
    // rather than silently split the traffic with the first.
    if share {
        sock.set_reuse_address(true)?;
        sock.set_reuse_port(true)?;
    }
    sock.set_broadcast(true)?;
    if !interface.is_empty() {
        sock.bind_device(Some(interface.as_bytes()))
            .with_context(|| format!("SO_BINDTODEVICE {interface} (needs root or CAP_NET_RAW)"))?;
    }
    // A large receive buffer absorbs bursts (a rack powering on at once) without drops. The
    // FORCE variants (root) go past net.core.rmem_max, whose default (208 KiB) holds only a few
    // hundred datagrams.
    use nix::sys::socket::{setsockopt, sockopt};
    if setsockopt(&sock, sockopt::RcvBufForce, &(8 << 20)).is_err() {
        let _ = sock.set_recv_buffer_size(8 << 20);
    }
    if setsockopt(&sock, sockopt::SndBufForce, &(4 << 20)).is_err() {
        let _ = sock.set_send_buffer_size(4 << 20);
    }
    let addr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
    sock.bind(&addr.into()).with_context(|| format!("binding udp {addr}"))?;
    sock.set_nonblocking(true)?;
    Ok(tokio::net::UdpSocket::from_std(sock.into())?)
}

/// The first IPv4 address of `interface`.
pub fn interface_ipv4(interface: &str) -> anyhow::Result<Ipv4Addr> {
    for ifa in getifaddrs()? {
        if ifa.interface_name != interface {
            continue;
        }
        if let Some(a) = ifa.address.as_ref().and_then(|a| a.as_sockaddr_in()) {
            return Ok(a.ip());
        }
    }
    anyhow::bail!("interface {interface:?} does not exist or has no IPv4 address")
}

/// The first interface that is up, not loopback, and has an IPv4 address.
pub fn first_usable_interface() -> Option<(String, Ipv4Addr)> {
    let addrs = getifaddrs().ok()?;
    for ifa in addrs {
        let up = ifa.flags.contains(InterfaceFlags::IFF_UP) && !ifa.flags.contains(InterfaceFlags::IFF_LOOPBACK);
        if let (true, Some(a)) = (up, ifa.address.as_ref().and_then(|a| a.as_sockaddr_in())) {
            return Some((ifa.interface_name, a.ip()));
        }
    }
    None
}

/// The host of an `http(s)://host[:port]/...` URL (brackets stripped from IPv6).
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    (!host.is_empty()).then(|| host.to_string())
}
