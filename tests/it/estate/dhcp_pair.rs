//! A hot-standby DHCP pair in-process on loopback: two appliances on one PostgreSQL CMDB (a
//! throwaway cluster), the primary answering and the standby silent; the primary stops, the
//! standby answers within the takeover time and a client renewing through it keeps its
//! address; the primary comes back, knows what the standby leased, and the standby hands back.
//! No address is ever held by two clients. Skips where PostgreSQL is not installed.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::common::*;
use dhcproto::v4::{Message, MessageType};
use dhcproto::Encodable;

const TAKEOVER_SECS: u64 = 2;

fn member(pg: &crate::pg::Cluster, role: &str) -> String {
    format!("[dhcp.pair]\nname = \"vlan-test\"\nrole = \"{role}\"\ntakeover_secs = {TAKEOVER_SECS}\n{}", pg.store())
}

/// Whether the appliance answers a DISCOVER from a fresh client within `wait`.
async fn answers(lab: &Lab, xid: u32, wait: Duration) -> bool {
    let mac = [0x52, 0x54, 0x00, 0xee, (xid >> 8) as u8, xid as u8];
    lab.send_raw(&msg(MessageType::Discover, mac, xid).to_vec().unwrap()).await;
    lab.recv(xid, wait).await.is_some()
}

/// A client in REBINDING: its address in ciaddr, no server id, broadcast to whoever answers.
fn rebind(mac: [u8; 6], ip: Ipv4Addr, xid: u32) -> Message {
    let mut m = msg(MessageType::Request, mac, xid);
    m.set_ciaddr(ip);
    m
}

async fn metric(lab: &Lab, name: &str) -> Option<f64> {
    lab.metrics().await.lines().find_map(|l| l.strip_prefix(&format!("{name} "))?.parse().ok())
}

#[tokio::test]
async fn the_standby_takes_over_within_its_time_keeps_renewals_and_hands_back() {
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let mut primary = Lab::start(&member(&pg, "primary")).await;
    let standby = Lab::start(&member(&pg, "standby")).await;
    for lab in [&primary, &standby] {
        let want = if std::ptr::eq(lab, &primary) { 1.0 } else { 0.0 };
        let deadline = Instant::now() + Duration::from_secs(5);
        while metric(lab, "rackboot_dhcp_pair_active").await != Some(want) {
            assert!(Instant::now() < deadline, "pair roles not settled");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // The estate lists both with their roles, the primary answering.
    let deadline = Instant::now() + Duration::from_secs(10);
    let roles = loop {
        let all = primary.app.as_ref().unwrap().cmdb.appliances().await.unwrap();
        let roles: Vec<_> = all.iter().filter_map(|a| a.pair.as_ref().map(|p| (p.role.clone(), p.active))).collect();
        let settled = roles.contains(&("primary".into(), true)) && roles.contains(&("standby".into(), false));
        if settled || Instant::now() > deadline {
            break roles;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(roles.contains(&("primary".into(), true)) && roles.contains(&("standby".into(), false)), "{roles:?}");

    // The primary leases; the standby stays silent.
    let c1 = [0x52, 0x54, 0x00, 0xaa, 0x00, 0x01];
    let ip1 = four_way(&primary, c1, 100).await.yiaddr();
    assert!(!answers(&standby, 200, Duration::from_millis(1500)).await, "the standby answered while the primary beats");

    // The primary stops; the standby answers within the takeover time (plus one beat).
    primary.stop().await;
    let stopped = Instant::now();
    let mut xid = 300;
    while !answers(&standby, xid, Duration::from_millis(250)).await {
        xid += 1;
        assert!(stopped.elapsed() < Duration::from_secs(TAKEOVER_SECS + 5), "no takeover");
    }
    let took = stopped.elapsed();
    println!(
        "standby answered {:.1} s after the primary stopped (takeover_secs = {TAKEOVER_SECS})",
        took.as_secs_f64()
    );
    assert!(took <= Duration::from_secs(TAKEOVER_SECS + 2), "takeover took {took:?}");

    // A client renewing through the failover keeps its address; a new one gets another.
    let ack = standby.exchange(&rebind(c1, ip1, 400)).await.expect("the standby answers the rebinding client");
    assert_eq!((kind(&ack), ack.yiaddr()), (MessageType::Ack, ip1), "{ack:?}");
    let c2 = [0x52, 0x54, 0x00, 0xaa, 0x00, 0x02];
    let ip2 = four_way(&standby, c2, 500).await.yiaddr();
    assert_ne!(ip1, ip2);

    // The primary comes back, knowing what the standby leased, and the standby hands back.
    primary.restart().await;
    let back = Instant::now();
    while answers(&standby, xid, Duration::from_millis(250)).await {
        xid += 1;
        assert!(back.elapsed() < Duration::from_secs(5), "the standby did not hand back");
    }
    let ack = primary.exchange(&rebind(c2, ip2, 600)).await.expect("the primary answers the standby's client");
    assert_eq!((kind(&ack), ack.yiaddr()), (MessageType::Ack, ip2));
    let c3 = [0x52, 0x54, 0x00, 0xaa, 0x00, 0x03];
    let offer = primary.exchange(&msg(MessageType::Discover, c3, 700)).await.expect("offer");
    assert!(![ip1, ip2].contains(&offer.yiaddr()), "the primary offered an address the standby leased");
    assert!(offer.opts().get(dhcproto::v4::OptionCode::ServerIdentifier).is_some());

    // In the store: every ACKed lease, and no address held by two clients.
    let leases = primary.app.as_ref().unwrap().cmdb.leases().await.unwrap();
    let active: Vec<_> = leases.iter().filter(|l| l.state == rackboot::cmdb::LeaseState::Active).collect();
    for (mac, ip) in [(c1, ip1), (c2, ip2)] {
        assert!(active.iter().any(|l| l.ip == ip && l.mac.to_string() == mac_text(&mac)), "{ip} not leased to {mac:?}");
    }
    let mut ips: Vec<_> = active.iter().map(|l| l.ip).collect();
    ips.sort();
    let n = ips.len();
    ips.dedup();
    assert_eq!(ips.len(), n, "an address held by two clients: {leases:?}");
}
