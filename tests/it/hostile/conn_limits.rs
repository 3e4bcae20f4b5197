//! The web listeners hold against abuse: idle and slow-header connections are capped per
//! client and in total, timed out, and counted, while a legitimate client keeps being served.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::common::{https_get, https_get_with};
use rackboot::app::{self, Running};
use rackboot::config::Config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const PER_CLIENT: usize = 100;
const TOTAL: usize = 300;

/// Timeouts short enough to watch them act.
const QUICK: Timeouts = Timeouts { header: 1, idle: 2, handshake: 1 };
/// Timeouts long enough to fill a listener before the first one acts, short enough to wait for.
const BRIEF: Timeouts = Timeouts { header: 3, idle: 3, handshake: 3 };
/// Timeouts no connection reaches while a test opens its connections one by one on a busy
/// machine, so what it counts is the caps alone.
const PATIENT: Timeouts = Timeouts { header: 60, idle: 60, handshake: 60 };

struct Timeouts {
    header: u32,
    idle: u32,
    handshake: u32,
}

async fn start(dir: &std::path::Path, t: Timeouts) -> Running {
    let Timeouts { header, idle, handshake } = t;
    let text = format!(
        "[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n[http]\nlisten = \"127.0.0.1:0\"\n\
         header_timeout_secs = {header}\nidle_timeout_secs = {idle}\nmax_connections = {TOTAL}\nmax_connections_per_client = {PER_CLIENT}\n\
         [https]\nlisten = \"127.0.0.1:0\"\nhandshake_timeout_secs = {handshake}\n\
         [dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n",
        dir.display()
    );
    app::start(Config::parse(&text).unwrap()).await.unwrap()
}

/// A connection from `from` (any 127/8 address works on Linux loopback).
async fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(IpAddr::V4(from), 0)).unwrap();
    s.connect(to).await.unwrap()
}

/// Whether the server has closed `s` (EOF or reset) within `within`.
async fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 512];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
        }
    }
}

/// A legitimate plain-HTTP request from 127.0.0.1, answered within 3 s (a client stuck behind
/// the flood would wait for the 60 s timeouts; 3 s leaves a debug build under CI's load room).
async fn legit(app: &Running) -> bool {
    let get = async {
        let mut s = TcpStream::connect(app.http_addr).await.ok()?;
        s.write_all(b"GET /healthz HTTP/1.0\r\nHost: x\r\n\r\n").await.ok()?;
        let mut out = String::new();
        s.read_to_string(&mut out).await.ok()?;
        Some(out.starts_with("HTTP/1.0 "))
    };
    tokio::time::timeout(Duration::from_secs(3), get).await.ok().flatten().unwrap_or(false)
}

