//! kill -9 at any moment loses no acknowledged lease: the appliance (the real binary) serves
//! relayed DORAs from many clients while it is killed with SIGKILL over and over; after each
//! restart every lease a client got an ACK for is still there, with its MAC, and no address
//! was given to two clients. On loopback, no root needed.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::common::process::{lost_leases, start};
use crate::common::{kind, msg, request_for};
use dhcproto::v4::{Message, MessageType};
use dhcproto::{Decodable, Decoder, Encodable};
use tokio::net::UdpSocket;

/// One reply with `xid` within `wait`.
async fn reply(relay: &UdpSocket, xid: u32, wait: Duration) -> Option<Message> {
    let mut buf = [0u8; 1500];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let (n, _) = tokio::time::timeout_at(deadline, relay.recv_from(&mut buf)).await.ok()?.ok()?;
        let Ok(m) = Message::decode(&mut Decoder::new(&buf[..n])) else { continue };
        if m.xid() == xid {
            return Some(m);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_the_middle_of_dhcp_loses_no_acknowledged_lease() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let relay = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    // Every listener on port 0: each start reports where DHCP and the API are.
    let text = crate::common::config_text(&data, relay.local_addr().unwrap().port(), "");
    let config = dir.path().join("rackboot.toml");
    std::fs::write(&config, text).unwrap();

    // mac -> the address its ACK gave it.
    let mut acked: HashMap<[u8; 6], Ipv4Addr> = HashMap::new();
    let mut next = 0u32;
    for round in 0..6u32 {
        let (app, _, at) = start(&config, &data).await;
        let server = at.dhcp.expect("dhcp runs");
        // DORAs until the kill, which lands at a different moment each round.
        let until = Instant::now() + Duration::from_millis(300 + 170 * u64::from(round));
        while Instant::now() < until {
            next += 1;
            let mac = [0x52, 0x54, 0x0a, (next >> 16) as u8, (next >> 8) as u8, next as u8];
            relay.send_to(&msg(MessageType::Discover, mac, next * 2).to_vec().unwrap(), server).await.unwrap();
            let Some(offer) = reply(&relay, next * 2, Duration::from_millis(500)).await else { continue };
            let req = request_for(&offer, mac, next * 2 + 1);
            relay.send_to(&req.to_vec().unwrap(), server).await.unwrap();
            if let Some(ack) = reply(&relay, next * 2 + 1, Duration::from_millis(500)).await {
                if kind(&ack) == MessageType::Ack {
                    acked.insert(mac, ack.yiaddr());
                }
            }
        }
        drop(app); // SIGKILL, mid-exchange
    }
    assert!(acked.len() >= 100, "enough leases were acknowledged to mean something ({})", acked.len());

    // After the last kill: every acknowledged lease is there, each address held once.
    let (_app, api, _) = start(&config, &data).await;
    let lost = lost_leases(&api, &acked).await;
    let mut by_ip: HashMap<Ipv4Addr, usize> = HashMap::new();
    for ip in acked.values() {
        *by_ip.entry(*ip).or_default() += 1;
    }
    let doubled: Vec<_> = by_ip.iter().filter(|(_, n)| **n > 1).collect();
    println!(
        "6 kills, {} acknowledged leases, {} lost, {} addresses given twice",
        acked.len(),
        lost.len(),
        doubled.len()
    );
    assert!(lost.is_empty(), "acknowledged leases lost after kill -9: {lost:?}");
    assert!(doubled.is_empty(), "addresses given to two clients: {doubled:?}");
}
