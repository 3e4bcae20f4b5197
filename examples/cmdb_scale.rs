//! Benchmark: the CMDB at scale (bench/cmdb.sh runs it in release mode, twice: small and large).
//!
//!   cmdb_scale fill DIR MACHINES EVENTS   registers MACHINES machines (1 in 7 installed, tagged)
//!                                         with EVENTS timeline events each, then exits
//!   cmdb_scale measure DIR                starts the whole appliance on DIR in this fresh process
//!                                         and prints the start-up time, RSS, file size and the
//!                                         time of hot-path calls (p50/p99 of 50 rounds)
//!
//! The hot paths are the ones a boot storm or an operator hits: the iPXE script of one machine,
//! one machine by MAC, a filtered list page, a search, one machine's timeline. None may grow
//! with the number of machines; bench/cmdb.sh prints them for 1,000 and 100,000 side by side.

use std::time::Instant;

use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::cmdb::{EventKind, MachinePatch, MachineState, NewMachine, Sighting};
use rackboot::mac::Mac;
use serde_json::json;

fn mac(i: usize) -> Mac {
    Mac::from_u64(0x5254_0200_0000 + i as u64)
}

/// The appliance on `dir`; with `STORE_URL` set (bench/store.sh), its CMDB on that PostgreSQL
/// (in schema `STORE_SCHEMA`).
fn config(dir: &str) -> anyhow::Result<rackboot::config::Config> {
    let store = match std::env::var("STORE_URL") {
        Ok(url) => format!(
            "[store]\nbackend = \"postgres\"\nurl = \"{url}\"\nschema = \"{}\"\n",
            std::env::var("STORE_SCHEMA").unwrap_or_else(|_| "public".into())
        ),
        Err(_) => String::new(),
    };
    rackboot::config::Config::parse(&format!(
        "[server]\ndata_dir = \"{dir}\"\naddress = \"127.0.0.1\"\nmax_unclaimed_machines = 1000000\n[http]\nlisten = \"127.0.0.1:0\"\n[https]\nlisten = \"127.0.0.1:0\"\n[dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n{store}"
    ))
}

async fn fill(dir: &str, count: usize, events: usize) -> anyhow::Result<()> {
    let cmdb = rackboot::cmdb::Cmdb::open(&std::path::Path::new(dir).join("rackboot.redb"), 4096)?;
    let t = Instant::now();
    for chunk in (0..count).collect::<Vec<_>>().chunks(2000) {
        let mut pending = Vec::new();
        for &i in chunk {
            let cmdb = cmdb.clone();
            pending.push(tokio::spawn(async move {
                let new = NewMachine {
                    macs: vec![mac(i)],
                    hostname: Some(format!("n{i:06}")),
                    serial: Some(format!("SN{i:07}")),
                    tags: vec![format!("rack{}", i / 42)],
                    ..Default::default()
                };
                let m = cmdb.create_machine(new).await?;
                if i % 7 == 0 {
                    let patch = MachinePatch { state: Some(MachineState::Installed), ..Default::default() };
                    cmdb.update_machine(m.id, patch).await?;
                }
                let evs = (0..events)
                    .map(|e| (EventKind::DhcpAck, json!({"ip": format!("10.{}.{}.{}", e, (i >> 8) & 0xff, i & 0xff)})))
                    .collect();
                cmdb.record(Sighting { mac: Some(mac(i)), ..Default::default() }, evs);
                anyhow::Ok(())
            }));
        }
        for p in pending {
            p.await??;
        }
    }
    cmdb.flush().await?;
    println!("filled {count} machines with {events} events each in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

async fn measure(dir: &str) -> anyhow::Result<()> {
    let size = std::fs::metadata(std::path::Path::new(dir).join("rackboot.redb")).map_or(0, |m| m.len());
    let t = Instant::now();
    let app = rackboot::app::start(config(dir)?).await?;
    let started = t.elapsed();
    let machines = app.cmdb.count_by_state().values().sum::<usize>();
    println!(
        "machines {machines}; file {:.0} MB (0: on PostgreSQL); start-up {:.2} s; RSS after start {:.0} MB",
        size as f64 / 1e6,
        started.as_secs_f64(),
        rss_mb()
    );
    let api = ApiClient::new(&format!("https://{}", app.https_addr), app.admin_token.clone(), app.ca_pem.as_bytes())?;
    let probe = mac(machines / 2);
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Empty<hyper::body::Bytes>>();
    let script = format!("http://{}/boot/ipxe?mac={probe}", app.http_addr);
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    let api_calls = [
        ("machine by MAC", format!("/machines/{probe}")),
        ("list: state=installed, first 100", "/machines?state=installed&limit=100".to_string()),
        ("list: tag=rack7", "/machines?tag=rack7&limit=100".to_string()),
        ("search: serial", format!("/machines?q=SN{:07}&limit=100", machines / 3)),
        ("one machine's timeline", format!("/machines/{probe}/events?limit=100")),
    ];
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let r = http.get(script.parse()?).await?;
        anyhow::ensure!(r.status() == 200, "boot script: {}", r.status());
        http_body_util::BodyExt::collect(r.into_body()).await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    rows.push(("iPXE script of one machine (HTTP)".into(), times));
    for (label, path) in api_calls {
        let mut times = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            let (status, _) = api.call(Method::GET, &path, None).await?;
            anyhow::ensure!(status == 200, "{path}: {status}");
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        rows.push((label.into(), times));
    }
    for (label, mut t) in rows {
        t.sort_by(|a, b| a.total_cmp(b));
        println!("  {label:<36} p50 {:>7.2} ms  p99 {:>7.2} ms", t[t.len() / 2], t[t.len() * 99 / 100]);
    }
    println!("RSS after the calls {:.0} MB", rss_mb());
    Ok(())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["fill", dir, count, events] => fill(dir, count.parse()?, events.parse()?).await,
        ["measure", dir] => measure(dir).await,
        _ => anyhow::bail!("usage: cmdb_scale fill DIR MACHINES EVENTS | measure DIR"),
    }
}
