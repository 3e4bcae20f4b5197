//! DHCP under a flood as an attacker on the VLAN sends it: 20,000 packets, two thirds malformed
//! or mutated and a third valid DISCOVERs from invented MACs (far more than the pool's 981
//! addresses), relayed to the whole appliance in-process. A real client right after it still
//! gets a lease: offers are only promises and the oldest is taken back when the pool runs dry.
//! And 50,000 invented MACs behind one switch port, completing DHCP for every offer they get,
//! hold no more than the port's limit of the pool: a machine on the next port gets its lease.

use std::time::Duration;

use crate::common::*;
use dhcproto::v4::{relay, DhcpOption, Message, MessageType};
use dhcproto::{Decodable, Decoder, Encodable};
use hyper::Method;

/// Reads and throws away whatever replies are queued on the relay socket.
fn drain(lab: &Lab) -> usize {
    let mut buf = [0u8; 1500];
    let mut n = 0;
    while lab.relay.try_recv_from(&mut buf).is_ok() {
        n += 1;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_client_gets_a_lease_right_after_a_discover_flood() {
    let lab = Lab::start("").await;
    let template = msg(MessageType::Discover, [0x02, 0, 0, 0, 0, 0], 1).to_vec().unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut valid, mut offers) = (0u32, 0usize);
    for i in 0..20_000u32 {
        let r = next();
        let packet = match i % 3 {
            // A valid DISCOVER from an invented (locally administered) MAC.
            0 => {
                valid += 1;
                let b = r.to_be_bytes();
                msg(MessageType::Discover, [0x02, b[1], b[2], b[3], b[4], b[5]], r as u32).to_vec().unwrap()
            }
            // The same, mutated: a few bytes flipped anywhere, or cut short.
            1 => {
                let mut p = template.clone();
                for k in 0..4 {
                    let at = (r >> (k * 16)) as usize % p.len();
                    p[at] ^= (r >> (k * 8)) as u8 | 1;
                }
                p
            }
            _ => {
                let mut p = template.clone();
                p.truncate((r % 300) as usize);
                p
            }
        };
        lab.send_raw(&packet).await;
        if i % 200 == 0 {
            offers += drain(&lab);
            tokio::task::yield_now().await;
        }
    }
    // Let the server get through its queue (until nothing has come for half a second); keep
    // the relay socket empty meanwhile.
    let mut quiet = 0;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = drain(&lab);
        offers += n;
        quiet = if n == 0 { quiet + 1 } else { 0 };
        if quiet >= 5 {
            break;
        }
    }
    assert!(valid > 6_000 && offers > 981, "the flood outgrew the pool ({valid} DISCOVERs, {offers} offers)");

    // A real client now: DISCOVER (retransmitted, as clients do, within the offers' hold
    // time), OFFER, REQUEST, ACK.
    let mac = [0x52, 0x54, 0, 0x0f, 0, 1];
    let mut offer = None;
    for attempt in 0..3 {
        offer = lab.exchange(&msg(MessageType::Discover, mac, 4242 + attempt)).await;
        if offer.is_some() {
            break;
        }
    }
    let offer = offer.expect("an offer from a pool the flood had filled with offers");
    assert_eq!(kind(&offer), MessageType::Offer);
    let ack = lab.exchange(&request_for(&offer, mac, 4300)).await.expect("an ack");
    assert_eq!(kind(&ack), MessageType::Ack);
    let leases = lab.api.ok(Method::GET, "/leases?limit=10000", None).await.unwrap();
    let active: Vec<_> = leases["leases"].as_array().unwrap().iter().filter(|l| l["active"] == true).collect();
    assert_eq!(active.len(), 1, "offers are not leases: {active:?}");
    assert_eq!(active[0]["mac"], "52:54:00:0f:00:01");
    let metrics = lab.metrics().await;
    let reclaimed = metrics
        .lines()
        .find(|l| l.starts_with("rackboot_dhcp_offers_reclaimed_total"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(reclaimed >= 1_000.0, "offers were taken back when the pool ran dry ({reclaimed})\n{metrics}");
}

/// `m` as the rack's switch relays it from `port` (RFC 3046: option 82 on every message).
fn from_port(mut m: Message, port: &str) -> Message {
    let mut info = relay::RelayAgentInformation::default();
    info.insert(relay::RelayInfo::AgentCircuitId(port.as_bytes().to_vec()));
    info.insert(relay::RelayInfo::AgentRemoteId(b"leaf-r1".to_vec()));
    m.opts_mut().insert(DhcpOption::RelayAgentInformation(info));
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_port_flooding_complete_dhcp_takes_only_its_share_of_the_pool() {
    let lab = Lab::start("").await;
    let (mut requests, mut buf) = (0u32, [0u8; 1500]);
    let mut answer_offers = |lab: &Lab, requests: &mut u32| {
        let mut out = Vec::new();
        while let Ok((n, _)) = lab.relay.try_recv_from(&mut buf) {
            let Ok(offer) = Message::decode(&mut Decoder::new(&buf[..n])) else { continue };
            if kind(&offer) == MessageType::Offer {
                let mac: [u8; 6] = offer.chaddr()[..6].try_into().unwrap();
                out.push(from_port(request_for(&offer, mac, offer.xid()), "Ethernet7").to_vec().unwrap());
                *requests += 1;
            }
        }
        out
    };
    for i in 0..50_000u32 {
        let b = i.to_be_bytes();
        let d = from_port(msg(MessageType::Discover, [0x02, 0xf1, b[0], b[1], b[2], b[3]], i), "Ethernet7");
        lab.send_raw(&d.to_vec().unwrap()).await;
        if i % 200 == 0 {
            for r in answer_offers(&lab, &mut requests) {
                lab.send_raw(&r).await;
            }
            tokio::task::yield_now().await;
        }
    }
    // Answer the last offers, then let every ACK commit.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for r in answer_offers(&lab, &mut requests) {
            lab.send_raw(&r).await;
        }
    }
    drain(&lab);
    let leases = lab.api.ok(Method::GET, "/leases?limit=10000", None).await.unwrap();
    let active = leases["leases"].as_array().unwrap().iter().filter(|l| l["active"] == true).count();
    println!("50,000 MACs on one port: {requests} offers answered with a REQUEST, {active} leases");
    assert_eq!(active, 16, "the port holds dhcp.max_clients_per_port (16) addresses, no more");

    // A machine on the next port is served at once; a new MAC on the flooded port is not.
    let mac = [0x52, 0x54, 0, 0x0f, 0, 8];
    let offer = lab.exchange(&from_port(msg(MessageType::Discover, mac, 77), "Ethernet8")).await.expect("an offer");
    let ack = lab.exchange(&from_port(request_for(&offer, mac, 78), "Ethernet8")).await.expect("an ack");
    assert_eq!(kind(&ack), MessageType::Ack);
    let refused = from_port(msg(MessageType::Discover, [0x02, 0xf1, 9, 9, 9, 9], 79), "Ethernet7");
    assert!(lab.exchange(&refused).await.is_none(), "a 17th client on the flooded port got an offer");
    let metrics = lab.metrics().await;
    let counter = |name: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let limited = counter("rackboot_dhcp_packets_dropped_total{reason=\"port_limit\"}");
    let received = counter("rackboot_dhcp_packets_received_total{type=\"discover\"}");
    let offered = counter("rackboot_dhcp_packets_sent_total{type=\"offer\"}");
    // The kernel may drop some of the 50,000 datagrams on a busy machine before rackboot reads
    // them; every one it read was answered or counted as refused.
    assert!(received >= 10_000.0, "the flood reached rackboot ({received})\n{metrics}");
    assert_eq!(limited + offered, received, "every DISCOVER read is answered or counted as refused\n{metrics}");
}
