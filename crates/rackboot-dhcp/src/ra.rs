//! IPv6 router advertisements: they end iPXE's wait for one, and with `[dhcp6]` they tell hosts
//! to ask DHCPv6 for their addresses.
//!
//! iPXE configures an interface with DHCP and, at the same time, IPv6 (router solicitations).
//! On a provisioning network without an IPv6 router it fetches nothing until that IPv6 attempt
//! gives up, about 16 s later: on every PXE boot, and a provisioning run has two (BootOS, then
//! the installed disk). rackboot answers each router solicitation on the provisioning
//! interface, to the soliciting address, with an advertisement that configures nothing: router
//! lifetime 0 (not a default router), no prefixes, neither the managed nor the other-config
//! flag (RFC 4861 4.2). iPXE's IPv6 configuration then ends at once; a Linux host learns
//! nothing from it (no default route, no address).
//!
//! With the DHCPv6 server on ([`Advert::for_dhcp6`]), the advertisement carries the managed and
//! other-config flags (addresses and options from DHCPv6) and a prefix information option for
//! each `[[dhcp6.subnets]]` with `advertise` (on-link; autonomous only with `slaac`). It is still
//! not a default router: the appliance routes nothing.

use std::collections::HashMap;
use std::net::{Ipv6Addr, SocketAddrV6};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use nix::sys::socket::{recvfrom, sendto, MsgFlags, SockaddrIn6};
use socket2::{Domain, Protocol, Socket, Type};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// ICMPv6 type of a router solicitation and of an advertisement.
const SOLICITATION: u8 = 133;
const ADVERTISEMENT: u8 = 134;
/// At most one advertisement per soliciting address in this time.
const PER_SOURCE: Duration = Duration::from_secs(1);
/// Sources remembered for the rate limit before the table is cleared.
const MAX_SOURCES: usize = 4096;

/// What an advertisement says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Advert {
    /// The M flag: addresses come from DHCPv6.
    pub managed: bool,
    /// The O flag: other configuration (DNS) comes from DHCPv6.
    pub other: bool,
    /// Prefix information: (prefix, autonomous, valid and preferred lifetimes).
    pub prefixes: Vec<(ipnet::Ipv6Net, bool, u32, u32)>,
}

impl Advert {
    /// The advertisement beside the DHCPv6 server `cfg` (nothing, when it is off).
    pub fn for_dhcp6(cfg: &rackboot_config::Dhcp6Config) -> Advert {
        if !cfg.enabled {
            return Advert::default();
        }
        let prefixes = cfg
            .subnets
            .iter()
            .filter(|s| s.advertise)
            .map(|s| (s.prefix, s.slaac, s.valid_secs, s.preferred_secs))
            .collect();
        Advert { managed: true, other: true, prefixes }
    }
}

/// The advertisement: type 134, code 0, checksum (the kernel fills it in), current hop limit
/// 0 (unspecified), the M and O flags, router lifetime 0, reachable time 0, retransmit timer 0,
/// then a prefix information option (RFC 4861 4.6.2) per prefix.
pub fn advertisement(a: &Advert) -> Vec<u8> {
    let mut p = vec![0u8; 16];
    p[0] = ADVERTISEMENT;
    p[5] = if a.managed { 0x80 } else { 0 } | if a.other { 0x40 } else { 0 };
    for (net, autonomous, valid, preferred) in &a.prefixes {
        p.extend_from_slice(&[3, 4, net.prefix_len(), 0x80 | if *autonomous { 0x40 } else { 0 }]);
        p.extend_from_slice(&valid.to_be_bytes());
        p.extend_from_slice(&preferred.to_be_bytes());
        p.extend_from_slice(&[0; 4]);
        p.extend_from_slice(&net.network().octets());
    }
    p
}

/// Whether `icmp` (an ICMPv6 message) is a well-formed router solicitation (RFC 4861 6.1.1:
/// code 0, at least 8 bytes, every option with a non-zero length).
pub fn is_solicitation(icmp: &[u8]) -> bool {
    if icmp.len() < 8 || icmp[0] != SOLICITATION || icmp[1] != 0 {
        return false;
    }
    let mut opts = &icmp[8..];
    while !opts.is_empty() {
        let len = usize::from(*opts.get(1).unwrap_or(&0)) * 8;
        if len == 0 || len > opts.len() {
            return false;
        }
        opts = &opts[len..];
    }
    true
}

/// The bound ICMPv6 socket, its interface's index, and what it advertises.
pub struct Bound {
    sock: Socket,
    index: u32,
    pub advert: Advert,
}

/// An ICMPv6 socket on `interface` that hears the all-routers group, and the interface index.
pub fn bind(interface: &str) -> anyhow::Result<Bound> {
    let index = nix::net::if_::if_nametoindex(interface)?;
    let sock = Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::ICMPV6))?;
    sock.bind_device(Some(interface.as_bytes()))?;
    // Neighbor discovery messages must arrive with hop limit 255 (receivers drop others).
    sock.set_unicast_hops_v6(255)?;
    sock.set_multicast_hops_v6(255)?;
    sock.join_multicast_v6(&Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2), index)?;
    // Reads wake up now and then to see whether the appliance is stopping (a stop waits for
    // at most one such wait).
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    Ok(Bound { sock, index, advert: Advert::default() })
}

