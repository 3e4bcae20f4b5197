//! One test per row of the decision table, and subnet selection.

use dhcproto::v4::{DhcpOption, MessageType, OptionCode};

use super::*;
use crate::limits::Limits;
use crate::packet::{parse, tests::client_msg};
use rackboot_model::mac::Mac;

const SERVER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const OTHER_SERVER: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
const NOW: u64 = 1_000_000;

fn config(extra: &str) -> DhcpConfig {
    let wire = format!(
        "mode = \"full\"\n{extra}\n[[subnets]]\ncidr = \"198.18.0.0/24\"\npools = [\"198.18.0.10-198.18.0.11\"]\nrouters = [\"198.18.0.1\"]\nlease_secs = 600\n\
         [[subnets]]\ncidr = \"198.18.5.0/24\"\npools = [\"198.18.5.10-198.18.5.20\"]\n"
    );
    DhcpConfig::from_wire(toml::from_str(&wire).unwrap(), None).unwrap()
}

fn mac(n: u8) -> [u8; 6] {
    [0x52, 0x54, 0, 0, 0, n]
}

fn msg(kind: MessageType, n: u8) -> Request {
    parse(&client_msg(kind, mac(n), None, None)).unwrap()
}

fn pxe(kind: MessageType, n: u8) -> Request {
    parse(&client_msg(kind, mac(n), Some(0), None)).unwrap()
}

fn leases(cfg: &DhcpConfig) -> Leases {
    let mut l = Leases::new(cfg.offer_hold.as_secs());
    l.limits = Limits::new(cfg.max_clients_per_port, cfg.max_clients_per_relay);
    l
}

const NOBODY: &dyn Fn(Ipv4Addr) -> bool = &|_| false;

fn plan(cfg: &DhcpConfig) -> Plan<'_> {
    Plan {
        subnet: &cfg.subnets[0],
        subnet_idx: 0,
        hostname: None,
        reserved: None,
        reserved_for_other: NOBODY,
        boot: None,
        store_behind: false,
        may_place: false,
    }
}

fn server(cfg: &DhcpConfig) -> Server<'_> {
    Server { cfg, ip: SERVER }
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

/// A REQUEST in the SELECTING state for `addr`, naming `sid`.
fn selecting(n: u8, addr: Ipv4Addr, sid: Ipv4Addr) -> Request {
    let mut r = msg(MessageType::Request, n);
    (r.requested_ip, r.server_id) = (Some(addr), Some(sid));
    r
}

fn offered(d: &Decision) -> Ipv4Addr {
    let reply = d.reply.as_ref().expect("a reply");
    assert_eq!(reply.kind, MessageType::Offer);
    reply.msg.yiaddr()
}

/// The address offered to client `n` (a DISCOVER with the first subnet's plan).
fn offer(cfg: &DhcpConfig, l: &mut Leases, n: u8) -> Ipv4Addr {
    offered(&decide(&msg(MessageType::Discover, n), &plan(cfg), server(cfg), l, NOW))
}

/// The address client `n` holds after a DISCOVER and its REQUEST.
fn leased(cfg: &DhcpConfig, l: &mut Leases, n: u8) -> Ipv4Addr {
    let a = offer(cfg, l, n);
    decide(&selecting(n, a, SERVER), &plan(cfg), server(cfg), l, NOW);
    a
}

fn kinds(events: &Events) -> Vec<EventKind> {
    events.iter().map(|(k, _)| k.clone()).collect()
}

#[test]
fn a_discover_is_offered_a_pool_address_and_its_offer_is_held_for_the_request() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let mut p = plan(&cfg);
    p.hostname = Some("web-1".into());
    p.boot = Some(DhcpBoot { filename: "undionly.kpxe".into(), next_server: SERVER, vendor_class: "PXEClient" });
    let d = decide(&pxe(MessageType::Discover, 1), &p, server(&cfg), &mut l, NOW);
    assert_eq!(offered(&d), ip("198.18.0.10"));
    let o = d.reply.as_ref().unwrap().msg.opts();
    assert_eq!(o.get(OptionCode::ServerIdentifier), Some(&DhcpOption::ServerIdentifier(SERVER)));
    assert_eq!(o.get(OptionCode::AddressLeaseTime), Some(&DhcpOption::AddressLeaseTime(600)));
    assert_eq!(o.get(OptionCode::Hostname), Some(&DhcpOption::Hostname("web-1".into())));
    assert_eq!(o.get(OptionCode::BootfileName), Some(&DhcpOption::BootfileName(b"undionly.kpxe".to_vec())));
    assert!(matches!(d.write, Write::Nothing) && d.flush.is_none() && d.dropped.is_none());
    assert_eq!(l.held.len(), 1, "the OFFER's event waits for the REQUEST");
}

