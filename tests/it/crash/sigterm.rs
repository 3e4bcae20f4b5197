//! SIGTERM under DHCP load: the appliance (the real binary) is told to stop while relayed
//! DORAs pour in, must exit within 2 s with a clean status, and every lease a client got an ACK
//! for, up to the last one, is in the CMDB when it starts again. On loopback, no root needed.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::process::{lost_leases, start};
use crate::common::{kind, msg, request_for};
use dhcproto::v4::{Message, MessageType};
use dhcproto::{Decodable, Decoder, Encodable};
use tokio::net::UdpSocket;

/// How long SIGTERM may take to stop the appliance (what a supervisor waits before SIGKILL).
const EXIT_WITHIN: Duration = Duration::from_secs(2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_dhcp_load_exits_within_two_seconds_and_keeps_every_acknowledged_lease() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let relay = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let config = dir.path().join("rackboot.toml");
    // A pool of about 10,000 addresses: the load never runs it dry before the signal.
    let text = crate::common::config_text(&data, relay.local_addr().unwrap().port(), "")
        .replace("127.0.1.10-127.0.5.250", "127.0.1.10-127.0.40.250");
    std::fs::write(&config, text).unwrap();
    let (mut app, _, at) = start(&config, &data).await;
    let server = at.dhcp.expect("dhcp runs");

    // Open-loop load: four DISCOVERs from new MACs every millisecond tick (about 2,000/s here);
    // each OFFER answered with a REQUEST at once; each ACK kept (MAC -> address).
    let acked: Arc<Mutex<HashMap<[u8; 6], Ipv4Addr>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let sender = tokio::spawn({
        let (relay, stop) = (relay.clone(), stop.clone());
        async move {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..4 {
                    n += 1;
                    let mac = [0x52, 0x54, 0x0b, (n >> 16) as u8, (n >> 8) as u8, n as u8];
                    let _ = relay.send_to(&msg(MessageType::Discover, mac, n * 2).to_vec().unwrap(), server).await;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            n
        }
    });
    let receiver = tokio::spawn({
        let (relay, stop, acked) = (relay.clone(), stop.clone(), acked.clone());
        async move {
            let mut buf = [0u8; 1500];
            while !stop.load(Ordering::Relaxed) {
                let Ok(Ok((len, _))) =
                    tokio::time::timeout(Duration::from_millis(100), relay.recv_from(&mut buf)).await
                else {
                    continue;
                };
                let Ok(m) = Message::decode(&mut Decoder::new(&buf[..len])) else { continue };
                let mac: [u8; 6] = m.chaddr()[..6].try_into().unwrap();
                match kind(&m) {
                    MessageType::Offer => {
                        let req = request_for(&m, mac, m.xid() + 1);
                        let _ = relay.send_to(&req.to_vec().unwrap(), server).await;
                    }
                    MessageType::Ack => {
                        acked.lock().unwrap().insert(mac, m.yiaddr());
                    }
                    _ => {}
                }
            }
        }
    });

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = acked.lock().unwrap().len();
    assert!(before >= 100, "the load got going before the signal ({before} leases acknowledged)");
    // SIGTERM with the load still running; the client keeps going until the process is gone.
    let exited = tokio::task::spawn_blocking(move || {
        let exited = app.terminate(EXIT_WITHIN);
        (exited, app)
    });
    let (exited, app) = exited.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    let sent = sender.await.unwrap();
    receiver.await.unwrap();
    let Some((status, took)) = exited else {
        panic!("still running {EXIT_WITHIN:?} after SIGTERM; its log ends:\n{}", app.log_tail(30));
    };
    drop(app);
    assert!(status.success(), "a clean stop exits 0: {status}");
    let acked = acked.lock().unwrap().clone();
    eprintln!("sigterm: exited in {took:?}; {sent} DISCOVERs sent, {} leases acknowledged", acked.len());

    // Started again: every acknowledged lease is there with its MAC.
    let (_app, api, _) = start(&config, &data).await;
    let lost = lost_leases(&api, &acked).await;
    assert!(
        lost.is_empty(),
        "{} acknowledged leases lost after SIGTERM: {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
}
