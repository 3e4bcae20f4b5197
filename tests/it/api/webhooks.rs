//! Webhooks against a real receiver (examples/webhook-receiver.py, the book's receiver, over
//! HTTPS with its own CA) across its own restarts and the appliance's kill -9: every
//! `machine.state` event arrives once or more, first arrivals in order, none missing. A dead
//! receiver's subscription is disabled with an event saying so; a pinned fingerprint delivers
//! only to its certificate; forged and stale signatures are refused by the documented check.
//! On loopback, no root needed; needs python3.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::common::free_port;
use crate::common::process::start;

/// The receiver as a process; killed (SIGKILL) when dropped.
struct Receiver(Child);

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn receiver(dir: &Path, port: u16) -> Receiver {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/webhook-receiver.py");
    let child = Command::new("python3")
        .arg(script)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--secret-file")
        .arg(dir.join("hook.secret"))
        .arg("--cert")
        .arg(dir.join("cert.pem"))
        .arg("--key")
        .arg(dir.join("key.pem"))
        .arg("--out")
        .arg(dir.join("deliveries.jsonl"))
        .stdout(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the receiver did not come up");
        std::thread::sleep(Duration::from_millis(50));
    }
    Receiver(child)
}

/// The receiver's accepted deliveries of subscription `hook`: (sequence number, first time).
fn received(dir: &Path, hook: u64) -> Vec<(u64, bool)> {
    let text = std::fs::read_to_string(dir.join("deliveries.jsonl")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|d| d["delivery"].as_str().unwrap().starts_with(&format!("{hook}.")))
        .map(|d| (d["event"]["seq"].as_u64().unwrap(), d["first"].as_bool().unwrap()))
        .collect()
}