#[test]
fn a_discover_is_dropped_while_the_store_is_behind_and_nothing_is_offered() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let p = Plan { store_behind: true, ..plan(&cfg) };
    let d = decide(&msg(MessageType::Discover, 1), &p, server(&cfg), &mut l, NOW);
    assert_eq!((d.reply.is_none(), d.dropped), (true, Some("store_backlog")));
    assert!(!l.knows(Mac(mac(1)), ip("198.18.0.10")));
}

#[test]
fn a_discover_over_its_relays_limit_is_dropped_and_one_within_it_is_not() {
    let cfg = config("max_clients_per_relay = 1");
    let mut l = leases(&cfg);
    let relayed = |n| {
        let mut r = msg(MessageType::Discover, n);
        r.msg.set_giaddr(ip("198.18.0.254"));
        r
    };
    let first = decide(&relayed(1), &plan(&cfg), server(&cfg), &mut l, NOW);
    assert_eq!(offered(&first), ip("198.18.0.10"));
    let second = decide(&relayed(2), &plan(&cfg), server(&cfg), &mut l, NOW);
    assert_eq!((second.reply.is_none(), second.dropped), (true, Some("relay_limit")));
    // The client within the limit asks again and is offered again.
    assert_eq!(offered(&decide(&relayed(1), &plan(&cfg), server(&cfg), &mut l, NOW)), ip("198.18.0.10"));
}

#[test]
fn a_discover_finds_the_pool_exhausted_when_every_address_is_leased() {
    let cfg = config("");
    let mut l = leases(&cfg);
    for n in 1..=2 {
        leased(&cfg, &mut l, n);
    }
    let d = decide(&msg(MessageType::Discover, 3), &plan(&cfg), server(&cfg), &mut l, NOW);
    assert_eq!((d.reply.is_none(), d.dropped), (true, Some("pool_exhausted")));
}

#[test]
fn a_discover_that_may_place_its_machine_is_written_at_once() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let p = Plan { may_place: true, ..plan(&cfg) };
    let d = decide(&msg(MessageType::Discover, 1), &p, server(&cfg), &mut l, NOW);
    offered(&d);
    let Write::Record(events) = &d.write else { panic!("written at once: {:?}", d.write) };
    assert_eq!(kinds(events), [EventKind::DhcpOffer]);
    assert_eq!(l.held.len(), 0);
}

#[test]
fn a_second_discover_hands_back_the_first_offers_event_to_be_written() {
    let cfg = config("");
    let mut l = leases(&cfg);
    decide(&msg(MessageType::Discover, 1), &plan(&cfg), server(&cfg), &mut l, NOW);
    let d = decide(&msg(MessageType::Discover, 1), &plan(&cfg), server(&cfg), &mut l, NOW);
    assert_eq!(offered(&d), ip("198.18.0.10"), "the same client keeps its address");
    assert!(d.flush.is_some(), "the first OFFER is written now");
    assert_eq!(l.held.len(), 1);
}

#[test]
fn a_request_for_the_offer_is_acked_with_its_lease_and_both_events_in_one_write() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let a = offer(&cfg, &mut l, 1);
    let d = decide(&selecting(1, a, SERVER), &plan(&cfg), server(&cfg), &mut l, NOW);
    let reply = d.reply.as_ref().unwrap();
    assert_eq!((reply.kind, reply.msg.yiaddr()), (MessageType::Ack, a));
    let Write::Ack { lease, events, held } = &d.write else { panic!("an ACK waits for its lease: {:?}", d.write) };
    assert_eq!((lease.ip, lease.state, lease.expires_at), (a, LeaseState::Active, NOW + 600));
    assert_eq!(kinds(events), [EventKind::DhcpOffer, EventKind::DhcpAck]);
    assert!(held.is_some(), "kept to be put back if the write cannot be queued");
    assert_eq!(l.held.len(), 0);
    assert_eq!(l.active(NOW), 1);
}

#[test]
fn a_request_to_another_server_withdraws_our_offer_and_gets_no_answer() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let a = offer(&cfg, &mut l, 1);
    let d = decide(&selecting(1, ip("198.18.0.99"), OTHER_SERVER), &plan(&cfg), server(&cfg), &mut l, NOW);
    assert!(d.reply.is_none() && d.flush.is_some() && matches!(d.write, Write::Nothing));
    // The address is free for the next clients at once: the two-address pool serves two more.
    let next: Vec<_> = (2..=3).map(|n| offer(&cfg, &mut l, n)).collect();
    assert!(next.contains(&a), "{next:?}");
}

#[test]
fn an_init_reboot_for_an_address_we_have_no_record_of_gets_no_answer() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let mut r = msg(MessageType::Request, 1);
    r.requested_ip = Some(ip("198.18.0.11"));
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW);
    assert!(d.reply.is_none() && d.dropped.is_none() && matches!(d.write, Write::Nothing));
}

