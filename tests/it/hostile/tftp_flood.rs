//! TFTP under forged read requests: requests that are never acknowledged (as when the source
//! address is forged, the answer goes elsewhere) from many addresses fill every transfer slot,
//! yet a real client still fetches its file; one address cannot hold more than its share. On
//! loopback (any 127/8 source address is ours), no root needed.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use rackboot::config::Config;
use tokio::net::UdpSocket;

fn rrq(name: &str) -> Vec<u8> {
    let mut p = vec![0, 1];
    for s in [name, "octet"] {
        p.extend_from_slice(s.as_bytes());
        p.push(0);
    }
    p
}

/// Fetches `name` in lockstep (512-byte blocks) from `from`; the bytes, or the server's error.
async fn fetch(from: Ipv4Addr, server: SocketAddr, name: &str) -> Result<Vec<u8>, String> {
    let sock = UdpSocket::bind((from, 0)).await.unwrap();
    sock.send_to(&rrq(name), server).await.unwrap();
    let (mut data, mut buf, mut expect) = (Vec::new(), vec![0u8; 2048], 1u16);
    loop {
        let (n, peer) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .map_err(|_| "timeout".to_string())?
            .unwrap();
        match u16::from_be_bytes([buf[0], buf[1]]) {
            3 if u16::from_be_bytes([buf[2], buf[3]]) == expect => {
                data.extend_from_slice(&buf[4..n]);
                let mut ack = vec![0, 4];
                ack.extend_from_slice(&expect.to_be_bytes());
                sock.send_to(&ack, peer).await.unwrap();
                if n - 4 < 512 {
                    return Ok(data);
                }
                expect = expect.wrapping_add(1);
            }
            5 => return Err(String::from_utf8_lossy(&buf[4..n]).trim_end_matches('\0').to_string()),
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_requests_cannot_lock_a_real_client_out() {
    let dir = tempfile::tempdir().unwrap();
    let relay = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let text = crate::common::config_text(dir.path(), relay.local_addr().unwrap().port(), "")
        .replace("[tftp]\nport = 0\n", "[tftp]\nport = 0\nmax_transfers = 64\nmax_transfers_per_client = 4\n");
    let app = rackboot::app::start(Config::parse(&text).unwrap()).await.unwrap();
    let server = SocketAddr::from((Ipv4Addr::LOCALHOST, app.tftp_addr.unwrap().port()));
    let file: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::create_dir_all(dir.path().join("boot")).unwrap();
    std::fs::write(dir.path().join("boot/ipxe.efi"), &file).unwrap();

    // One address gets four transfers at once, not a fifth.
    let hog = UdpSocket::bind("127.0.0.9:0").await.unwrap();
    for _ in 0..4 {
        hog.send_to(&rrq("ipxe.efi"), server).await.unwrap();
    }
    let fifth = fetch(Ipv4Addr::new(127, 0, 0, 9), server, "ipxe.efi").await;
    assert_eq!(fifth.unwrap_err(), "server busy, retry", "a fifth transfer for one address is refused");

    // 400 forged requests from 200 addresses, never acknowledged: far more than the 64 slots.
    let mut forged = Vec::new();
    for i in 0..200u32 {
        let s = UdpSocket::bind((Ipv4Addr::from(0x7f01_0000 + i), 0)).await.unwrap();
        for _ in 0..2 {
            s.send_to(&rrq("ipxe.efi"), server).await.unwrap();
        }
        forged.push(s);
    }
    // A real client, right in the middle of it, gets its file whole.
    let got = fetch(Ipv4Addr::new(127, 0, 0, 200), server, "ipxe.efi").await.expect("the real client is served");
    assert!(got == file, "the file arrived intact");
    // And so does one that asks while forged requests keep coming, about one a millisecond: a
    // new transfer survives 64 more of them, so a client that acknowledges within ~60 ms (a
    // LAN's round trip is well under one) keeps its slot.
    let stop = tokio_util::sync::CancellationToken::new();
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let more = {
        let (stop, sent) = (stop.clone(), sent.clone());
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                for s in &forged {
                    let _ = s.send_to(&rrq("ipxe.efi"), server).await;
                    sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    if stop.is_cancelled() {
                        break;
                    }
                }
            }
        })
    };
    // Until the flood has filled the slots (waited for, not timed: a loaded machine sends slower).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while sent.load(std::sync::atomic::Ordering::Relaxed) < 64 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = sent.load(std::sync::atomic::Ordering::Relaxed);
    let got = fetch(Ipv4Addr::new(127, 0, 0, 201), server, "ipxe.efi").await.expect("served during the flood");
    assert!(got == file);
    let during = sent.load(std::sync::atomic::Ordering::Relaxed) - before;
    stop.cancel();
    more.await.unwrap();
    assert!(before >= 64 && during >= 1, "the flood was on before ({before}) and during ({during}) the fetch");

    let admin = app.admin_token.clone();
    let (status, metrics) = crate::common::https_get_with(app.https_addr, &app.ca_pem, "/metrics", Some(&admin)).await;
    assert_eq!(status, 200);
    let value = |name: &str| -> f64 {
        metrics.lines().find(|l| l.starts_with(name)).and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0.0)
    };
    assert!(value("rackboot_tftp_unproven_evicted_total") >= 300.0, "{metrics}");
    assert!(value("rackboot_tftp_requests_refused_total{reason=\"per_client\"}") >= 1.0, "{metrics}");
    app.wait(async {}).await.unwrap();
}
