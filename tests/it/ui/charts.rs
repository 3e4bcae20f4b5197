//! The dashboard's charts of the last hour in a real browser (headless Chromium over WebDriver,
//! pinned to the appliance's certificate): three machines lease addresses over DHCP, two fetch
//! their boot scripts, one's agent enrolls and fails a job, one is marked failed; the charts
//! (server-drawn SVG) carry those numbers in their bars, words and tables, the refresh swaps
//! in a newer hour without a reload, and the page loads nothing from another origin. A
//! screenshot of the charts goes to `$CARGO_TARGET_DIR/ui-screenshots/`. Skips with
//! "SKIPPED: ..." without chromium.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::browser::Browser;
use crate::common::*;
use fantoccini::{Client, Locator};
use hyper::Method;
use rackboot_agent::run::{Agent, Options};
use rackboot_agent::tls::Trust;
use rackboot_agent::wire::AgentMode;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PASSWORD: &str = "correct horse battery";

fn mac(last: u8) -> [u8; 6] {
    [0x52, 0x54, 0, 0xc4, 0, last]
}

fn mac_text(last: u8) -> String {
    format!("52:54:00:c4:00:{last:02x}")
}

/// Fetches `mac`'s boot script over plain HTTP, as its firmware would.
async fn boot_script(lab: &Lab, mac: &str) {
    let addr: SocketAddr = lab.app.as_ref().unwrap().http_addr;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET /boot/ipxe?mac={mac} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    assert!(out.starts_with("HTTP/1.0 200") && out.contains("#!ipxe"), "{out}");
}

/// A BootOS agent for `mac` against the lab, with this boot's nonce; runs until aborted.
async fn agent(lab: &Lab, mac: &str, workdir: &std::path::Path) -> tokio::task::JoinHandle<()> {
    let cmdb = &lab.app.as_ref().unwrap().cmdb;
    let nonce = cmdb.issue_boot_nonce(mac.parse().unwrap(), "127.0.0.1".into(), 1800).await.unwrap();
    let opts = Options {
        url: lab.https_url(),
        trust: Trust::CaPem(std::fs::read(lab.dir.path().join("tls/ca.pem")).unwrap()),
        mode: AgentMode::Bootos,
        state_dir: None,
        boot_mac: Some(mac.into()),
        nonce: Some(nonce),
        root: "/".into(),
        workdir: workdir.into(),
        macs: Some(vec![mac.into()]),
        lldp: false,
        machine_actions: false,
        ipmitool: "ipmitool".into(),
    };
    tokio::spawn(async move {
        let _ = Agent::new(opts).unwrap().run().await;
    })
}

/// Runs `script` in the page and returns its value.
async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

/// The bars of chart `id` as (series, minutes ago, value).
async fn bars(c: &Client, id: &str) -> Vec<(String, u64, u64)> {
    let script = format!(
        "return [...document.querySelectorAll('#chart-{id} svg rect.bar')].map(r => [r.dataset.series, +r.dataset.ago, +r.dataset.value]);"
    );
    let v = js(c, &script).await;
    let row = |b: &Value| (b[0].as_str().unwrap().to_string(), b[1].as_u64().unwrap(), b[2].as_u64().unwrap());
    v.as_array().unwrap().iter().map(row).collect()
}

/// The sum of a series' bars over the hour.
fn total(bars: &[(String, u64, u64)], series: &str) -> u64 {
    bars.iter().filter(|b| b.0 == series).map(|b| b.2).sum()
}

