use super::*;
use dhcproto::v4::{relay, Architecture};

/// A client message as a PXE ROM or iPXE would send it.
pub fn client_msg(kind: MessageType, mac: [u8; 6], arch: Option<u16>, user_class: Option<&[u8]>) -> Vec<u8> {
    let mut m = Message::default();
    m.set_chaddr(&mac).set_xid(0x1234_5678);
    m.opts_mut().insert(DhcpOption::MessageType(kind));
    if let Some(a) = arch {
        m.opts_mut().insert(DhcpOption::ClientSystemArchitecture(Architecture(a)));
        m.opts_mut().insert(DhcpOption::ClassIdentifier(format!("PXEClient:Arch:{a:05}:UNDI:002001").into_bytes()));
    }
    if let Some(u) = user_class {
        m.opts_mut().insert(DhcpOption::UserClass(u.to_vec()));
    }
    m.to_vec().unwrap()
}

const MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 1];

#[test]
fn parses_a_pxe_discover() {
    let r = parse(&client_msg(MessageType::Discover, MAC, Some(7), None)).unwrap();
    assert_eq!(r.kind, MessageType::Discover);
    assert_eq!(r.mac.to_string(), "52:54:00:00:00:01");
    assert_eq!(r.arch, Some(Arch::UefiX64));
    assert!(r.is_pxe && !r.is_ipxe);
}

#[test]
fn recognises_ipxe_by_user_class_and_option_175() {
    let r = parse(&client_msg(MessageType::Discover, MAC, Some(0), Some(b"iPXE"))).unwrap();
    assert!(r.is_ipxe);
    let mut m = Message::default();
    m.set_chaddr(&MAC);
    m.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
    m.opts_mut().insert(DhcpOption::Unknown(v4::UnknownOption::new(
        OptionCode::Unknown(175),
        vec![177, 5, 1, 0x10, 0xec, 0x81, 0x68],
    )));
    assert!(parse(&m.to_vec().unwrap()).unwrap().is_ipxe);
}

#[test]
fn reads_option_82_as_hex() {
    let mut m = Message::default();
    m.set_chaddr(&MAC).set_giaddr([198, 18, 1, 1]);
    m.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
    let mut info = relay::RelayAgentInformation::default();
    info.insert(relay::RelayInfo::AgentCircuitId(b"eth0/1".to_vec()));
    info.insert(relay::RelayInfo::AgentRemoteId(vec![0xaa, 0xbb]));
    m.opts_mut().insert(DhcpOption::RelayAgentInformation(info));
    let r = parse(&m.to_vec().unwrap()).unwrap();
    assert_eq!(r.circuit_id.as_deref(), Some("657468302f31"));
    assert_eq!(r.remote_id.as_deref(), Some("aabb"));
}

#[test]
fn malformed_packets_are_refused_with_a_reason() {
    let good = client_msg(MessageType::Discover, MAC, Some(0), None);
    assert_eq!(parse(&good[..100]).unwrap_err(), Malformed::Truncated);
    let mut bad_magic = good.clone();
    bad_magic[236] = 0;
    assert_eq!(parse(&bad_magic).unwrap_err(), Malformed::BadMagic);
    // An option claiming more bytes than the packet holds.
    let mut overlong = good[..240].to_vec();
    overlong.extend([53, 1, 1, 12, 200, b'a', b'b']);
    assert_eq!(parse(&overlong).unwrap_err(), Malformed::BadOptions);
    // Lengths dhcproto would trust: option 94 must be 3 bytes, 53 must be 1.
    for opts in [vec![53, 1, 1, 94, 2, 1, 2, 255], vec![53, 0, 255], vec![53, 1, 1, 81, 1, 0, 255]] {
        let mut p = good[..240].to_vec();
        p.extend(opts);
        assert_eq!(parse(&p).unwrap_err(), Malformed::BadOptions);
    }
    let mut reply = good.clone();
    reply[0] = 2;
    assert_eq!(parse(&reply).unwrap_err(), Malformed::NotRequest);
    let mut no_type = good[..240].to_vec();
    no_type.extend([12, 1, b'x', 255]);
    assert_eq!(parse(&no_type).unwrap_err(), Malformed::NoMessageType);
}

#[test]
fn random_and_mutated_input_never_panics() {
    // Deterministic xorshift so a failure reproduces.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let seed = client_msg(MessageType::Request, MAC, Some(7), Some(b"iPXE"));
    let mut accepted = 0;
    for i in 0..50_000 {
        let mut p = seed.clone();
        if i % 2 == 0 {
            for _ in 0..(next() % 8 + 1) {
                let at = 236 + (next() as usize % (p.len() - 236));
                p[at] = next() as u8;
            }
        } else {
            let len = next() as usize % 600;
            p = (0..len).map(|_| next() as u8).collect();
            if p.len() > 240 {
                p[236..240].copy_from_slice(&MAGIC);
            }
        }
        p.truncate(next() as usize % (p.len() + 1) + 240.min(p.len()));
        if parse(&p).is_ok() {
            accepted += 1;
        }
    }
    assert!(accepted > 0, "mutations should sometimes stay valid");
}

#[test]
fn replies_are_padded_and_echo_relay_info() {
    let mut m = Message::default();
    m.set_chaddr(&MAC).set_giaddr([198, 18, 1, 1]);
    m.opts_mut().insert(DhcpOption::MessageType(MessageType::Discover));
    let mut info = relay::RelayAgentInformation::default();
    info.insert(relay::RelayInfo::AgentCircuitId(b"c".to_vec()));
    m.opts_mut().insert(DhcpOption::RelayAgentInformation(info));
    let req = parse(&m.to_vec().unwrap()).unwrap();
    let r = reply(&req, MessageType::Offer, Ipv4Addr::new(198, 18, 0, 1));
    let bytes = encode(&r);
    assert!(bytes.len() >= 300);
    let back = Message::decode(&mut Decoder::new(&bytes)).unwrap();
    assert_eq!(back.opcode(), v4::Opcode::BootReply);
    assert_eq!(back.xid(), req.msg.xid());
    assert!(back.opts().get(OptionCode::RelayAgentInformation).is_some());
    assert_eq!(back.giaddr(), Ipv4Addr::new(198, 18, 1, 1));
}

#[test]
fn destination_follows_rfc_2131() {
    let mk = |giaddr: [u8; 4], ciaddr: [u8; 4]| {
        let mut m = Message::default();
        m.set_chaddr(&MAC).set_giaddr(giaddr).set_ciaddr(ciaddr);
        m.opts_mut().insert(DhcpOption::MessageType(MessageType::Request));
        parse(&m.to_vec().unwrap()).unwrap()
    };
    let relayed = mk([198, 18, 1, 1], [0; 4]);
    assert_eq!(destination(&relayed, MessageType::Ack, 68, 67).to_string(), "198.18.1.1:67");
    let renewing = mk([0; 4], [198, 18, 0, 10]);
    assert_eq!(destination(&renewing, MessageType::Ack, 68, 67).to_string(), "198.18.0.10:68");
    assert_eq!(destination(&renewing, MessageType::Nak, 68, 67).to_string(), "255.255.255.255:68");
    let fresh = mk([0; 4], [0; 4]);
    assert_eq!(destination(&fresh, MessageType::Offer, 68, 67).to_string(), "255.255.255.255:68");
}
