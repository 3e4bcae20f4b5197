//! DHCP under a flood as an attacker on the VLAN sends it: 20,000 packets, two thirds malformed
//! or mutated and a third valid DISCOVERs from invented MACs (far more than the pool's 981
//! addresses), relayed to the whole appliance in-process. A real client right after it still
//! gets a lease: offers are only promises and the oldest is taken back when the pool runs dry.

mod common;

use std::time::Duration;

use common::*;
use dhcproto::v4::MessageType;
use dhcproto::Encodable;
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
