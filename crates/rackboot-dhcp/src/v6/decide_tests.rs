use super::*;
use crate::v6::wire::{decode, ia_addr, ia_na, options, put};

const SERVER: &[u8] = &[0, 3, 0, 1, 2, 0, 0, 0, 0, 1];
const CLIENT: &[u8] = &[0, 3, 0, 1, 0x52, 0x54, 0, 0, 0, 7];

fn cfg() -> Dhcp6Config {
    Dhcp6Config {
        enabled: true,
        port: 547,
        rapid_commit: true,
        preference: 255,
        subnets: vec![Subnet6 {
            prefix: "fd18::/64".parse().unwrap(),
            pools: vec![rackboot_config::Pool6 {
                first: "fd18::100".parse().unwrap(),
                last: "fd18::101".parse().unwrap(),
            }],
            dns_servers: vec!["fd18::1".parse().unwrap()],
            domain: "lab.example".into(),
            preferred_secs: 3000,
            valid_secs: 6000,
            advertise: true,
            slaac: false,
        }],
    }
}

/// A client message of `kind` with `server`'s id (if any), an IA_NA `iaid` asking for `addrs`.
fn msg(kind: u8, client: &[u8], server: Option<&[u8]>, ias: &[(u32, &[&str])], rapid: bool) -> Inbound {
    let mut m = vec![kind, 9, 9, 9];
    put(&mut m, opt::CLIENTID, client);
    if let Some(s) = server {
        put(&mut m, opt::SERVERID, s);
    }
    for (iaid, addrs) in ias {
        let inner: Vec<_> = addrs.iter().map(|a| (opt::IAADDR, ia_addr(a.parse().unwrap(), 0, 0))).collect();
        put(&mut m, opt::IA_NA, &ia_na(*iaid, 0, 0, &inner));
    }
    if rapid {
        put(&mut m, opt::RAPID_COMMIT, &[]);
    }
    decode(&m, "fe80::1".parse().unwrap()).unwrap()
}

fn run(m: &Inbound, leases: &mut Leases6, now: u64, boot_url: Option<&str>) -> Decision {
    let cfg = cfg();
    let ctx = Ctx {
        cfg: &cfg,
        subnet: cfg.subnets.first(),
        server_id: SERVER,
        now,
        boot_url,
        http_boot: false,
        mac: m.mac(),
    };
    decide(m, leases, &ctx)
}

/// The addresses (with valid lifetime) and status of IA `iaid` in `r`.
fn ia_of(r: &Reply, iaid: u32) -> (Vec<(Ipv6Addr, u32)>, Option<u16>) {
    for (code, d) in &r.opts {
        if *code != opt::IA_NA || u32::from_be_bytes([d[0], d[1], d[2], d[3]]) != iaid {
            continue;
        }
        let inner = options(&d[12..]).unwrap();
        let addrs = inner
            .iter()
            .filter(|(c, _)| *c == opt::IAADDR)
            .map(|(_, a)| {
                let ip: [u8; 16] = a[..16].try_into().unwrap();
                (Ipv6Addr::from(ip), u32::from_be_bytes([a[20], a[21], a[22], a[23]]))
            })
            .collect();
        let status = inner.iter().find(|(c, _)| *c == opt::STATUS_CODE).map(|(_, s)| u16::from_be_bytes([s[0], s[1]]));
        return (addrs, status);
    }
    panic!("no IA {iaid} in {r:?}")
}

fn top_status(r: &Reply) -> Option<u16> {
    r.get(opt::STATUS_CODE).map(|s| u16::from_be_bytes([s[0], s[1]]))
}

