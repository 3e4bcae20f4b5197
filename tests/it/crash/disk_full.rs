//! The data disk fills up under the appliance (a small tmpfs as its data dir): every write is
//! refused with a clear 503 naming the data dir, DHCP withholds its ACK, /healthz says why,
//! reads keep working; when space comes back, writes resume within seconds, no restart, and
//! nothing acknowledged before was lost. Needs root (mount); skips without it.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::{kind, msg, request_for};
use dhcproto::v4::MessageType;
use dhcproto::{Decodable, Decoder, Encodable};
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::config::Config;
use serde_json::json;
use tokio::net::UdpSocket;

/// A tmpfs mounted for the test, unmounted however the test ends.
struct Tmpfs(PathBuf);

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
    let ok = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir)
        .status()
        .is_ok_and(|s| s.success());
    ok.then(|| Tmpfs(dir.to_path_buf()))
}

/// Writes `path` until the file system says it is full.
fn fill(path: &Path) -> u64 {
    let mut f = std::fs::File::create(path).unwrap();
    let chunk = vec![0xa5u8; 256 << 10];
    let mut n = 0u64;
    while f.write_all(&chunk).is_ok() {
        n += chunk.len() as u64;
    }
    let _ = f.sync_all();
    n
}

async fn dhcp_exchange(
    relay: &UdpSocket,
    server: SocketAddr,
    m: &dhcproto::v4::Message,
) -> Option<dhcproto::v4::Message> {
    relay.send_to(&m.to_vec().unwrap(), server).await.unwrap();
    let mut buf = [0u8; 1500];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    loop {
        let (n, _) = tokio::time::timeout_at(deadline, relay.recv_from(&mut buf)).await.ok()?.unwrap();
        let reply = dhcproto::v4::Message::decode(&mut Decoder::new(&buf[..n])).unwrap();
        if reply.xid() == m.xid() {
            return Some(reply);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_clearly_and_they_resume_when_space_returns() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: needs root to mount a tmpfs");
        return;
    }
    // Named for tools/cleanup.sh, which unmounts what a killed run of this test left.
    let base =
        tempfile::Builder::new().prefix(&format!("rackboot-mnt.{}.", std::process::id())).tempdir_in("/tmp").unwrap();
    let Some(_mounted) = mount(base.path(), "48m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here");
        return;
    };
    let data = base.path().join("data");
    let relay = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let text = crate::common::config_text(&data, relay.local_addr().unwrap().port(), "");
    let app = rackboot::app::start(Config::parse(&text).unwrap()).await.unwrap();
    let api =
        ApiClient::new(&format!("https://{}", app.https_addr), app.admin_token.clone(), app.ca_pem.as_bytes()).unwrap();
    let dhcp = SocketAddr::from((Ipv4Addr::LOCALHOST, app.dhcp_addr.unwrap().port()));
    let health = || async { crate::common::https_get_with(app.https_addr, &app.ca_pem, "/healthz", None).await };

    // Before: machines stored and acknowledged.
    let mut acked = Vec::new();
    for i in 0..20u32 {
        let mac = format!("52:54:00:d0:00:{i:02x}");
        api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
        acked.push(mac);
    }

    // The disk fills up (another process, a log, anything).
    let filler = base.path().join("filler");
    let filled = fill(&filler);
    assert!(filled > 0);
    let started = Instant::now();
    let mut refusal = None;
    for i in 0..20_000u32 {
        let mac = format!("52:54:01:{:02x}:{:02x}:{:02x}", i >> 16, (i >> 8) & 0xff, i & 0xff);
        let body =
            json!({"macs": [mac], "tags": [format!("{:0>60}", i), "filling-the-disk-with-tags-until-it-gives-way"]});
        let (status, body) = api.call(Method::POST, "/machines", Some(body)).await.unwrap();
        match status {
            201 => acked.push(mac),
            503 => {
                refusal = Some(body);
                break;
            }
            other => panic!("a write on a full disk answered {other}: {body}"),
        }
    }
    let refusal = refusal.expect("the full disk was noticed");
    let detail = refusal["detail"].as_str().unwrap();
    assert!(detail.contains(&data.display().to_string()) && detail.contains("cannot be stored"), "{refusal}");
    println!("disk full after {} acknowledged writes, {:?}: {detail}", acked.len(), started.elapsed());

    // Every later write is refused at once; reads go on; /healthz says why.
    let (status, _) = api.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:d1:00:01"]}))).await.unwrap();
    assert_eq!(status, 503);
    let list = api.ok(Method::GET, "/machines?limit=10000", None).await.unwrap();
    assert_eq!(list["total"].as_u64().unwrap() as usize, acked.len(), "reads work and see every acknowledged write");
    let (status, text) = health().await;
    assert!(status == 503 && text.contains("changes cannot be stored"), "{status} {text}");
    // DHCP offers (no write needed) but does not ACK a lease it could not store.
    let mac = [0x52, 0x54, 0, 0xd2, 0, 1];
    let offer = dhcp_exchange(&relay, dhcp, &msg(MessageType::Discover, mac, 77)).await.expect("an offer");
    assert_eq!(kind(&offer), MessageType::Offer);
    assert!(dhcp_exchange(&relay, dhcp, &request_for(&offer, mac, 78)).await.is_none(), "no ACK for an unstored lease");

    // Space comes back: writes resume by themselves within seconds.
    std::fs::remove_file(&filler).unwrap();
    let back = Instant::now();
    loop {
        let (status, body) =
            api.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:d1:00:02"]}))).await.unwrap();
        if status == 201 {
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(back.elapsed() < Duration::from_secs(15), "writes did not resume: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("writes resumed {:?} after space came back", back.elapsed());
    let (_, text) = health().await;
    assert!(!text.contains("cannot be stored"), "{text}");
    let ack = dhcp_exchange(&relay, dhcp, &request_for(&offer, mac, 79)).await.expect("an ACK now");
    assert_eq!(kind(&ack), MessageType::Ack);
    for mac in &acked {
        api.ok(Method::GET, &format!("/machines/{mac}"), None).await.unwrap_or_else(|e| panic!("{mac} lost: {e}"));
    }
    app.wait(async {}).await.unwrap();
}