impl Bound {
    /// The same socket, advertising `advert`.
    pub fn advertising(self, advert: Advert) -> Bound {
        Bound { advert, ..self }
    }
}

/// Answers router solicitations on `bound` until `shutdown` is cancelled (on a thread of the
/// blocking pool: a raw socket has no async wrapper in tokio that needs no `unsafe`).
pub async fn serve(bound: Bound, shutdown: CancellationToken) -> anyhow::Result<()> {
    let Bound { sock, index, advert } = bound;
    tokio::task::spawn_blocking(move || answer(&sock, index, &advert, &shutdown)).await?
}

fn answer(sock: &Socket, index: u32, advert: &Advert, token: &CancellationToken) -> anyhow::Result<()> {
    let mut last: HashMap<Ipv6Addr, Instant> = HashMap::new();
    let mut buf = [0u8; 1500];
    let ra = advertisement(advert);
    while !token.is_cancelled() {
        let (n, from) = match recvfrom::<SockaddrIn6>(sock.as_raw_fd(), &mut buf) {
            Ok(v) => v,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
            Err(error) => {
                warn!(%error, "router solicitation not read");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let Some(from) = from.map(SocketAddrV6::from) else { continue };
        if !is_solicitation(&buf[..n]) {
            if buf.first() == Some(&SOLICITATION) {
                debug!(from = %from.ip(), len = n, "malformed router solicitation dropped");
            }
            continue;
        }
        // A link-local solicitor gets the answer to itself (the kernel sends it from our
        // link-local address, as RFC 4861 requires); any other (an unspecified source, a host
        // asking from a global address) gets it through the all-nodes group.
        let to =
            if from.ip().is_unicast_link_local() { *from.ip() } else { Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1) };
        let now = Instant::now();
        if last.get(&to).is_some_and(|t| now.duration_since(*t) < PER_SOURCE) {
            continue;
        }
        if last.len() >= MAX_SOURCES {
            last.clear();
        }
        last.insert(to, now);
        let dest = SockaddrIn6::from(SocketAddrV6::new(to, 0, 0, index));
        if let Err(error) = sendto(sock.as_raw_fd(), &ra, &dest, MsgFlags::MSG_DONTWAIT) {
            warn!(%error, to = %to, "router advertisement not sent");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solicitations_are_checked_and_the_advertisement_configures_nothing() {
        let rs = [133, 0, 0, 0, 0, 0, 0, 0];
        assert!(is_solicitation(&rs));
        // With a source link-layer address option (type 1, 8 bytes).
        let with_opt = [133, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0x52, 0x54, 0, 0, 0, 1];
        assert!(is_solicitation(&with_opt));
        assert!(!is_solicitation(&rs[..7]), "too short");
        assert!(!is_solicitation(&[133, 1, 0, 0, 0, 0, 0, 0]), "code must be 0");
        assert!(!is_solicitation(&[134, 0, 0, 0, 0, 0, 0, 0]), "an advertisement");
        assert!(!is_solicitation(&[133, 0, 0, 0, 0, 0, 0, 0, 1, 0]), "zero-length option");
        assert!(!is_solicitation(&[133, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0]), "option past the end");
        let ra = advertisement(&Advert::default());
        assert_eq!(ra.len(), 16);
        assert_eq!(ra[0], 134);
        assert_eq!(&ra[4..8], &[0, 0, 0, 0], "no flags, router lifetime 0: not a router");
    }

    #[test]
    fn beside_dhcp6_the_advertisement_asks_for_it_and_carries_the_prefixes() {
        let w: rackboot_config::WireDhcp6 = toml::from_str(
            "enabled = true\n[[subnets]]\nprefix = \"fd18::/64\"\npools = [\"fd18::100-fd18::1ff\"]\nslaac = true\n[[subnets]]\nprefix = \"fd19::/64\"\npools = [\"fd19::100-fd19::1ff\"]\nadvertise = false",
        )
        .unwrap();
        let ra = advertisement(&Advert::for_dhcp6(&rackboot_config::Dhcp6Config::try_from(w).unwrap()));
        assert_eq!(ra[5], 0xc0, "managed and other-config");
        assert_eq!(&ra[6..8], &[0, 0], "still not a default router");
        assert_eq!(ra.len(), 16 + 32, "one prefix: the second is not advertised");
        assert_eq!(&ra[16..20], &[3, 4, 64, 0xc0], "on-link and autonomous");
        assert_eq!(&ra[20..24], &7200u32.to_be_bytes());
        assert_eq!(&ra[32..48], &"fd18::".parse::<Ipv6Addr>().unwrap().octets());
    }
}
