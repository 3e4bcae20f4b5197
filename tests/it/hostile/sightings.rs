//! Sightings from unauthenticated firmware requests cannot starve DHCP: one client floods
//! `/boot/ipxe` and TFTP `grub/grub.cfg-<mac>` with made-up MACs (each a sighting to write) as
//! fast as it can, while real clients keep leasing. Every exchange completes, no DISCOVER is
//! dropped for the store's backlog, the writer's queue never holds more than the firmware
//! budget beside DHCP's own writes, and machines booting from another address meanwhile still
//! have their boot scripts on their timelines (the flood's source holds 16 of the 128 places). Runs on the embedded store, and on PostgreSQL in CI's
//! second stage (where the flood, before the budget, stopped every new lease).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

fn made_up(n: u64) -> String {
    let b = (0x5254_0300_0000u64 + n).to_be_bytes();
    b[2..].iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

/// One HTTP client sending `/boot/ipxe` for made-up MACs back to back; counts answers.
async fn script_flood(http: SocketAddr, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>, from: u64) {
    let mut n = from;
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = tokio::net::TcpStream::connect(http).await else { continue };
        let req = format!("GET /boot/ipxe?mac={}&platform=pcbios HTTP/1.0\r\nHost: x\r\n\r\n", made_up(n));
        n += 1;
        if s.write_all(req.as_bytes()).await.is_ok() {
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink).await;
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Read requests for the signed GRUB's per-MAC config, never acknowledged (as with a forged
/// source address); counts requests sent.
async fn tftp_flood(tftp: SocketAddr, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let sock = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut n = 1_000_000;
    while !stop.load(Ordering::Relaxed) {
        let mut rrq = vec![0, 1];
        rrq.extend_from_slice(format!("grub/grub.cfg-{}\0octet\0", made_up(n)).as_bytes());
        n += 1;
        let _ = sock.send_to(&rrq, tftp).await;
        sent.fetch_add(1, Ordering::Relaxed);
        if n % 64 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_boot_script_and_tftp_sightings_does_not_stop_new_leases() {
    let lab = Lab::start("").await;
    let app = lab.app.as_ref().unwrap();
    let (http, tftp) = (app.http_addr, app.tftp_addr.expect("TFTP runs"));
    let (stop, scripts, rrqs) = (Arc::new(AtomicBool::new(false)), Arc::default(), Arc::default());
    let mut flood = Vec::new();
    for i in 0..4 {
        flood.push(tokio::spawn(script_flood(http, stop.clone(), Arc::clone(&scripts), i * 100_000)));
    }
    flood.push(tokio::spawn(tftp_flood(tftp, stop.clone(), Arc::clone(&rrqs))));
    let watch = {
        let (cmdb, stop) = (app.cmdb.clone(), stop.clone());
        tokio::spawn(async move {
            let mut most = 0;
            while !stop.load(Ordering::Relaxed) {
                most = most.max(cmdb.write_backlog());
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            most
        })
    };

    // Real clients lease while the flood runs: every exchange completes.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = Instant::now();
    let clients = 150u32;
    for i in 0..clients {
        let mac = [0x52, 0x54, 0, 0xe3, (i >> 8) as u8, i as u8];
        let ack = four_way(&lab, mac, 90_000 + i).await;
        assert_eq!(kind(&ack), dhcproto::v4::MessageType::Ack, "client {i}");
    }
    let took = start.elapsed();
    // Twenty machines booting meanwhile from another address still have their boot scripts
    // recorded, every one: the flood's source holds 16 places in the writer's queue, not all 128.
    let mut booting = Vec::new();
    for i in 0..20u8 {
        let mac = format!("52:54:00:e3:ff:{i:02x}");
        let m = lab.api.ok(hyper::Method::POST, "/machines", Some(serde_json::json!({"macs": [mac]}))).await.unwrap();
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind("127.0.0.2:0".parse().unwrap()).unwrap();
        let mut s = sock.connect(http).await.unwrap();
        let req = format!("GET /boot/ipxe?mac={mac}&platform=pcbios HTTP/1.0\r\nHost: x\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let _ = s.read_to_end(&mut Vec::new()).await;
        booting.push(m["id"].clone());
    }
    let recorded = {
        let mut n = 0;
        for id in &booting {
            let has = || async {
                let events = lab.api.ok(hyper::Method::GET, &format!("/machines/{id}/events"), None).await.unwrap();
                events["events"].as_array().unwrap().iter().any(|e| e["kind"] == "boot.script")
            };
            let mut tries = 0;
            while !has().await && tries < 20 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                tries += 1;
            }
            n += usize::from(has().await);
        }
        n
    };
    stop.store(true, Ordering::Relaxed);
    for f in flood {
        let _ = f.await;
    }
    assert_eq!(recorded, booting.len(), "every booting machine's boot script was recorded during the flood");
    let most = watch.await.unwrap();
    let (scripts, rrqs) = (scripts.load(Ordering::Relaxed), rrqs.load(Ordering::Relaxed));
    eprintln!(
        "{clients} DORAs in {took:?} under {scripts} boot scripts and {rrqs} TFTP requests; queue at most {most}"
    );
    assert!(scripts > 100 && rrqs > 100, "the flood ran: {scripts} scripts, {rrqs} TFTP requests");

    let metrics = lab.metrics().await;
    let backlog_drops: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("rackboot_dhcp_packets_dropped_total") && l.contains("store_backlog"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(backlog_drops, 0.0, "no DISCOVER dropped for the store's backlog");
    assert!(most < 512, "the write queue held {most} jobs (DHCP holds DISCOVERs back at 512 on a shared store)");
}

/// The writer stalled (another session holds the events table of the shared store locked, as a
/// slow or busy database would) while one client floods boot scripts and TFTP: sightings pile up
/// no further than their budget, so new clients' DISCOVERs are still answered, and their
/// REQUESTs are ACKed once the store moves again. Before the budget, the pile passed DHCP's
/// backlog limit and every new client was dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_shared_store_under_a_sighting_flood_still_offers_to_new_clients() {
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let lab = Lab::start(&pg.store()).await;
    let app = lab.app.as_ref().unwrap();
    let (http, tftp) = (app.http_addr, app.tftp_addr.expect("TFTP runs"));
    let (stop, scripts, rrqs) = (Arc::new(AtomicBool::new(false)), Arc::default(), Arc::default());
    let mut flood = Vec::new();
    for i in 0..4 {
        flood.push(tokio::spawn(script_flood(http, stop.clone(), Arc::clone(&scripts), 500_000 + i * 100_000)));
    }
    flood.push(tokio::spawn(tftp_flood(tftp, stop.clone(), Arc::clone(&rrqs))));

    // Another session locks the events table for four seconds: every write batch waits.
    let lock = std::process::Command::new("psql")
        .args([&pg.url, "-qAtX", "-c", "BEGIN; LOCK TABLE events IN EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;"])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let during = app.cmdb.write_backlog();
    let mut offers = Vec::new();
    for i in 0..20u32 {
        let mac = [0x52, 0x54, 0, 0xe5, 0, i as u8];
        let offer = lab.exchange(&msg(dhcproto::v4::MessageType::Discover, mac, 95_000 + 2 * i)).await;
        offers.push((
            mac,
            i,
            offer.unwrap_or_else(|| panic!("no OFFER for client {i} while the store is stalled (queue {during})")),
        ));
    }
    let mut lock = lock;
    assert!(lock.wait().unwrap().success(), "the lock session ran");
    for (mac, i, offer) in &offers {
        let ack = lab.exchange(&request_for(offer, *mac, 95_001 + 2 * i)).await.expect("ack once the store moves");
        assert_eq!(kind(&ack), dhcproto::v4::MessageType::Ack, "client {i}");
    }
    stop.store(true, Ordering::Relaxed);
    for f in flood {
        let _ = f.await;
    }
    let scripts = scripts.load(Ordering::Relaxed);
    eprintln!("stalled store: {scripts} boot scripts during the test, {during} writes queued mid-stall; 20 clients offered and ACKed");
    assert!(during < 512, "{during} writes queued mid-stall");
}