fn refused(metrics: &str, listener: &str, reason: &str) -> f64 {
    let key = format!("rackboot_http_connections_refused_total{{listener=\"{listener}\",reason=\"{reason}\"}} ");
    metrics.lines().find_map(|l| l.strip_prefix(&key)).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_idle_connections_from_one_client_are_capped_and_others_are_still_served() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path(), PATIENT).await;
    // 1,000 idle connections on each listener from one client, none sending a byte.
    let flooder = Ipv4Addr::new(127, 0, 0, 2);
    let mut idle = Vec::new();
    for _ in 0..1000 {
        idle.push(connect_from(flooder, app.http_addr).await);
        idle.push(connect_from(flooder, app.https_addr).await);
    }
    // Meanwhile a legitimate client is served on both listeners.
    for _ in 0..5 {
        assert!(legit(&app).await, "plain HTTP stopped answering");
        let t = Instant::now();
        let (status, _) = https_get(app.https_addr, &app.ca_pem, "/healthz").await;
        assert!(status == 200 || status == 503, "{status}");
        assert!(t.elapsed() < Duration::from_secs(3), "HTTPS took {:?}", t.elapsed());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Over the per-client cap, connections were closed at once, and counted.
    let (_, metrics) = https_get_with(app.https_addr, &app.ca_pem, "/metrics", Some(&app.admin_token)).await;
    assert_eq!(refused(&metrics, "http", "per_client"), (1000 - PER_CLIENT) as f64, "{metrics}");
    assert_eq!(refused(&metrics, "https", "per_client"), (1000 - PER_CLIENT) as f64, "{metrics}");
    let mut closed = 0;
    for s in idle.iter_mut().skip(2 * PER_CLIENT) {
        if closed_within(s, Duration::from_millis(20)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, 2 * (1000 - PER_CLIENT), "the refused ones were not closed");
    drop(idle);
    app.token.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_and_idle_connections_are_timed_out() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path(), QUICK).await;
    // Idle connections under the cap: admitted, then timed out (no TLS handshake within 1 s, no
    // request within 1 s).
    let flooder = Ipv4Addr::new(127, 0, 0, 2);
    let mut idle = Vec::new();
    for _ in 0..PER_CLIENT / 2 {
        idle.push(connect_from(flooder, app.http_addr).await);
        idle.push(connect_from(flooder, app.https_addr).await);
    }
    // A slow-header client: one byte of its request head every 300 ms.
    let mut slow = connect_from(Ipv4Addr::new(127, 0, 0, 3), app.http_addr).await;
    let started = Instant::now();
    let trickle = tokio::spawn(async move {
        for b in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: yes" {
            if slow.write_all(&[*b]).await.is_err() {
                return (true, started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let closed = closed_within(&mut slow, Duration::from_secs(3)).await;
        (closed, started.elapsed())
    });
    assert!(legit(&app).await, "plain HTTP stopped answering");
    let (closed, after) = trickle.await.unwrap();
    assert!(closed && after < Duration::from_secs(8), "the slow-header client was kept for {after:?}");
    let mut open = 0;
    for s in idle.iter_mut() {
        if !closed_within(s, Duration::from_secs(4)).await {
            open += 1;
        }
    }
    assert_eq!(open, 0, "idle connections left open");
    let (_, metrics) = https_get_with(app.https_addr, &app.ca_pem, "/metrics", Some(&app.admin_token)).await;
    assert_eq!(refused(&metrics, "http", "per_client"), 0.0, "under the cap nothing is refused: {metrics}");
    app.token.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_total_cap_refuses_at_once_and_frees_up_when_idle_connections_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path(), BRIEF).await;
    // Many clients, each under its own cap, fill the listener.
    let mut held = Vec::new();
    for i in 0..TOTAL {
        held.push(connect_from(Ipv4Addr::new(127, 0, 1, 1 + (i / PER_CLIENT) as u8), app.http_addr).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut extra = connect_from(Ipv4Addr::new(127, 0, 2, 1), app.http_addr).await;
    assert!(closed_within(&mut extra, Duration::from_millis(500)).await, "over the total cap: closed at once");
    assert!(!legit(&app).await, "the cap is total");
    // The idle timeout frees the places; then everyone is served again.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let deadline = Instant::now() + Duration::from_secs(4);
    while !legit(&app).await {
        assert!(Instant::now() < deadline, "still refused after the idle timeout");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, metrics) = https_get_with(app.https_addr, &app.ca_pem, "/metrics", Some(&app.admin_token)).await;
    assert!(refused(&metrics, "http", "total") >= 2.0, "{metrics}");
    app.token.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_longer_than_the_idle_timeout_is_not_cut() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path(), QUICK).await;
    std::fs::create_dir_all(dir.path().join("boot")).unwrap();
    let size = 48usize << 20;
    std::fs::write(dir.path().join("boot/big.img"), vec![7u8; size]).unwrap();
    let mut s = TcpStream::connect(app.http_addr).await.unwrap();
    s.write_all(b"GET /boot/files/big.img HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    // A slow reader: 1 MiB every 150 ms, about 7 s in all (the idle timeout is 2 s).
    let (mut got, mut buf, started) = (0usize, vec![0u8; 1 << 20], Instant::now());
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got += n;
        if got > size {
            break;
        }
        tokio::time::sleep(Duration::from_millis(150 * n as u64 / (1 << 20) as u64)).await;
    }
    assert!(got > size, "cut after {got} of {size} bytes (and its head)");
    assert!(started.elapsed() > Duration::from_secs(3), "the test did not outlast the idle timeout");
    app.token.cancel();
}
