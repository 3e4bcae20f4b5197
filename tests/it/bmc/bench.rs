//! The BMC benchmark (`bench/bmc.sh` runs it with 200 BMCs; a plain test run makes it a quick
//! check with 20 BMCs and one round): power actions on
//! many fake Redfish BMCs (tests/bmc_fake, HTTPS, sessions, a fixed latency per request) through
//! the power service with its caps on: actions per second and the latency p50/p99 of one action,
//! and the most sessions the BMCs saw open at once (never above the cap, one per BMC).
//!
//!   BMCS=200 CAP=16 ROUNDS=3 LATENCY_MS=20 cargo test --release --test it bmc::bench:: -- --nocapture

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bmc_fake::{Gauge, Mode, PASSWORD, USER};
use rackboot::bmc::power::Caller;
use rackboot::bmc::{Bmc, Power, PowerAction, Protocol, TlsPolicy};
use rackboot::cmdb::{Cmdb, NewMachine};
use rackboot::config::BmcConfig;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread")]
async fn power_actions_on_many_bmcs() {
    let (n, cap, rounds, latency) = (env("BMCS", 20), env("CAP", 8) as usize, env("ROUNDS", 1), env("LATENCY_MS", 20));
    let dir = tempfile::tempdir().unwrap();
    let cmdb = Cmdb::open(&dir.path().join("cmdb.redb"), 512).unwrap();
    let sealer = Arc::new(rackboot::secrets::Sealer::from_key(&[1u8; 32]));
    let cfg = BmcConfig { max_concurrent: cap, poll_interval: Duration::from_millis(100), ..BmcConfig::default() };
    let power = Arc::new(Power::new(cfg, cmdb.clone(), sealer, String::new()));
    let global = Arc::new(Gauge::default());
    let cert = crate::bmc_fake::cert();
    let (mut ids, mut fakes) = (Vec::new(), Vec::new());
    for i in 0..n {
        let f = crate::bmc_fake::start(Mode::Good, global.clone(), Duration::from_millis(latency), &cert).await;
        let mac = format!("52:54:00:e0:{:02x}:{:02x}", i / 256, i % 256).parse().unwrap();
        let m = cmdb.create_machine(NewMachine { macs: vec![mac], ..Default::default() }).await.unwrap();
        let b = Bmc {
            machine_id: m.id,
            address: format!("127.0.0.1:{}", f.port),
            protocol: Protocol::Redfish,
            username: USER.into(),
            password_sealed: power.seal(m.id, PASSWORD).unwrap(),
            tls: TlsPolicy::Fingerprint { sha256: f.fingerprint.clone() },
            system_id: None,
            boot_mode: None,
            power: None,
            updated_at: 0,
            firmware: None,
            inband: None,
            boot_via: Default::default(),
        };
        cmdb.put_bmc(b, false).await.unwrap();
        ids.push(m.id);
        fakes.push(f);
    }
    println!("bmc bench: {n} BMCs, cap {cap}, {latency} ms per BMC request, {rounds} rounds of on/status/cycle/off");
    for action in [PowerAction::On, PowerAction::Status, PowerAction::Cycle, PowerAction::Off] {
        let mut lat = Vec::new();
        let t = Instant::now();
        for _ in 0..rounds {
            let mut set = tokio::task::JoinSet::new();
            for &id in &ids {
                let p = power.clone();
                set.spawn(async move {
                    let t = Instant::now();
                    p.act(id, action, false, Caller::Operator).await.map(|_| t.elapsed())
                });
            }
            while let Some(r) = set.join_next().await {
                lat.push(r.unwrap().unwrap());
            }
        }
        let secs = t.elapsed().as_secs_f64();
        lat.sort();
        let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)].as_millis();
        println!(
            "  {:<7} {:>5} actions in {secs:6.2} s: {:7.1}/s  p50 {:>5} ms  p99 {:>5} ms  (each waits its turn under the cap)",
            action.as_str(),
            lat.len(),
            lat.len() as f64 / secs,
            pct(0.5),
            pct(0.99)
        );
    }
    let max = global.max.load(Ordering::SeqCst);
    let per_bmc = fakes.iter().map(|f| f.sessions.max.load(Ordering::SeqCst)).max().unwrap();
    println!("  most sessions open at once: {max} over all BMCs (cap {cap}), {per_bmc} on one BMC");
    assert!(max <= cap && per_bmc == 1);
}