#[test]
fn an_init_reboot_from_another_network_is_naked_and_recorded() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let mut r = msg(MessageType::Request, 1);
    r.requested_ip = Some(ip("10.1.2.3"));
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW);
    let reply = d.reply.as_ref().unwrap();
    assert_eq!(reply.kind, MessageType::Nak);
    assert!(matches!(reply.msg.opts().get(OptionCode::Message), Some(DhcpOption::Message(_))));
    let Write::Record(events) = &d.write else { panic!("{:?}", d.write) };
    assert_eq!(kinds(events), [EventKind::DhcpNak]);
}

#[test]
fn a_renewal_of_an_address_leased_to_another_client_is_naked() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let a = leased(&cfg, &mut l, 1);
    let mut r = msg(MessageType::Request, 2);
    r.msg.set_ciaddr(a);
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW);
    assert_eq!(d.reply.as_ref().unwrap().kind, MessageType::Nak);
    // Its own client renews it.
    let mut own = msg(MessageType::Request, 1);
    own.msg.set_ciaddr(a);
    let d = decide(&own, &plan(&cfg), server(&cfg), &mut l, NOW + 300);
    assert!(matches!(&d.write, Write::Ack { lease, .. } if lease.expires_at == NOW + 900));
}

#[test]
fn a_release_writes_the_released_lease_and_an_unknown_one_writes_nothing() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let a = leased(&cfg, &mut l, 1);
    let mut r = msg(MessageType::Release, 1);
    r.msg.set_ciaddr(a);
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW + 5);
    assert!(d.reply.is_none());
    let Write::Lease { lease, events } = &d.write else { panic!("{:?}", d.write) };
    assert_eq!((lease.ip, lease.state), (a, LeaseState::Released));
    assert_eq!(kinds(events), [EventKind::DhcpRelease]);
    assert_eq!(l.active(NOW + 5), 0);
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW + 6);
    assert!(matches!(d.write, Write::Nothing), "released already");
}

#[test]
fn a_declined_address_is_quarantined_for_a_lease_time() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let a = leased(&cfg, &mut l, 1);
    let mut r = msg(MessageType::Decline, 1);
    r.requested_ip = Some(a);
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW);
    let Write::Lease { lease, events } = &d.write else { panic!("{:?}", d.write) };
    assert_eq!((lease.state, lease.expires_at), (LeaseState::Declined, NOW + 600));
    assert_eq!(kinds(events), [EventKind::DhcpDecline]);
    let next = offer(&cfg, &mut l, 2);
    assert_ne!(next, a, "a declined address is not offered while quarantined");
}

#[test]
fn an_inform_is_answered_with_configuration_and_no_address() {
    let cfg = config("");
    let mut l = leases(&cfg);
    let mut r = msg(MessageType::Inform, 1);
    r.msg.set_ciaddr(ip("198.18.0.50"));
    let d = decide(&r, &plan(&cfg), server(&cfg), &mut l, NOW);
    let reply = d.reply.as_ref().unwrap();
    assert_eq!(
        (reply.kind, reply.msg.yiaddr(), reply.msg.ciaddr()),
        (MessageType::Ack, Ipv4Addr::UNSPECIFIED, ip("198.18.0.50"))
    );
    assert!(reply.msg.opts().get(OptionCode::AddressLeaseTime).is_none());
    assert!(reply.msg.opts().get(OptionCode::Router).is_some());
    let Write::Record(events) = &d.write else { panic!("{:?}", d.write) };
    assert_eq!(kinds(events), [EventKind::DhcpInform]);
}

#[test]
fn a_server_message_type_from_a_client_is_dropped() {
    let cfg = config("");
    let d = decide(&msg(MessageType::Ack, 1), &plan(&cfg), server(&cfg), &mut leases(&cfg), NOW);
    assert_eq!((d.reply.is_none(), d.dropped), (true, Some("unexpected_type")));
}

#[test]
fn the_subnet_is_the_relays_else_the_clients_own_else_the_servers() {
    let cfg = config("");
    let mut r = msg(MessageType::Discover, 1);
    assert_eq!(subnet_of(&cfg.subnets, SERVER, &r).map(|(i, _)| i), Some(0));
    r.msg.set_ciaddr(ip("198.18.5.7"));
    assert_eq!(subnet_of(&cfg.subnets, SERVER, &r).map(|(i, _)| i), Some(1));
    r.msg.set_giaddr(ip("198.18.0.254"));
    assert_eq!(subnet_of(&cfg.subnets, SERVER, &r).map(|(i, _)| i), Some(0), "giaddr first");
    r.msg.set_giaddr(ip("10.9.9.9"));
    assert_eq!(subnet_of(&cfg.subnets, SERVER, &r), None, "a relay on no served network");
}