#[test]
fn solicit_advertises_without_committing_and_request_commits_the_same_address() {
    let mut leases = Leases6::default();
    let d =
        run(&msg(kind::SOLICIT, CLIENT, None, &[(1, &[])], false), &mut leases, 100, Some("tftp://[fd18::1]/ipxe.efi"));
    let adv = d.reply.unwrap();
    assert_eq!((adv.kind, d.changes.len()), (kind::ADVERTISE, 0), "nothing durable for an advertisement");
    assert_eq!(adv.get(opt::PREFERENCE), Some(&[255][..]));
    assert_eq!(adv.get(opt::SERVERID), Some(SERVER));
    assert_eq!(adv.get(opt::CLIENTID), Some(CLIENT));
    assert_eq!(adv.get(opt::BOOTFILE_URL), Some(&b"tftp://[fd18::1]/ipxe.efi"[..]));
    assert_eq!(adv.get(opt::DOMAIN_LIST), Some(&b"\x03lab\x07example\x00"[..]));
    let (addrs, status) = ia_of(&adv, 1);
    assert_eq!((addrs.clone(), status), (vec![("fd18::100".parse().unwrap(), 6000)], None));
    // Another client meanwhile gets the other address, not the advertised one.
    let other =
        run(&msg(kind::SOLICIT, &[0, 3, 0, 1, 1, 1, 1, 1, 1, 1], None, &[(1, &[])], false), &mut leases, 101, None);
    assert_eq!(ia_of(&other.reply.unwrap(), 1).0[0].0, "fd18::101".parse::<Ipv6Addr>().unwrap());

    let d = run(&msg(kind::REQUEST, CLIENT, Some(SERVER), &[(1, &["fd18::100"])], false), &mut leases, 102, None);
    let reply = d.reply.unwrap();
    assert_eq!(reply.kind, kind::REPLY);
    assert_eq!(ia_of(&reply, 1).0, addrs);
    assert_eq!(d.changes.len(), 1);
    let l = &d.changes[0];
    assert_eq!((l.ip, l.iaid, l.expires_at, l.state), (addrs[0].0, 1, 6102, LeaseState::Active));
    assert_eq!(l.mac.unwrap().to_string(), "52:54:00:00:00:07");
    assert_eq!(d.events[0].0, EventKind::Dhcp6Reply);
    // T1 and T2 from the preferred lifetime.
    let ia = reply.opts.iter().find(|(c, _)| *c == opt::IA_NA).unwrap().1.clone();
    assert_eq!(
        (u32::from_be_bytes(ia[4..8].try_into().unwrap()), u32::from_be_bytes(ia[8..12].try_into().unwrap())),
        (1500, 2400)
    );
}

#[test]
fn rapid_commit_binds_at_once_and_a_full_pool_says_so() {
    let mut leases = Leases6::default();
    let d = run(&msg(kind::SOLICIT, CLIENT, None, &[(1, &[]), (2, &[])], true), &mut leases, 100, None);
    let r = d.reply.unwrap();
    assert_eq!((r.kind, d.changes.len()), (kind::REPLY, 2));
    assert!(r.get(opt::RAPID_COMMIT).is_some());
    let third =
        run(&msg(kind::SOLICIT, &[0, 3, 0, 1, 9, 9, 9, 9, 9, 9], None, &[(1, &[])], true), &mut leases, 100, None);
    let r = third.reply.unwrap();
    assert_eq!(ia_of(&r, 1), (vec![], Some(Status::NoAddrsAvail as u16)));
    assert!(third.changes.is_empty());
    // The same SOLICIT again (a retransmission) gets the same two addresses.
    let again = run(&msg(kind::SOLICIT, CLIENT, None, &[(1, &[]), (2, &[])], true), &mut leases, 101, None);
    let ips: Vec<_> = again.changes.iter().map(|l| l.ip.to_string()).collect();
    assert_eq!(ips, ["fd18::100", "fd18::101"]);
}