/// Every `machine.state` event after `after`, by sequence number.
async fn state_changes(api: &ApiClient, after: u64) -> Vec<u64> {
    let page =
        api.ok(Method::GET, &format!("/events?kind=machine.state&after={after}&limit=1000"), None).await.unwrap();
    page["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

async fn lifecycle(api: &ApiClient, ids: &[u64], action: &str) {
    for id in ids {
        api.ok(Method::POST, &format!("/machines/{id}/{action}"), Some(json!({}))).await.unwrap();
    }
}

/// POSTs `body` to the receiver with `signature` as curl does: the status.
fn post_to_receiver(port: u16, ca: &Path, signature: &str, delivery: &str, body: &str) -> u16 {
    let out = Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(ca)
        .args(["-H", "content-type: application/json", "-H", &format!("rackboot-signature: {signature}")])
        .args(["-H", &format!("rackboot-delivery: {delivery}"), "--data-binary", body])
        .arg(format!("https://127.0.0.1:{port}/hook"))
        .output()
        .expect("curl runs");
    if !out.status.success() {
        eprintln!("curl: {}", String::from_utf8_lossy(&out.stderr));
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0)
}

fn sign(secret: &str, t: u64, body: &str) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    m.update(format!("{t}.{body}").as_bytes());
    let mac: String = m.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("t={t},v1={mac}")
}

/// Polls `f` every 200 ms until it is true or `limit` passes.
async fn until(limit: Duration, what: &str, mut f: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_deliver_every_state_change_in_order_across_restarts_and_kill_9() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIP: python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d: PathBuf = dir.path().to_path_buf();
    let data = d.join("data");
    let (ca, cert, key, der) = crate::common::loopback_pki("webhook receiver test CA");
    std::fs::write(d.join("ca.pem"), &ca).unwrap();
    std::fs::write(d.join("cert.pem"), &cert).unwrap();
    std::fs::write(d.join("key.pem"), &key).unwrap();
    let relay = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    // Long enough that the receiver under test outlives the appliance's restart, short enough
    // that the dead one is stopped within the test.
    let extra = "[webhooks]\nretry_max_secs = 1\ndisable_after_secs = 30\n";
    let text = crate::common::config_text(&data, relay.local_addr().unwrap().port(), extra);
    let config = d.join("rackboot.toml");
    std::fs::write(&config, text).unwrap();
    let (app, api, _) = start(&config, &data).await;

    // Refused: plain HTTP off loopback, credentials in the URL, an unknown kind, a CA that is none.
    for (body, says) in [
        (json!({"url": "http://203.0.113.5/h"}), "allow_http"),
        (json!({"url": "https://u:p@127.0.0.1/h"}), "user or password"),
        (json!({"url": "https://127.0.0.1/h", "filter": {"kinds": ["no.such"]}}), "not an event kind"),
        (json!({"url": "https://127.0.0.1/h", "tls": {"check": "ca", "pem": "junk"}}), "tls.pem"),
        (json!({"url": "https://127.0.0.1/h", "secret": "short"}), "secret"),
        (json!({"url": "https://127.0.0.1/h", "filter": {"pools": ["Team A"]}}), "DNS label"),
    ] {
        let (status, answer) = api.call(Method::POST, "/webhooks", Some(body.clone())).await.unwrap();
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.to_string().contains(says), "{body}: {answer}");
    }
    assert_eq!(api.ok(Method::GET, "/webhooks", None).await.unwrap()["webhooks"], json!([]), "nothing was left");

    let port = free_port();
    let dead_port = loop {
        let p = free_port();
        if p != port {
            break p;
        }
    };
    let url = format!("https://127.0.0.1:{port}/hook");
    let state_only = json!({"kinds": ["machine.state"]});
    let made = api
        .ok(
            Method::POST,
            "/webhooks",
            Some(json!({"url": url, "filter": state_only, "tls": {"check": "ca", "pem": ca}})),
        )
        .await
        .unwrap();
    let (hook, secret) = (made["webhook"]["id"].as_u64().unwrap(), made["secret"].as_str().unwrap().to_string());
    let after = made["webhook"]["status"]["delivered_seq"].as_u64().unwrap();
    assert!(secret.len() >= 32, "a made secret is long: {secret}");
    std::fs::write(d.join("hook.secret"), &secret).unwrap();
    // A receiver nobody answers at, and one whose certificate is not the pinned one.
    let dead = api
        .ok(
            Method::POST,
            "/webhooks",
            Some(json!({"url": format!("http://127.0.0.1:{dead_port}/"), "filter": state_only})),
        )
        .await
        .unwrap()["webhook"]["id"]
        .as_u64()
        .unwrap();
    let pin = json!({"check": "fingerprint", "sha256": format!("sha256:{}", "0".repeat(64))});
    let pinned =
        api.ok(Method::POST, "/webhooks", Some(json!({"url": url, "filter": state_only, "tls": pin}))).await.unwrap()
            ["webhook"]["id"]
            .as_u64()
            .unwrap();
    // And one that pins the receiver's certificate itself.
    let sha: String = <Sha256 as sha2::Digest>::digest(&der).iter().map(|b| format!("{b:02x}")).collect();
    let pin = json!({"check": "fingerprint", "sha256": format!("sha256:{sha}")});
    let by_print = api
        .ok(Method::POST, "/webhooks", Some(json!({"url": url, "filter": state_only, "tls": pin, "secret": secret})))
        .await
        .unwrap()["webhook"]["id"]
        .as_u64()
        .unwrap();
    // And one for one resource pool's machines only (the receiver knows one secret).
    let pool_z = json!({"kinds": ["machine.state"], "pools": ["team-z"]});
    let by_pool = api
        .ok(Method::POST, "/webhooks", Some(json!({"url": url, "filter": pool_z, "tls": pin, "secret": secret})))
        .await
        .unwrap()["webhook"]["id"]
        .as_u64()
        .unwrap();
    let listed = api.ok(Method::GET, "/webhooks", None).await.unwrap().to_string();
    assert!(!listed.contains(&secret), "the secret is answered once, never listed");

    let mut rx = receiver(&d, port);
    let mut ids = Vec::new();
    for n in 0..5u8 {
        let m = api
            .ok(Method::POST, "/machines", Some(json!({"macs": [format!("52:54:0b:00:00:{n:02x}")]})))
            .await
            .unwrap();
        ids.push(m["id"].as_u64().unwrap());
    }
    api.ok(Method::PUT, &format!("/machines/{}/pool", ids[0]), Some(json!({"pool": "team-z"}))).await.unwrap();
    // 1. The receiver is up.
    lifecycle(&api, &ids, "retire").await;
    until(Duration::from_secs(20), "the first deliveries", async || received(&d, hook).len() >= 5).await;
    // 2. The receiver is down: deliveries fail and say so.
    drop(rx);
    lifecycle(&api, &ids, "unretire").await;
    until(Duration::from_secs(20), "a failure in the status", async || {
        let w = api.ok(Method::GET, &format!("/webhooks/{hook}"), None).await.unwrap();
        w["status"]["last_error"].is_string() && w["status"]["failing_since_ms"].is_u64()
    })
    .await;
    // 3. The appliance is killed mid-retry and comes back.
    drop(app);
    let (app, api, _) = start(&config, &data).await;
    lifecycle(&api, &ids, "retire").await;
    // 4. The receiver comes back: everything arrives.
    rx = receiver(&d, port);
    let want = state_changes(&api, after).await;
    assert_eq!(want.len(), 15, "five machines changed state three times: {want:?}");
    until(Duration::from_secs(30), "every state change", async || {
        [hook, by_print].iter().all(|h| received(&d, *h).iter().filter(|(_, first)| *first).count() >= want.len())
    })
    .await;
    let got = received(&d, hook);
    let firsts: Vec<u64> = got.iter().filter(|(_, first)| *first).map(|(seq, _)| *seq).collect();
    println!("{} deliveries, {} of them repeats; first arrivals {firsts:?}", got.len(), got.len() - firsts.len());
    assert_eq!(firsts, want, "every machine.state event, in order, none missing");
    assert!(got.iter().all(|(seq, _)| want.contains(seq)), "nothing but machine.state events: {got:?}");
    let by_print_firsts: Vec<u64> = received(&d, by_print).iter().filter(|(_, f)| *f).map(|(s, _)| *s).collect();
    assert_eq!(by_print_firsts, want, "the subscription pinning the certificate got them all too");
    // The pool's subscription: the state changes of team-z's one machine, and nothing else.
    let z = api.ok(Method::GET, &format!("/events?kind=machine.state&machine={}", ids[0]), None).await.unwrap();
    let want_z: Vec<u64> = z["events"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(want_z.len(), 3, "{z}");
    until(Duration::from_secs(30), "team-z's state changes", async || {
        received(&d, by_pool).iter().filter(|(_, first)| *first).count() >= want_z.len()
    })
    .await;
    let pool_firsts: Vec<u64> = received(&d, by_pool).iter().filter(|(_, f)| *f).map(|(s, _)| *s).collect();
    assert_eq!(pool_firsts, want_z, "only the pool's machine's events");
    // rackboot's own check agrees with the receiver's on a delivery rackboot signed.
    let first: Value =
        serde_json::from_str(std::fs::read_to_string(d.join("deliveries.jsonl")).unwrap().lines().next().unwrap())
            .unwrap();
    let (header, raw) = (first["signature"].as_str().unwrap(), first["body"].as_str().unwrap());
    let t: u64 = header.split(',').next().unwrap().trim_start_matches("t=").parse().unwrap();
    assert!(rackboot::webhooks::sign::verify(secret.as_bytes(), header, raw.as_bytes(), t).is_ok(), "{header}");
    assert!(rackboot::webhooks::sign::verify(b"another-secret!!", header, raw.as_bytes(), t).is_err());

    let w = api.ok(Method::GET, &format!("/webhooks/{hook}"), None).await.unwrap();
    assert!(w["enabled"].as_bool().unwrap() && w["status"]["last_error"].is_null(), "{w}");
    assert_eq!(w["status"]["last_status"], 204, "{w}");
    assert!(w["status"]["delivered_seq"].as_u64().unwrap() >= *want.last().unwrap(), "{w}");

    // The pinned fingerprint did not match: nothing delivered, and the status says why.
    let p = api.ok(Method::GET, &format!("/webhooks/{pinned}"), None).await.unwrap();
    assert!(p["status"]["last_error"].as_str().unwrap_or("").contains("pinned"), "{p}");
    assert!(received(&d, pinned).is_empty());

    // The dead receiver was disabled after 30 s of failures, with an event saying so.
    until(Duration::from_secs(60), "the dead receiver disabled", async || {
        let w = api.ok(Method::GET, &format!("/webhooks/{dead}"), None).await.unwrap();
        !w["enabled"].as_bool().unwrap()
    })
    .await;
    let w = api.ok(Method::GET, &format!("/webhooks/{dead}"), None).await.unwrap();
    assert!(w["status"]["disabled_reason"].as_str().unwrap().contains("failed"), "{w}");
    let off = api.ok(Method::GET, "/events?kind=webhook.disabled", None).await.unwrap();
    let said = off["events"].as_array().unwrap().iter().any(|e| e["detail"]["webhook"] == dead);
    assert!(said, "a webhook.disabled event names it: {off}");
    // Enabled again, its failures are cleared; deleted, it is gone.
    let w = api.ok(Method::PATCH, &format!("/webhooks/{dead}"), Some(json!({"enabled": true}))).await.unwrap();
    assert!(w["enabled"].as_bool().unwrap() && w["status"]["disabled_reason"].is_null(), "{w}");
    let (status, _) = api.call(Method::DELETE, &format!("/webhooks/{dead}"), None).await.unwrap();
    assert_eq!(status, 204);
    let (status, _) = api.call(Method::GET, &format!("/webhooks/{dead}"), None).await.unwrap();
    assert_eq!(status, 404);

    // The documented check refuses forged and stale signatures.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let body = r#"{"seq":999999,"machine_id":1,"at_ms":0,"kind":"machine.state","detail":{}}"#;
    let ca_file = d.join("ca.pem");
    let forged = sign("not-the-secret-at-all", now, body);
    assert_eq!(post_to_receiver(port, &ca_file, &forged, "x.1", body), 401, "a forged signature");
    assert_eq!(post_to_receiver(port, &ca_file, &sign(&secret, now - 3600, body), "x.2", body), 401, "a stale one");
    let tampered = body.replace("999999", "999998");
    assert_eq!(post_to_receiver(port, &ca_file, &sign(&secret, now, body), "x.3", &tampered), 401, "a changed body");
    assert_eq!(post_to_receiver(port, &ca_file, &sign(&secret, now, body), "x.4", body), 204, "the real thing");
    drop(rx);
    drop(app);
}
