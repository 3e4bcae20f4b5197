use proptest::prelude::*;

use super::*;

const DUID_LL: [u8; 10] = [0, 3, 0, 1, 0x52, 0x54, 0, 0xab, 0xcd, 0xef];

/// A SOLICIT as dhclient sends it: client id, IA_NA asking for one address, ORO, arch, rapid
/// commit, user class "iPXE".
pub(super) fn solicit() -> Vec<u8> {
    let mut m = vec![kind::SOLICIT, 1, 2, 3];
    put(&mut m, opt::CLIENTID, &DUID_LL);
    let want = ia_addr("fd18::42".parse().unwrap(), 0, 0);
    put(&mut m, opt::IA_NA, &ia_na(7, 0, 0, &[(opt::IAADDR, want)]));
    put(&mut m, opt::ORO, &[0, 23, 0, 59]);
    put(&mut m, opt::CLIENT_ARCH_TYPE, &[0, 7]);
    put(&mut m, opt::RAPID_COMMIT, &[]);
    put(&mut m, opt::USER_CLASS, &[0, 4, b'i', b'P', b'X', b'E']);
    m
}

fn relay_forw(inner: &[u8], hop: u8, link: &str, extra: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut m = vec![kind::RELAY_FORW, hop];
    m.extend_from_slice(&link.parse::<Ipv6Addr>().unwrap().octets());
    m.extend_from_slice(&"fe80::5054:ff:feab:cdef".parse::<Ipv6Addr>().unwrap().octets());
    for (c, d) in extra {
        put(&mut m, *c, d);
    }
    put(&mut m, opt::RELAY_MSG, inner);
    m
}

#[test]
fn a_client_message_is_read_with_what_the_server_decides_on() {
    let from: Ipv6Addr = "fe80::1".parse().unwrap();
    let m = decode(&solicit(), from).unwrap();
    assert_eq!((m.kind, m.xid, m.client_id.as_slice()), (kind::SOLICIT, [1, 2, 3], &DUID_LL[..]));
    assert_eq!(m.ias, vec![Ia { iaid: 7, addrs: vec!["fd18::42".parse().unwrap()] }]);
    assert_eq!((m.oro.clone(), m.arch, m.rapid_commit, m.is_ipxe, m.peer), (vec![23, 59], Some(7), true, true, from));
    assert_eq!(m.mac().unwrap().to_string(), "52:54:00:ab:cd:ef", "from the DUID-LL");
    assert!(m.server_id.is_none() && m.relays.is_empty());
}

#[test]
fn nested_relays_are_unwrapped_and_the_reply_is_wrapped_back_the_same_way() {
    let lladdr = vec![0, 1, 2, 0, 0, 0, 0, 9];
    let inner = relay_forw(
        &solicit(),
        0,
        "fd18:0:0:7::1",
        &[
            (opt::INTERFACE_ID, b"Ethernet7".to_vec()),
            (opt::REMOTE_ID, vec![0, 0, 0, 9, b's', b'w']),
            (opt::CLIENT_LINKLAYER_ADDR, lladdr),
        ],
    );
    let outer = relay_forw(&inner, 1, "fd18:0:0:1::1", &[(opt::INTERFACE_ID, b"uplink".to_vec())]);
    let m = decode(&outer, "fd18::1:1".parse().unwrap()).unwrap();
    assert_eq!(m.relays.len(), 2);
    let first = m.first_relay().unwrap();
    assert_eq!(first.link, "fd18:0:0:7::1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(first.interface_id.as_deref(), Some(&b"Ethernet7"[..]));
    assert_eq!(first.remote_id.as_deref(), Some(&[0, 0, 0, 9, b's', b'w'][..]));
    assert_eq!(m.mac().unwrap().to_string(), "02:00:00:00:00:09", "the relay's link-layer option wins");
    assert_eq!(m.peer, "fe80::5054:ff:feab:cdef".parse::<Ipv6Addr>().unwrap());

    let mut reply = Reply::new(kind::REPLY, m.xid);
    reply.push(opt::CLIENTID, m.client_id.clone());
    let bytes = reply.encode(&m.relays);
    // Outermost: a relay-reply with the outer relay's fields and interface-id.
    assert_eq!(bytes[0], kind::RELAY_REPL);
    assert_eq!(&bytes[2..18], &"fd18:0:0:1::1".parse::<Ipv6Addr>().unwrap().octets());
    let outer_opts = options(&bytes[34..]).unwrap();
    assert_eq!(first_of(&outer_opts, opt::INTERFACE_ID), Some(&b"uplink"[..]));
    let inner = first_of(&outer_opts, opt::RELAY_MSG).unwrap();
    assert_eq!((inner[0], inner[1]), (kind::RELAY_REPL, 0));
    let inner_opts = options(&inner[34..]).unwrap();
    assert_eq!(first_of(&inner_opts, opt::INTERFACE_ID), Some(&b"Ethernet7"[..]));
    let client = first_of(&inner_opts, opt::RELAY_MSG).unwrap();
    assert_eq!(&client[..4], &[kind::REPLY, 1, 2, 3]);
}

fn first_of<'a>(opts: &[(u16, &'a [u8])], code: u16) -> Option<&'a [u8]> {
    opts.iter().find(|(c, _)| *c == code).map(|(_, d)| *d)
}

