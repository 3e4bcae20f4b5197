//! LLDP (IEEE 802.1AB) neighbour discovery: a listener on a raw packet socket for EtherType
//! 0x88cc, and the TLV parser. Switches send a frame every 30 s or so; the agent listens for its
//! whole life and re-sends the inventory when it hears a new neighbour.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::wire::LldpNeighbor;

const ETH_P_LLDP: u16 = 0x88cc;

/// Parses an Ethernet frame carrying LLDP (optionally 802.1Q-tagged). `None` when it is not LLDP
/// or lacks the mandatory chassis and port ids.
pub fn parse(frame: &[u8], interface: &str) -> Option<LldpNeighbor> {
    let mut ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    let mut at = 14;
    if ethertype == 0x8100 {
        ethertype = u16::from_be_bytes([*frame.get(16)?, *frame.get(17)?]);
        at = 18;
    }
    if ethertype != ETH_P_LLDP {
        return None;
    }
    let mut n = LldpNeighbor { interface: interface.to_string(), ..Default::default() };
    while at + 2 <= frame.len() {
        let head = u16::from_be_bytes([frame[at], frame[at + 1]]);
        let (kind, len) = (head >> 9, usize::from(head & 0x1ff));
        let value = frame.get(at + 2..at + 2 + len)?;
        at += 2 + len;
        match kind {
            0 => break,
            1 | 2 if !value.is_empty() => {
                let id = id_value(kind, value[0], &value[1..]);
                if kind == 1 {
                    n.chassis_id = id;
                } else {
                    n.port_id = id;
                }
            }
            4 => n.port_description = Some(text(value)),
            5 => n.system_name = Some(text(value)),
            _ => {}
        }
    }
    (!n.chassis_id.is_empty() && !n.port_id.is_empty()).then_some(n)
}

/// Chassis subtype 4 and port subtype 3 are MAC addresses; chassis subtype 5 and port subtype 4
/// are network addresses (an IANA family, 1 IPv4 or 2 IPv6, then the address); the rest
/// (interface name, interface alias, local, components) are text.
fn id_value(kind: u16, subtype: u8, v: &[u8]) -> String {
    let is_mac = (kind == 1 && subtype == 4) || (kind == 2 && subtype == 3);
    if is_mac && v.len() == 6 {
        return v.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
    }
    let is_address = (kind == 1 && subtype == 5) || (kind == 2 && subtype == 4);
    if is_address {
        if let Ok(a) = <[u8; 4]>::try_from(v.get(1..).unwrap_or_default()).map(std::net::Ipv4Addr::from) {
            if v[0] == 1 {
                return a.to_string();
            }
        }
        if let Ok(a) = <[u8; 16]>::try_from(v.get(1..).unwrap_or_default()).map(std::net::Ipv6Addr::from) {
            if v[0] == 2 {
                return a.to_string();
            }
        }
    }
    text(v)
}

fn text(v: &[u8]) -> String {
    String::from_utf8_lossy(v).trim_end_matches('\0').trim().to_string()
}

/// Neighbours heard so far, one per interface (the latest frame wins).
pub type Neighbours = Arc<Mutex<Vec<LldpNeighbor>>>;

/// Listens on every interface in a thread of its own and hands each neighbour heard to `heard`.
/// Needs root (CAP_NET_RAW); without it, logs once and returns.
pub fn spawn_listener(heard: impl Fn(LldpNeighbor) + Send + 'static) {
    std::thread::Builder::new()
        .name("lldp".into())
        .spawn(move || {
            if let Err(error) = listen(&heard) {
                tracing::info!(%error, "lldp listener off");
            }
        })
        .ok();
}

/// Records a neighbour heard on its interface; whether that changed the set.
pub fn record(found: &Neighbours, neighbour: LldpNeighbor) -> bool {
    let mut list = found.lock().expect("lldp lock");
    match list.iter_mut().find(|x| x.interface == neighbour.interface) {
        Some(old) if *old == neighbour => false,
        Some(old) => {
            *old = neighbour;
            true
        }
        None => {
            list.push(neighbour);
            true
        }
    }
}

