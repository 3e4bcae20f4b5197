//! Benchmark: listing and filtering 10,000 machines through the REST API (bench/api.sh runs it
//! in release mode). Starts the appliance in-process on loopback with DHCP, TFTP and DNS off,
//! registers the machines, then times each query from request to the response's last byte
//! (the body is not parsed, so the figure is the server's plus loopback transfer).
//!
//!   cargo run --release --example api_list [MACHINES] [ROUNDS]

use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::cmdb::{MachinePatch, MachineState, NewMachine};
use rackboot::mac::Mac;

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10_000);
    let rounds: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(20);
    let dir = tempfile::tempdir()?;
    let cfg = rackboot::config::Config::parse(&format!(
        "[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n[http]\nlisten = \"127.0.0.1:0\"\n[https]\nlisten = \"127.0.0.1:0\"\n[dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n",
        dir.path().display()
    ))?;
    let app = rackboot::app::start(cfg).await?;
    let api = ApiClient::new(&format!("https://{}", app.https_addr), app.admin_token.clone(), app.ca_pem.as_bytes())?;

    let t = Instant::now();
    let mut pending = Vec::new();
    for i in 0..count {
        let cmdb = app.cmdb.clone();
        pending.push(tokio::spawn(async move {
            let mac = Mac::from_u64(0x5254_0000_0000 + i as u64);
            let new = NewMachine {
                macs: vec![mac],
                hostname: Some(format!("r{:02}-u{:02}", i / 42, i % 42)),
                serial: Some(format!("SN{i:07}")),
                tags: vec![format!("rack{}", i / 42), if i % 10 == 0 { "gpu".into() } else { "cpu".into() }],
                ..Default::default()
            };
            let m = cmdb.create_machine(new).await?;
            if i % 7 == 0 {
                let patch = MachinePatch { state: Some(MachineState::Installed), ..Default::default() };
                cmdb.update_machine(m.id, patch).await?;
            }
            anyhow::Ok(())
        }));
    }
    for p in pending {
        p.await??;
    }
    println!("registered {count} machines in {:.1} s", t.elapsed().as_secs_f64());

    let queries = [
        ("first page (limit 100)", "/machines?limit=100".to_string()),
        ("every machine (limit 10000)", "/machines?limit=10000".to_string()),
        ("state=installed (1 in 7)", "/machines?state=installed&limit=10000".to_string()),
        ("tag=gpu (1 in 10)", "/machines?tag=gpu&limit=10000".to_string()),
        ("tag=rack7 (42)", "/machines?tag=rack7".to_string()),
        ("q=SN00099 (free text, 10)", "/machines?q=SN00099".to_string()),
        ("q=52:54:00:00:12:34 (one MAC)", "/machines?q=52:54:00:00:12:34".to_string()),
        ("q=nomatch (scans all)", "/machines?q=nomatch".to_string()),
    ];
    println!("{:<34} {:>9} {:>9} {:>9} {:>10}", "query", "p50 ms", "p90 ms", "max ms", "bytes");
    for (name, path) in queries {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..rounds {
            let t = Instant::now();
            let resp = api.send(Method::GET, &path, &[], String::new()).await?;
            anyhow::ensure!(resp.status().is_success(), "{path}: {}", resp.status());
            bytes = resp.into_body().collect().await?.to_bytes().len();
            times.push(t.elapsed());
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{name:<34} {:>9.1} {:>9.1} {:>9.1} {bytes:>10}",
            ms(times[times.len() / 2]),
            ms(times[times.len() * 9 / 10]),
            ms(*times.last().unwrap())
        );
    }
    app.wait(async {}).await?;
    Ok(())
}