#[test]
fn what_a_server_must_not_answer_is_refused_by_name() {
    let from = Ipv6Addr::LOCALHOST;
    assert_eq!(decode(&[], from), Err(Malformed::Truncated));
    assert_eq!(decode(&[kind::SOLICIT, 1], from), Err(Malformed::Truncated));
    assert_eq!(decode(&[kind::ADVERTISE, 1, 2, 3], from), Err(Malformed::NotRequest), "a server's message");
    assert_eq!(decode(&[kind::RELAY_REPL, 0], from), Err(Malformed::NotRequest));
    assert_eq!(decode(&[kind::SOLICIT, 1, 2, 3], from), Err(Malformed::NoClientId));
    // An option whose length runs past the end.
    assert_eq!(decode(&[kind::SOLICIT, 1, 2, 3, 0, 1, 0, 20, 0, 3], from), Err(Malformed::Truncated));
    // A client id of two bytes, an IA_NA shorter than its header.
    let mut m = vec![kind::SOLICIT, 1, 2, 3];
    put(&mut m, opt::CLIENTID, &[0, 3]);
    assert_eq!(decode(&m, from), Err(Malformed::BadOption));
    let mut m = vec![kind::REQUEST, 1, 2, 3];
    put(&mut m, opt::CLIENTID, &DUID_LL);
    put(&mut m, opt::IA_NA, &[0, 0, 0, 1]);
    assert_eq!(decode(&m, from), Err(Malformed::BadOption));
    // Nine relays deep.
    let mut m = solicit();
    for hop in 0..9 {
        m = relay_forw(&m, hop, "fd18::1", &[]);
    }
    assert_eq!(decode(&m, from), Err(Malformed::TooManyRelays));
    // A relay-forward without a relay-msg.
    let mut m = vec![kind::RELAY_FORW, 0];
    m.extend_from_slice(&[0; 32]);
    assert_eq!(decode(&m, from), Err(Malformed::Truncated));
    // An information-request may carry no client id.
    assert!(decode(&[kind::INFORMATION_REQUEST, 1, 2, 3], from).is_ok());
}

#[test]
fn a_domain_list_is_in_dns_wire_form() {
    assert_eq!(domain_list("lab.example."), b"\x03lab\x07example\x00".to_vec());
    assert_eq!(domain_list(""), vec![0]);
}

proptest! {
    /// Whatever arrives, reading it never panics; a message that reads re-encodes.
    #[test]
    fn any_bytes_are_read_or_refused_never_panicking(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = decode(&bytes, Ipv6Addr::LOCALHOST);
    }

    #[test]
    fn a_real_message_with_any_tail_is_read_or_refused(tail in proptest::collection::vec(any::<u8>(), 0..80), cut in 0usize..200) {
        let mut m = solicit();
        m.extend_from_slice(&tail);
        m.truncate(cut.max(4));
        let _ = decode(&m, Ipv6Addr::LOCALHOST);
        let relayed = relay_forw(&m, 0, "fd18::1", &[(opt::CLIENT_LINKLAYER_ADDR, tail.clone())]);
        let _ = decode(&relayed, Ipv6Addr::LOCALHOST);
    }
}