fn listen(heard: &dyn Fn(LldpNeighbor)) -> anyhow::Result<()> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::PACKET, Type::RAW, Some(Protocol::from(i32::from(ETH_P_LLDP.to_be()))))?;
    sock.set_read_timeout(Some(Duration::from_secs(60)))?;
    // Most NICs drop multicast they were not asked for; LLDP goes to the nearest-bridge group.
    for (_, ifindex) in nix::net::if_::if_nameindex()?.iter().map(|i| (i.name().to_owned(), i.index())) {
        join_lldp_group(&sock, ifindex);
    }
    let mut buf = [0u8; 2048];
    loop {
        use std::os::fd::AsRawFd;
        let (n, from) = match nix::sys::socket::recvfrom::<nix::sys::socket::LinkAddr>(sock.as_raw_fd(), &mut buf) {
            Ok(v) => v,
            Err(nix::errno::Errno::EAGAIN | nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        let frame = &buf[..n];
        let ifindex = from.map_or(0, |a| a.ifindex() as u32);
        let name = nix::net::if_::if_indextoname(ifindex).map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        if let Some(neighbour) = parse(frame, &name) {
            heard(neighbour);
        }
    }
}

/// Joins 01:80:c2:00:00:0e on one interface (PACKET_ADD_MEMBERSHIP); failures are ignored
/// (the interface may not do multicast, or may not be up yet).
fn join_lldp_group(sock: &socket2::Socket, ifindex: u32) {
    use std::os::fd::AsRawFd;
    let mut mreq: nix::libc::packet_mreq = unsafe { std::mem::zeroed() };
    mreq.mr_ifindex = ifindex as i32;
    mreq.mr_type = nix::libc::PACKET_MR_MULTICAST as u16;
    mreq.mr_alen = 6;
    mreq.mr_address[..6].copy_from_slice(&[0x01, 0x80, 0xc2, 0, 0, 0x0e]);
    // SAFETY: a valid socket, and a fully initialised packet_mreq of the size passed.
    unsafe {
        nix::libc::setsockopt(
            sock.as_raw_fd(),
            nix::libc::SOL_PACKET,
            nix::libc::PACKET_ADD_MEMBERSHIP,
            (&mreq as *const nix::libc::packet_mreq).cast(),
            std::mem::size_of::<nix::libc::packet_mreq>() as nix::libc::socklen_t,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tlv(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut v = ((kind << 9) | value.len() as u16).to_be_bytes().to_vec();
        v.extend_from_slice(value);
        v
    }

    fn frame(tagged: bool) -> Vec<u8> {
        let mut f = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 0x0c, 0xc4, 0x7a, 1, 2, 3];
        if tagged {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
        }
        f.extend_from_slice(&[0x88, 0xcc]);
        f.extend(tlv(1, &[4, 0x0c, 0xc4, 0x7a, 1, 2, 3]));
        f.extend(tlv(2, b"\x05Ethernet12"));
        f.extend(tlv(3, &[0, 120]));
        f.extend(tlv(4, b"to node7 eth0"));
        f.extend(tlv(5, b"tor-r12.dc1"));
        f.extend(tlv(0, &[]));
        f
    }

    #[test]
    fn parses_chassis_port_and_names() {
        for tagged in [false, true] {
            let n = parse(&frame(tagged), "eth0").unwrap();
            assert_eq!(n.chassis_id, "0c:c4:7a:01:02:03");
            assert_eq!(n.port_id, "Ethernet12");
            assert_eq!(n.system_name.as_deref(), Some("tor-r12.dc1"));
            assert_eq!(n.port_description.as_deref(), Some("to node7 eth0"));
            assert_eq!(n.interface, "eth0");
        }
    }

    #[test]
    fn each_id_subtype_reads_as_the_switch_means_it() {
        let ids = |chassis: &[u8], port: &[u8]| {
            let mut f = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 0x0c, 0xc4, 0x7a, 1, 2, 3, 0x88, 0xcc];
            f.extend(tlv(1, chassis));
            f.extend(tlv(2, port));
            let n = parse(&f, "eth0").unwrap();
            (n.chassis_id, n.port_id)
        };
        let mut v6 = vec![5, 2];
        v6.extend("2001:db8::7".parse::<std::net::Ipv6Addr>().unwrap().octets());
        for (chassis, port, want) in [
            (&[4, 0, 0x1b, 0x54, 0xaa, 0xbb, 0xcc][..], &b"\x05Ethernet5"[..], ("00:1b:54:aa:bb:cc", "Ethernet5")),
            (&[5, 1, 198, 18, 0, 2][..], &[3, 0, 0x1b, 0x54, 0, 0, 5][..], ("198.18.0.2", "00:1b:54:00:00:05")),
            (&v6[..], &b"\x01uplink-node5"[..], ("2001:db8::7", "uplink-node5")),
            (&b"\x06eth0"[..], &[4, 1, 10, 0, 0, 5][..], ("eth0", "10.0.0.5")),
            (&b"\x07leaf-r1"[..], &b"\x075"[..], ("leaf-r1", "5")),
            (&b"\x01chassis-1"[..], &b"\x02port-component"[..], ("chassis-1", "port-component")),
        ] {
            assert_eq!(ids(chassis, port), (want.0.to_string(), want.1.to_string()));
        }
        assert_eq!(ids(&[5, 1, 198, 18], b"\x05x").0, text(&[1, 198, 18]), "a short address is read as text");
    }

    #[test]
    fn truncated_or_foreign_frames_are_ignored() {
        let f = frame(false);
        for cut in 0..f.len() - 2 {
            let _ = parse(&f[..cut], "eth0"); // never panics
        }
        assert!(parse(&f[..30], "eth0").is_none(), "a TLV running past the end");
        let mut ip = f.clone();
        ip[12..14].copy_from_slice(&[0x08, 0x00]);
        assert!(parse(&ip, "eth0").is_none());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// A frame as a switch sends it: chassis MAC, port name, system name.
        fn sent(mac: [u8; 6], port: &str, system: &str, tagged: bool) -> Vec<u8> {
            let mut f = vec![0x01, 0x80, 0xc2, 0, 0, 0x0e, 0x0c, 0xc4, 0x7a, 1, 2, 3];
            if tagged {
                f.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
            }
            f.extend_from_slice(&[0x88, 0xcc]);
            f.extend(tlv(1, &[[4].as_slice(), &mac].concat()));
            f.extend(tlv(2, &[b"\x05".as_slice(), port.as_bytes()].concat()));
            f.extend(tlv(5, system.as_bytes()));
            f.extend(tlv(0, &[]));
            f
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

            #[test]
            fn random_frames_are_parsed_or_ignored(f in proptest::collection::vec(any::<u8>(), 0..600)) {
                let _ = parse(&f, "eth0");
            }

            #[test]
            fn damaged_frames_are_parsed_or_ignored(
                base in any::<bool>().prop_map(frame),
                flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
                cut in proptest::option::of(any::<prop::sample::Index>()),
            ) {
                let mut f = base;
                for (at, byte) in flips {
                    let i = at.index(f.len());
                    f[i] = byte;
                }
                if let Some(c) = cut {
                    f.truncate(c.index(f.len() + 1));
                }
                let _ = parse(&f, "eth0");
            }

            #[test]
            fn what_the_switch_sends_is_what_is_read(
                mac in any::<[u8; 6]>(),
                port in "[!-~]{1,60}",
                system in "[!-~]{0,60}",
                tagged in any::<bool>(),
            ) {
                let n = parse(&sent(mac, &port, &system, tagged), "eth1").unwrap();
                let hex: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
                prop_assert_eq!(n.chassis_id, hex.join(":"));
                prop_assert_eq!(n.port_id, port);
                prop_assert_eq!(n.system_name.as_deref(), Some(system.as_str()));
                prop_assert_eq!(n.interface, "eth1");
            }
        }
    }
}