/// Waits (up to 20 s) until the gauges count `n` active leases (DHCP sets them every 5 s).
async fn leases_counted(lab: &Lab, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let want = format!("\nrackboot_dhcp_leases_in_use {n}\n");
    while !lab.metrics().await.contains(&want) {
        assert!(Instant::now() < deadline, "the gauge never counted {n} leases");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_charts_the_last_hour() {
    let lab = Lab::start("[agent]\npoll_secs = 2\nlease_secs = 3\nstats_secs = 1\n").await;
    let pin = crate::browser::spki_pin(&lab.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = lab.https_url();
    lab.api
        .ok(Method::POST, "/users", Some(json!({"name": "olga", "role": "operator", "password": PASSWORD})))
        .await
        .unwrap();

    // Three machines power on: DHCP leases them an address each and creates them.
    for last in 1..=3u8 {
        four_way(&lab, mac(last), 7000 + u32::from(last) * 10).await;
    }
    // Two fetch their boot scripts: two boots started.
    boot_script(&lab, &mac_text(1)).await;
    boot_script(&lab, &mac_text(2)).await;
    // One boots BootOS, whose agent enrolls (a boot finished), and fails a job.
    let work = tempfile::tempdir().unwrap();
    let node = agent(&lab, &mac_text(1), work.path()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while lab.api.ok(Method::GET, &format!("/machines/{}", mac_text(1)), None).await.unwrap()["inventory"].is_null() {
        assert!(Instant::now() < deadline, "the agent did not enroll and send its inventory");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let action = json!({"kind": "script", "interpreter": "/bin/sh", "body": "echo no disk; exit 3"});
    let jobs =
        lab.api.ok(Method::POST, "/jobs", Some(json!({"machine": mac_text(1), "action": action}))).await.unwrap();
    let job = jobs["jobs"][0]["id"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while lab.api.ok(Method::GET, &format!("/jobs/{job}"), None).await.unwrap()["state"] != "failed" {
        assert!(Instant::now() < deadline, "the job did not fail");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    node.abort();
    // An operator marks the third failed.
    let third =
        lab.api.ok(Method::GET, &format!("/machines/{}", mac_text(3)), None).await.unwrap()["id"].as_u64().unwrap();
    lab.api.ok(Method::PATCH, &format!("/machines/{third}"), Some(json!({"state": "failed"}))).await.unwrap();
    leases_counted(&lab, 3).await;
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();

    crate::browser::login(c, &origin, "olga", PASSWORD).await;
    let section = c.find(Locator::Id("charts")).await.unwrap();
    assert_eq!(section.attr("hx-get").await.unwrap().as_deref(), Some("/ui/dashboard/charts"));
    // Each chart is an image with a name and a description, drawn on the server.
    for id in ["boots", "states", "pool", "failures"] {
        let svg = c.find(Locator::Css(&format!("#chart-{id} svg[role=img]"))).await.unwrap();
        let name = js(c, &format!("return document.querySelector('#chart-{id} svg > title').textContent;")).await;
        assert!(name.as_str().unwrap().ends_with(", the last hour"), "{id}: {name}");
        let described = svg.attr("aria-describedby").await.unwrap().unwrap();
        assert_eq!(described, format!("{id}-d"));
        let axis = js(
            c,
            &format!("return [...document.querySelectorAll('#chart-{id} .axis-label')].map(t => t.textContent);"),
        )
        .await;
        assert_eq!(axis[0], "minutes ago", "{id}: {axis}");
    }

    let boots = bars(c, "boots").await;
    assert_eq!(total(&boots, "started"), 2, "{boots:?}");
    assert_eq!(total(&boots, "finished"), 1, "{boots:?}");
    assert!(boots.iter().all(|b| b.1 <= 2), "everything happened in the last minutes: {boots:?}");
    let words = c.find(Locator::Css("#chart-boots .chart-summary")).await.unwrap().text().await.unwrap();
    assert!(words.starts_with("Boots started: 2 in the last hour"), "{words}");
    assert!(words.contains("Boots finished: 1 in the last hour"), "{words}");
    let failures = bars(c, "failures").await;
    assert_eq!(total(&failures, "failed-jobs"), 1, "{failures:?}");
    assert_eq!(total(&failures, "failed-runs"), 0, "{failures:?}");

    // Machines by state now: what the API counts, the newest stack; before the machines came, none.
    let states = bars(c, "states").await;
    let listed = lab.api.ok(Method::GET, "/machines", None).await.unwrap();
    let mut want = std::collections::BTreeMap::new();
    for m in listed["machines"].as_array().unwrap() {
        *want.entry(m["state"].as_str().unwrap().to_string()).or_insert(0u64) += 1;
    }
    let now: std::collections::BTreeMap<String, u64> =
        states.iter().filter(|b| b.1 == 0).map(|b| (b.0.clone(), b.2)).collect();
    assert_eq!(now, want, "{states:?}");
    assert_eq!(now.get("failed"), Some(&1));
    assert!(states.iter().all(|b| b.1 <= 3), "no machine before the test made them: {states:?}");

    // DHCP pool use: the gauges now, and the note says where the samples start.
    let pool = bars(c, "pool").await;
    assert!(pool.contains(&("leases".into(), 0, 3)), "{pool:?}");
    let note = c.find(Locator::Css("#chart-pool .chart-note")).await.unwrap().text().await.unwrap();
    assert!(note.starts_with("3 of 1265 pool addresses in use now (0%)."), "{note}");
    assert!(note.contains("since the appliance started"), "{note}");
    let before = c.find(Locator::Css("#chart-pool svg .unknown-text")).await.unwrap().text().await.unwrap();
    assert_eq!(before, "before the appliance started");

    // The table fallback says the same.
    let table = js(c, "const d = document.querySelector('#chart-boots details'); d.open = true; return d.querySelector('table').innerText;").await;
    let table = table.as_str().unwrap();
    assert!(table.contains("boots started") && table.contains("boots finished"), "{table}");

    js(c, "document.getElementById('h-charts').scrollIntoView(); return null;").await;
    b.shot("12-dashboard-charts").await;

    // A third boot: the refresh (what htmx does each minute) brings it in without a reload.
    js(c, "window.__noReload = 12; return null;").await;
    boot_script(&lab, &mac_text(3)).await;
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    js(c, "htmx.ajax('GET', '/ui/dashboard/charts', {target: '#charts', swap: 'outerHTML'}); return null;").await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while total(&bars(c, "boots").await, "started") != 3 {
        assert!(Instant::now() < deadline, "the refreshed charts do not show the third boot");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(js(c, "return window.__noReload;").await, 12, "the page was reloaded");
    assert_eq!(c.find_all(Locator::Id("charts")).await.unwrap().len(), 1, "the section was replaced, not nested");

    let urls = js(c, "return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name));").await;
    for u in urls.as_array().unwrap() {
        assert!(u.as_str().unwrap().starts_with(&format!("{origin}/")), "{u} is not the appliance's origin");
    }
    b.close().await;
    println!("screenshots in {}", crate::browser::screenshot_dir().display());
}