#[test]
fn renew_extends_rebind_of_a_foreign_address_zeroes_it_and_other_servers_messages_are_ignored() {
    let mut leases = Leases6::default();
    run(&msg(kind::SOLICIT, CLIENT, None, &[(1, &[])], true), &mut leases, 100, None);
    let d = run(&msg(kind::RENEW, CLIENT, Some(SERVER), &[(1, &["fd18::100"])], false), &mut leases, 200, None);
    assert_eq!(d.changes[0].expires_at, 6200);
    assert_eq!(ia_of(&d.reply.unwrap(), 1).0, vec![("fd18::100".parse().unwrap(), 6000)]);
    // REBIND of an address from another network: NoBinding, and that address with lifetime 0.
    let d = run(
        &msg(kind::REBIND, &[0, 3, 0, 1, 3, 3, 3, 3, 3, 3], None, &[(1, &["2001:db8::5"])], false),
        &mut leases,
        200,
        None,
    );
    let (addrs, status) = ia_of(&d.reply.unwrap(), 1);
    assert_eq!((addrs, status), (vec![("2001:db8::5".parse().unwrap(), 0)], Some(Status::NoBinding as u16)));
    // Messages naming another server, or a SOLICIT naming any, are not answered.
    let d = run(
        &msg(kind::REQUEST, CLIENT, Some(&[0, 3, 0, 1, 7, 7, 7, 7, 7, 7]), &[(1, &[])], false),
        &mut leases,
        200,
        None,
    );
    assert_eq!((d.reply.is_none(), d.dropped), (true, Some("v6_not_for_us")));
    let d = run(&msg(kind::SOLICIT, CLIENT, Some(SERVER), &[(1, &[])], false), &mut leases, 200, None);
    assert!(d.reply.is_none());
}

#[test]
fn release_frees_decline_holds_and_only_the_holder_can_do_either() {
    let mut leases = Leases6::default();
    run(&msg(kind::SOLICIT, CLIENT, None, &[(1, &[])], true), &mut leases, 100, None);
    // Someone else releasing the address changes nothing.
    let d = run(
        &msg(kind::RELEASE, &[0, 3, 0, 1, 6, 6, 6, 6, 6, 6], Some(SERVER), &[(1, &["fd18::100"])], false),
        &mut leases,
        150,
        None,
    );
    assert!(d.changes.is_empty());
    assert_eq!(ia_of(d.reply.as_ref().unwrap(), 1).1, Some(Status::NoBinding as u16));
    let d = run(&msg(kind::RELEASE, CLIENT, Some(SERVER), &[(1, &["fd18::100"])], false), &mut leases, 150, None);
    assert_eq!((d.changes[0].state, top_status(d.reply.as_ref().unwrap())), (LeaseState::Released, Some(0)));
    assert_eq!(d.events[0].0, EventKind::Dhcp6Release);
    // Bound again, then declined: nobody gets it until it would have expired.
    run(&msg(kind::SOLICIT, CLIENT, None, &[(1, &[])], true), &mut leases, 160, None);
    let d = run(&msg(kind::DECLINE, CLIENT, Some(SERVER), &[(1, &["fd18::100"])], false), &mut leases, 170, None);
    assert_eq!(d.changes[0].state, LeaseState::Declined);
    let other =
        run(&msg(kind::SOLICIT, &[0, 3, 0, 1, 5, 5, 5, 5, 5, 5], None, &[(1, &[])], true), &mut leases, 171, None);
    assert_eq!(other.changes[0].ip, "fd18::101".parse::<Ipv6Addr>().unwrap());
}

#[test]
fn confirm_says_whether_the_addresses_are_on_link_and_information_request_gets_no_address() {
    let mut leases = Leases6::default();
    let d = run(&msg(kind::CONFIRM, CLIENT, None, &[(1, &["fd18::100"])], false), &mut leases, 1, None);
    assert_eq!(top_status(&d.reply.unwrap()), Some(Status::Success as u16));
    let d = run(&msg(kind::CONFIRM, CLIENT, None, &[(1, &["fd19::100"])], false), &mut leases, 1, None);
    assert_eq!(top_status(&d.reply.unwrap()), Some(Status::NotOnLink as u16));
    let d = run(&msg(kind::CONFIRM, CLIENT, None, &[(1, &[])], false), &mut leases, 1, None);
    assert!(d.reply.is_none(), "nothing to confirm");
    let d = run(
        &msg(kind::INFORMATION_REQUEST, CLIENT, None, &[], false),
        &mut leases,
        1,
        Some("http://[fd18::1]/boot/ipxe"),
    );
    let r = d.reply.unwrap();
    assert_eq!((r.kind, d.changes.len()), (kind::REPLY, 0));
    assert_eq!(r.get(opt::DNS_SERVERS).map(<[u8]>::len), Some(16));
    assert!(r.get(opt::BOOTFILE_URL).is_some() && r.get(opt::IA_NA).is_none());
}
