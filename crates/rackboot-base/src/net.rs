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

/// The IPv6 addresses of `interface` other than link-local ones, in the order the kernel lists
/// them (empty when it has none or does not exist).
pub fn interface_ipv6(interface: &str) -> Vec<std::net::Ipv6Addr> {
    let Ok(addrs) = getifaddrs() else { return Vec::new() };
    addrs
        .filter(|ifa| ifa.interface_name == interface)
        .filter_map(|ifa| ifa.address.as_ref().and_then(|a| a.as_sockaddr_in6()).map(|a| a.ip()))
        .filter(|ip| !ip.is_unicast_link_local() && !ip.is_loopback())
        .collect()
}

/// A UDP socket on `[::]:port` restricted to `interface`, IPv6 only, that hears the
/// link-scoped multicast `group` there (DHCPv6: ff02::1:2, All_DHCP_Relay_Agents_and_Servers).
pub fn bind_udp6(port: u16, interface: &str, group: std::net::Ipv6Addr) -> anyhow::Result<tokio::net::UdpSocket> {
    let index = nix::net::if_::if_nametoindex(interface).with_context(|| format!("no interface {interface:?}"))?;
    let sock = udp6(interface)?;
    sock.join_multicast_v6(&group, index).with_context(|| format!("joining {group} on {interface}"))?;
    sock.set_multicast_if_v6(index)?;
    bound6(sock, std::net::Ipv6Addr::UNSPECIFIED, port)
}

/// A UDP socket on `[::]:port` (0: any), IPv6 only, restricted to `interface` when it is not
/// empty: TFTP's on IPv6.
pub fn bind_udp6_unicast(port: u16, interface: &str) -> anyhow::Result<tokio::net::UdpSocket> {
    bound6(udp6(interface)?, std::net::Ipv6Addr::UNSPECIFIED, port)
}

/// The UDP socket for talking to `peer` from any port: [`bind_udp`], or on IPv6 one bound to
/// `local6` when given. A client that checks where answers come from (a UEFI PXE TFTP client
/// does) then hears them from the address it asked (the one its boot URL names), not from
/// whichever of the interface's addresses the kernel would pick.
pub fn bind_udp_for(
    peer: SocketAddr,
    interface: &str,
    local6: Option<std::net::Ipv6Addr>,
) -> anyhow::Result<tokio::net::UdpSocket> {
    match peer {
        SocketAddr::V4(_) => bind_udp(0, interface, false),
        // A link-local client asked the appliance's link-local address: the kernel picks that.
        SocketAddr::V6(p) => {
            let local = local6.filter(|_| !p.ip().is_unicast_link_local());
            bound6(udp6(interface)?, local.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED), 0)
        }
    }
}

fn udp6(interface: &str) -> anyhow::Result<Socket> {
    let sock = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
    sock.set_only_v6(true)?;
    if !interface.is_empty() {
        sock.bind_device(Some(interface.as_bytes()))
            .with_context(|| format!("SO_BINDTODEVICE {interface} (needs root or CAP_NET_RAW)"))?;
    }
    use nix::sys::socket::{setsockopt, sockopt};
    if setsockopt(&sock, sockopt::RcvBufForce, &(8 << 20)).is_err() {
        let _ = sock.set_recv_buffer_size(8 << 20);
    }
    Ok(sock)
}

fn bound6(sock: Socket, ip: std::net::Ipv6Addr, port: u16) -> anyhow::Result<tokio::net::UdpSocket> {
    let addr = SocketAddr::V6(std::net::SocketAddrV6::new(ip, port, 0, 0));
    sock.bind(&addr.into()).with_context(|| format!("binding udp {addr}"))?;
    sock.set_nonblocking(true)?;
    Ok(tokio::net::UdpSocket::from_std(sock.into())?)
}

/// The interface's hardware address (for a DUID), from sysfs.
pub fn interface_mac(interface: &str) -> Option<[u8; 6]> {
    let text = std::fs::read_to_string(format!("/sys/class/net/{interface}/address")).ok()?;
    let bytes: Vec<u8> = text.trim().split(':').map(|h| u8::from_str_radix(h, 16)).collect::<Result<_, _>>().ok()?;
    bytes.try_into().ok()
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
