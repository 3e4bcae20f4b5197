//! Two teams on one appliance in a real browser (headless Chromium over WebDriver, pinned to the
//! appliance's certificate): a pool-scoped user lands on the machine list (the dashboard counts
//! every pool), sees their pools' machines and racks only, with their pool roles in the header
//! and no link to pages that read every pool; another team's rack and machine answer as missing
//! ones, a page that reads every pool is refused, and a bulk action forged with another team's
//! machine changes nothing. Skips with "SKIPPED: ..." without chromium.

use std::time::{Duration, Instant};

use crate::browser::{wait_path, Browser};
use crate::common::*;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";

async fn login(c: &Client, origin: &str, name: &str) {
    c.goto(&format!("{origin}/ui/login")).await.unwrap();
    c.find(Locator::Id("username")).await.unwrap().send_keys(name).await.unwrap();
    c.find(Locator::Id("password")).await.unwrap().send_keys(PASSWORD).await.unwrap();
    c.find(Locator::Css("form button[type=submit]")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/machines").await;
}

async fn logout(c: &Client) {
    c.find(Locator::Css("form.who button[type=submit]")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/login").await;
}

async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css)).await.unwrap().text().await.unwrap()
}

/// Waits (up to 10 s) for `css` on the page; its text.
async fn text_of(c: &Client, css: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.find(Locator::Css(css)).await {
            Ok(e) => return e.text().await.unwrap(),
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("{css} not there ({e}): {}", c.source().await.unwrap_or_default()),
        }
    }
}

/// The racks the racks page links to.
async fn rack_links(c: &Client) -> Vec<String> {
    text_of(c, "main").await;
    let mut out = Vec::new();
    for a in c.find_all(Locator::Css("main a[href^='/ui/racks/']")).await.unwrap() {
        out.push(a.attr("href").await.unwrap().unwrap_or_default());
    }
    out
}

/// The status of a GET from the page's own JavaScript (the session cookie attached).
async fn status_of(c: &Client, path: &str) -> u64 {
    let script = format!("return fetch({path:?}, {{redirect: 'manual'}}).then(r => r.status);");
    c.execute(&script, vec![]).await.unwrap().as_u64().unwrap()
}

async fn nav(c: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for a in c.find_all(Locator::Css("header nav a")).await.unwrap() {
        out.push(a.text().await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_teams_each_see_only_their_own_machines_and_racks_in_chromium() {
    let lab = Lab::start("").await;
    let pin = crate::browser::spki_pin(&lab.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = lab.https_url();
    let api = &lab.api;
    let mut ids = Vec::new();
    for (rack, pool, mac, host, plan) in [
        ("ra", "team-a", "52:54:00:a3:00:01", "alpha1", "127.0.31.1-127.0.31.4"),
        ("rb", "team-b", "52:54:00:b3:00:01", "bravo1", "127.0.32.1-127.0.32.4"),
    ] {
        let m = api.ok(Method::POST, "/machines", Some(json!({"macs": [mac], "tags": ["t"]}))).await.unwrap();
        ids.push(m["id"].as_u64().unwrap());
        api.ok(Method::POST, "/racks", Some(json!({"name": rack, "pool": pool, "address_plan": plan}))).await.unwrap();
        let csv = format!("mac,hostname,ip,slot\n{mac},{host},,U1\n");
        api.ok(Method::POST, &format!("/racks/{rack}/csv"), Some(json!({"csv": csv}))).await.unwrap();
    }
    for (name, pools) in [("ann", json!({"team-a": "operator"})), ("bob", json!({"team-b": "viewer"}))] {
        let user = json!({"name": name, "role": "viewer", "password": PASSWORD, "pools": pools});
        api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    }

    // Team A's operator: the machine list is home, with team A's machine only.
    login(c, &origin, "ann").await;
    let rows = text_of(c, "#machines tbody").await;
    assert!(rows.contains("alpha1") && !rows.contains("bravo1"), "{rows}");
    assert_eq!(nav(c).await, ["Machines", "Racks"], "no link to pages that read every pool");
    assert!(text(c, "form.who").await.contains("team-a: operator"));
    assert!(
        !c.find_all(Locator::Css("#bulk fieldset.actions")).await.unwrap().is_empty(),
        "an operator of a pool acts"
    );
    b.shot("60-pool-operator-machines").await;
    c.find(Locator::LinkText("Racks")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/racks").await;
    assert_eq!(rack_links(c).await, ["/ui/racks/ra"]);
    assert!(c.find_all(Locator::Id("rack-form")).await.unwrap().is_empty(), "racks are placed by an admin");
    c.goto(&format!("{origin}/ui/racks/ra")).await.unwrap();
    assert!(text_of(c, "#elevation").await.contains("alpha1"));
    b.shot("61-pool-operator-rack").await;

    // Team B's rack and machine are not there; pages that read every pool are refused.
    c.goto(&format!("{origin}/ui/racks/rb")).await.unwrap();
    assert!(text_of(c, "main").await.contains("no such rack"));
    c.goto(&format!("{origin}/ui/machines/999999")).await.unwrap();
    let missing = text_of(c, "main").await.replace("999999", "N");
    c.goto(&format!("{origin}/ui/machines/{}", ids[1])).await.unwrap();
    assert_eq!(text_of(c, "main").await.replace(&ids[1].to_string(), "N"), missing, "as a missing one");
    c.goto(&format!("{origin}/ui/dashboard")).await.unwrap();
    wait_path(c, "/ui/machines").await;
    for page in ["/ui/audit", "/ui/tasks", "/ui/firmware", "/ui/leases", "/ui/machines/1/bmc"] {
        assert_eq!(status_of(c, page).await, 403, "{page}");
    }

    // A bulk tag forged with team B's machine changes nothing of theirs.
    c.goto(&format!("{origin}/ui/machines")).await.unwrap();
    wait_path(c, "/ui/machines").await;
    let forged = format!(
        "return fetch('/ui/machines/bulk', {{method: 'POST', redirect: 'manual', headers: {{'content-type': 'application/x-www-form-urlencoded'}}, body: 'csrf=' + document.querySelector('input[name=csrf]').value + '&action=tag&tag=mine&id={}&id={}'}}).then(r => r.status);",
        ids[0], ids[1]
    );
    let status = c.execute(&forged, vec![]).await.unwrap();
    assert!(status.as_u64().is_some_and(|s| s < 500), "{status}");
    let tags = |v: Value| v["tags"].clone();
    assert_eq!(tags(api.ok(Method::GET, &format!("/machines/{}", ids[1]), None).await.unwrap()), json!(["t"]));
    assert_eq!(tags(api.ok(Method::GET, &format!("/machines/{}", ids[0]), None).await.unwrap()), json!(["t", "mine"]));
    logout(c).await;

    // Team B's viewer: their machine, no actions.
    login(c, &origin, "bob").await;
    let rows = text_of(c, "#machines tbody").await;
    assert!(rows.contains("bravo1") && !rows.contains("alpha1"), "{rows}");
    assert!(c.find_all(Locator::Css("#bulk fieldset.actions")).await.unwrap().is_empty(), "a viewer gets no actions");
    c.goto(&format!("{origin}/ui/racks")).await.unwrap();
    assert_eq!(rack_links(c).await, ["/ui/racks/rb"]);
    b.shot("62-pool-viewer-machines").await;
    b.close().await;
}
