//! Load tool for the agent controller (bench/agents.sh runs it): N simulated agents enroll and
//! long-poll one rackboot; then jobs are submitted one at a time through the admin API, each to
//! a random agent, and the time from submission to that agent receiving the job is measured.
//! With --server-pid it also reads rackboot's CPU time and RSS while the agents only idle-poll.
//!
//! agent-load --url https://127.0.0.1:18443 --ca DIR/tls/ca.pem --token-file DIR/admin.token --agents 1000 --jobs 300
//!            [--idle-secs 20] [--server-pid PID]
//!
//! `--url http://127.0.0.1:PORT` (no `--ca`) speaks plain HTTP to an appliance with
//! `http.loopback_api`, for the side-by-side with TLS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::Method;
use rackboot_agent::client::Client;
use rackboot_agent::tls::Trust;
use rackboot_agent::wire::{EnrollResponse, JobResult, JobSpec, Outcome};
use serde_json::json;

struct Args {
    url: String,
    /// `None`: plain HTTP to loopback.
    trust: Option<Trust>,
    token: String,
    agents: usize,
    jobs: usize,
    idle_secs: u64,
    server_pid: Option<u32>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        url: String::new(),
        trust: None,
        token: String::new(),
        agents: 1000,
        jobs: 300,
        idle_secs: 20,
        server_pid: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| anyhow::anyhow!("{k} needs a value"))?;
        match k.as_str() {
            "--url" => a.url = v,
            "--ca" => a.trust = Some(Trust::CaPem(std::fs::read(v)?)),
            "--token-file" => a.token = std::fs::read_to_string(v)?.trim().to_string(),
            "--agents" => a.agents = v.parse()?,
            "--jobs" => a.jobs = v.parse()?,
            "--idle-secs" => a.idle_secs = v.parse()?,
            "--server-pid" => a.server_pid = Some(v.parse()?),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    anyhow::ensure!(!a.url.is_empty() && !a.token.is_empty(), "--url and --token-file are required");
    anyhow::ensure!(a.trust.is_some() || a.url.starts_with("http://"), "an https:// --url needs --ca");
    Ok(a)
}

/// A client for `url`: TLS trusting `trust`, or plain HTTP to loopback.
fn client(url: &str, trust: &Option<Trust>) -> anyhow::Result<Client> {
    match trust {
        Some(t) => Client::new(url, t),
        None => Client::loopback_plain(url),
    }
}

type Received = Arc<Mutex<HashMap<u64, Instant>>>;

/// One simulated agent. It cannot prove a boot (no boot nonce), so it enrolls held for approval
/// and the tool approves it as an operator would, with the admin token.
async fn agent(
    url: String,
    trust: Option<Trust>,
    token: String,
    n: usize,
    received: Received,
    enrolled: Arc<tokio::sync::Semaphore>,
) {
    let mac = format!("02:00:00:{:02x}:{:02x}:{:02x}", (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
    let mut c = client(&url, &trust).expect("url");
    let req = json!({"macs": [mac], "boot_mac": mac, "mode": "bootos"});
    let resp: EnrollResponse = loop {
        match c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(60)).await {
            Ok(r) if r.ok() => break r.json().expect("enroll response"),
            _ => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    };
    if !resp.approved {
        let mut admin = client(&url, &trust).expect("url");
        admin.credential = Some(token);
        let path = format!("/api/v1/machines/{}/approve", resp.machine_id);
        while !matches!(admin.call::<()>(Method::POST, &path, None, Duration::from_secs(60)).await, Ok(r) if r.ok()) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    c.credential = Some(resp.credential);
    enrolled.add_permits(1);
    loop {
        let r = match c.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=25", None, Duration::from_secs(60)).await {
            Ok(r) => r,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        if r.status != 200 {
            continue;
        }
        let at = Instant::now();
        let spec: JobSpec = r.json().expect("job");
        received.lock().unwrap().insert(spec.id, at);
        let result = JobResult {
            attempt: spec.attempt,
            outcome: Outcome::Succeeded,
            exit_code: Some(0),
            duration_ms: 0,
            error: None,
            plugin: None,
        };
        let _ = c
            .call(Method::POST, &format!("/agent/v1/jobs/{}/result", spec.id), Some(&result), Duration::from_secs(30))
            .await;
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let received: Received = Arc::default();
        let enrolled = Arc::new(tokio::sync::Semaphore::new(0));
        let t0 = Instant::now();
        for n in 0..a.agents {
            tokio::spawn(agent(a.url.clone(), a.trust.clone(), a.token.clone(), n, received.clone(), enrolled.clone()));
        }
        let _all = enrolled.acquire_many(a.agents as u32).await?;
        println!("{} agents enrolled in {:.2} s", a.agents, t0.elapsed().as_secs_f64());
        tokio::time::sleep(Duration::from_secs(1)).await; // every agent parked in its poll

        if let Some(pid) = a.server_pid {
            let (cpu0, _) = proc_usage(pid);
            tokio::time::sleep(Duration::from_secs(a.idle_secs)).await;
            let (cpu1, rss) = proc_usage(pid);
            println!(
                "idle polling, {} s: rackboot CPU {:.3} cores ({:.2} s), RSS {:.1} MB",
                a.idle_secs,
                (cpu1 - cpu0) / a.idle_secs as f64,
                cpu1 - cpu0,
                rss as f64 / 1e6
            );
        }

        let mut admin = client(&a.url, &a.trust)?;
        admin.credential = Some(a.token.clone());
        let mut sent: Vec<(u64, Instant)> = Vec::new();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..a.jobs {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let target = seed % a.agents as u64;
            let mac =
                format!("02:00:00:{:02x}:{:02x}:{:02x}", (target >> 16) & 0xff, (target >> 8) & 0xff, target & 0xff);
            let body = json!({"machine": mac, "action": {"kind": "script", "body": "true"}});
            let at = Instant::now();
            let r = admin.call(Method::POST, "/api/v1/jobs", Some(&body), Duration::from_secs(30)).await?;
            anyhow::ensure!(r.ok(), "submit: HTTP {} {}", r.status, r.error_text());
            let v: serde_json::Value = r.json()?;
            sent.push((v["jobs"][0]["id"].as_u64().unwrap_or(0), at));
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while received.lock().unwrap().len() < sent.len() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let got = received.lock().unwrap().clone();
        let mut ms: Vec<f64> = sent
            .iter()
            .filter_map(|(id, at)| got.get(id).map(|r| r.duration_since(*at).as_secs_f64() * 1000.0))
            .collect();
        ms.sort_by(|x, y| x.partial_cmp(y).unwrap());
        anyhow::ensure!(!ms.is_empty(), "no job reached an agent");
        println!(
            "submission -> agent receives the job, {} jobs ({} missing): median {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            ms.len(),
            sent.len() - ms.len(),
            pct(&ms, 0.5),
            pct(&ms, 0.99),
            ms[ms.len() - 1]
        );
        if let Some(pid) = a.server_pid {
            let (_, rss) = proc_usage(pid);
            println!("rackboot RSS after the jobs: {:.1} MB", rss as f64 / 1e6);
        }
        Ok(())
    })
}

/// CPU seconds and RSS of `pid`.
fn proc_usage(pid: u32) -> (f64, u64) {
    let u = rackboot_agent::stats::process_usage(pid);
    (u.cpu_secs, u.rss_bytes)
}
