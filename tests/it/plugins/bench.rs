//! Plugin benchmark (run only with RACKBOOT_BENCH=1, since CI runs every test in a debug build;
//! a benchmark prints, it never fails on a figure):
//! upload-to-available time of a 100 MB signed bundle, and delivering a 10 MB one to 100 agents
//! at once (each agent holds its bundle in memory, as the real one does: 100 x 100 MB would be
//! 10 GB here).
//!
//!   RACKBOOT_BENCH=1 cargo test --release --test it plugins::bench:: -- --nocapture

use std::time::{Duration, Instant};

use crate::common::appliance::Appliance;
use crate::kit::*;
use hyper::Method;
use rackboot_agent::client::Client;
use rackboot_agent::wire::{AgentMode, EnrollRequest, EnrollResponse};
use serde_json::json;

const MB: usize = 1 << 20;

/// Incompressible bytes (xorshift), fast to make.
fn noise(n: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..n / 8)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .collect()
}

/// A bundle of `size` incompressible bytes (stored, not compressed) besides the usual programs.
fn big_bundle(name: &str, size: usize) -> Vec<u8> {
    let firmware = noise(size);
    let m = manifest(name, "1.0.0", "rackboot-lab");
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none()));
    let files: [(&str, u32, &[u8]); 4] = [
        ("manifest.toml", 0o644, m.as_bytes()),
        ("bin/check", 0o755, b"x"),
        ("bin/apply", 0o755, b"x"),
        ("fw.bin", 0o644, &firmware),
    ];
    for (path, mode, data) in files {
        b.append(&header(path, F, mode, data.len() as u64), data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_100_mb_and_deliver_to_100_agents() {
    if std::env::var_os("RACKBOOT_BENCH").is_none() {
        eprintln!(
            "SKIPPED: a benchmark (RACKBOOT_BENCH=1 cargo test --release --test it plugins::bench:: -- --nocapture)"
        );
        return;
    }
    if !have_minisign() {
        eprintln!("SKIPPED: minisign is not installed (tools/setup.sh installs it)");
        return;
    }
    let a = Appliance::start("[plugins]\nmax_bundle_bytes = 209715200\n").await;
    let keys = tempfile::tempdir().unwrap();
    let (public, secret) = keypair(keys.path(), "lab");
    let text = std::fs::read_to_string(public).unwrap();
    a.api.ok(Method::POST, "/plugin-keys", Some(json!({"vendor": "rackboot-lab", "public_key": text}))).await.unwrap();
    let firmware = noise(100 * MB);
    let m = manifest("big", "1.0.0", "rackboot-lab");
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none()));
    for (name, mode, data) in [
        ("manifest.toml", 0o644, m.as_bytes()),
        ("bin/check", 0o755, b"x"),
        ("bin/apply", 0o755, b"x"),
        ("fw.bin", 0o644, &firmware[..]),
    ] {
        b.append(&header(name, F, mode, data.len() as u64), data).unwrap();
    }
    let bundle = b.into_inner().unwrap().finish().unwrap();
    let sig = sign(keys.path(), &secret, &bundle);
    let start = Instant::now();
    let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
    let (status, v) = a.api.post_form("/plugins", &parts).await.unwrap();
    assert_eq!(status, 201, "{v}");
    let uploaded = start.elapsed();
    let shown = a.get("/plugins/big").await;
    assert_eq!(shown["active"], "1.0.0");
    let available = start.elapsed();
    println!(
        "plugins: {:.1} MB bundle uploaded, verified, stored in {:.2} s; available (listed, active) after {:.2} s",
        bundle.len() as f64 / 1e6,
        uploaded.as_secs_f64(),
        available.as_secs_f64()
    );

    // 100 agents (enrolled with boot nonces) fetch a 10 MB bundle at once over HTTPS.
    let bundle = big_bundle("fw", 10 * MB);
    let sig = sign(keys.path(), &secret, &bundle);
    let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
    let (status, v) = a.api.post_form("/plugins", &parts).await.unwrap();
    assert_eq!(status, 201, "{v}");
    let sha = v["plugin"]["sha256"].as_str().unwrap().to_string();
    let cmdb = a.app.as_ref().unwrap().cmdb.clone();
    let mut clients = Vec::new();
    for i in 0..100u32 {
        let mac = format!("52:54:00:c0:{:02x}:{:02x}", i >> 8, i & 0xff);
        let nonce = cmdb.issue_boot_nonce(mac.parse().unwrap(), "127.0.0.1".into(), 600).await.unwrap();
        let mut c = Client::new(&a.url(), &a.trust()).unwrap();
        let req = EnrollRequest {
            macs: vec![mac.clone()],
            boot_mac: Some(mac),
            mode: AgentMode::Bootos,
            nonce: Some(nonce),
            ..Default::default()
        };
        let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(30)).await.unwrap();
        let e: EnrollResponse = r.json().unwrap();
        c.credential = Some(e.credential);
        clients.push(c);
    }
    let start = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for mut c in clients {
        let path = format!("/agent/v1/plugins/{sha}");
        set.spawn(async move {
            let t = Instant::now();
            let r = c.call::<()>(Method::GET, &path, None, Duration::from_secs(600)).await.unwrap();
            assert_eq!(r.status, 200);
            (r.body.len(), t.elapsed())
        });
    }
    let mut times = Vec::new();
    let mut bytes = 0usize;
    while let Some(r) = set.join_next().await {
        let (n, t) = r.unwrap();
        assert_eq!(n, bundle.len());
        bytes += n;
        times.push(t);
    }
    let wall = start.elapsed();
    times.sort();
    println!(
        "plugins: {:.1} MB delivered to 100 agents at once in {:.2} s ({:.0} MB/s in total); per agent median {:.2} s, slowest {:.2} s",
        bundle.len() as f64 / 1e6,
        wall.as_secs_f64(),
        bytes as f64 / 1e6 / wall.as_secs_f64(),
        times[50].as_secs_f64(),
        times[99].as_secs_f64()
    );
}
