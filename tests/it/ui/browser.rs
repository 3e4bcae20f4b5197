//! The operator's web UI in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver + fantoccini) against the whole appliance in-process on loopback HTTPS. The
//! browser pins the appliance's certificate by its SPKI hash (it does not ignore certificate
//! errors). It talks only to 127.0.0.1, so it runs outside a network namespace; the test checks
//! that every URL the pages load is the appliance's own origin. Screenshots of each page go to
//! `$CARGO_TARGET_DIR/ui-screenshots/`. Skips with "SKIPPED: ..." without chromium.

use std::time::{Duration, Instant};

use crate::browser::Browser;
use crate::common::appliance::Appliance;
use crate::raw::raw;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery";

async fn user(app: &Appliance, name: &str, role: &str) {
    app.api.ok(Method::POST, "/users", Some(json!({"name": name, "role": role, "password": PASSWORD}))).await.unwrap();
}

async fn machine(app: &Appliance, mac: &str, hostname: &str, tags: &[&str]) -> u64 {
    let body = json!({"macs": [mac], "hostname": hostname, "serial": format!("SN-{hostname}"), "tags": tags});
    app.api.ok(Method::POST, "/machines", Some(body)).await.unwrap()["id"].as_u64().unwrap()
}

async fn login(c: &Client, origin: &str, name: &str, password: &str) {
    c.goto(&format!("{origin}/ui/login")).await.unwrap();
    c.find(Locator::Id("username")).await.unwrap().send_keys(name).await.unwrap();
    c.find(Locator::Id("password")).await.unwrap().send_keys(password).await.unwrap();
    c.find(Locator::Css("form button[type=submit]")).await.unwrap().click().await.unwrap();
}

/// The element `loc` once it is there (a click that navigates returns before the new page is).
/// Any error is "not yet": while the browser is between pages chromedriver answers a find with
/// "aborted by navigation", which fantoccini's own wait gives up on at once (run 25 failed so).
async fn wait_for(c: &Client, loc: Locator<'_>) -> fantoccini::elements::Element {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.find(loc).await {
            Ok(e) => return e,
            Err(e) if Instant::now() >= deadline => {
                panic!("{loc:?} not there after 10 s ({e}): {}", c.source().await.unwrap_or_default())
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

use crate::browser::{click_to_new_page, wait_path};

/// Runs `script` in the page (a returned promise is awaited) and returns its value.
async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

async fn rows(c: &Client) -> Vec<String> {
    let mut out = Vec::new();
    for r in c.find_all(Locator::Css("#machines tbody tr")).await.unwrap() {
        out.push(r.text().await.unwrap());
    }
    out
}

async fn path_and_query(c: &Client) -> String {
    let u = c.current_url().await.unwrap();
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

/// Every URL the page and its resources came from.
async fn urls(c: &Client) -> Vec<String> {
    let v = js(c, "return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name));").await;
    v.as_array().unwrap().iter().map(|u| u.as_str().unwrap().to_string()).collect()
}

/// A POST from the page's own JavaScript (same origin, the session cookie attached): its status.
async fn page_post(c: &Client, path: &str, body: &str) -> u64 {
    let script = format!(
        "return fetch({path:?}, {{method: 'POST', redirect: 'manual', headers: {{'content-type': 'application/x-www-form-urlencoded'}}, body: {body:?}}}).then(r => r.status);"
    );
    js(c, &script).await.as_u64().unwrap()
}

async fn audit(app: &Appliance, query: &str) -> Vec<Value> {
    app.get(&format!("/audit?{query}")).await["entries"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_ui_in_chromium() {
    let app = Appliance::start("").await;
    let pin = crate::browser::spki_pin(&app.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = app.url();
    user(&app, "alice", "operator").await;
    user(&app, "vic", "viewer").await;
    let web1 = machine(&app, "52:54:00:aa:00:01", "web-01", &["web"]).await;
    let web2 = machine(&app, "52:54:00:aa:00:02", "web-02", &["web"]).await;
    let db1 = machine(&app, "52:54:00:aa:00:03", "db-01", &["db"]).await;

    // Not logged in: the root sends the browser to the login page, over the pinned TLS.
    c.goto(&format!("{origin}/")).await.unwrap();
    assert!(path_and_query(c).await.starts_with("/ui/login?"), "{}", path_and_query(c).await);
    b.shot("01-login").await;

    // A wrong password shows an error and sets no session.
    login(c, &origin, "alice", "not the password").await;
    let err = wait_for(c, Locator::Id("login-error")).await.text().await.unwrap();
    assert!(err.contains("Wrong username or password"), "{err}");
    b.shot("02-login-error").await;
    let failed = audit(&app, "user=alice&outcome=denied").await;
    assert!(failed.iter().any(|e| e["route"] == "/auth/login" && e["status"] == 401), "{failed:?}");

    login(c, &origin, "alice", PASSWORD).await;
    wait_path(c, "/ui/dashboard").await;
    let by_state = wait_for(c, Locator::Id("by-state")).await.text().await.unwrap();
    assert!(by_state.contains("discovered 3"), "{by_state}");
    assert!(c.find_all(Locator::LinkText("Audit log")).await.unwrap().is_empty(), "an operator has no audit link");
    b.shot("03a-dashboard").await;
    c.find(Locator::LinkText("Machines")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/machines").await;
    assert_eq!(rows(c).await.len(), 3);
    b.shot("03-machines").await;
    let cookie = c.get_named_cookie("rackboot_session").await.unwrap();
    assert_eq!(cookie.http_only(), Some(true));
    assert_eq!(cookie.secure(), Some(true));
    assert_eq!(cookie.same_site().map(|s| s.to_string()).as_deref(), Some("Strict"));
    let session = format!("rackboot_session={}", cookie.value());

    // The security headers are on every page.
    let headers = js(c, "return fetch('/ui/machines').then(r => [r.headers.get('content-security-policy'), r.headers.get('x-content-type-options'), r.headers.get('referrer-policy')]);").await;
    assert!(headers[0].as_str().unwrap().starts_with("default-src 'self'"), "{headers}");
    assert!(headers[0].as_str().unwrap().contains("frame-ancestors 'none'"), "{headers}");
    assert_eq!(headers[1], "nosniff");
    assert_eq!(headers[2], "no-referrer");

    // Search by MAC. htmx (hx-boost) swaps the page in place, with the URL kept current: a value
    // set on this page survives the search, which a full reload would clear.
    js(c, "window.rackbootKept = 'same page'; return 1;").await;
    let q = c.find(Locator::Id("f-q")).await.unwrap();
    q.send_keys("52:54:00:aa:00:02").await.unwrap();
    c.find(Locator::Id("f-submit")).await.unwrap().click().await.unwrap();
    wait_for(c, Locator::Css("#f-q[value='52:54:00:aa:00:02']")).await;
    let found = rows(c).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("web-02"), "{found:?}");
    assert!(path_and_query(c).await.contains("q=52%3A54%3A00%3Aaa%3A00%3A02"), "{}", path_and_query(c).await);
    assert_eq!(js(c, "return window.rackbootKept || 'reloaded';").await, "same page", "htmx did the search");
    b.shot("04-machines-search").await;

    // Filters live in the URL: they survive a reload and the back button.
    c.goto(&format!("{origin}/ui/machines?tag=db&sort=hostname&dir=desc")).await.unwrap();
    assert_eq!(rows(c).await.len(), 1);
    c.refresh().await.unwrap();
    assert_eq!(rows(c).await.len(), 1);
    c.find(Locator::LinkText("db-01")).await.unwrap().click().await.unwrap();
    wait_path(c, &format!("/ui/machines/{db1}")).await;
    c.back().await.unwrap();
    wait_path(c, "/ui/machines").await;
    assert!(path_and_query(c).await.contains("tag=db"), "{}", path_and_query(c).await);
    assert_eq!(c.find(Locator::Id("f-tag")).await.unwrap().prop("value").await.unwrap().as_deref(), Some("db"));
    let kept = rows(c).await;
    assert!(kept.len() == 1 && kept[0].contains("db-01"), "{kept:?}");

    // A bulk delete needs the count typed; a wrong one does nothing.
    c.goto(&format!("{origin}/ui/machines?tag=web")).await.unwrap();
    let bulk = |confirm: &'static str| async move {
        for id in [web1, web2] {
            c.find(Locator::Id(&format!("sel-{id}"))).await.unwrap().click().await.unwrap();
        }
        c.find(Locator::Id("b-action")).await.unwrap().select_by_value("delete").await.unwrap();
        c.find(Locator::Id("b-confirm")).await.unwrap().send_keys(confirm).await.unwrap();
        click_to_new_page(c, Locator::Id("b-submit")).await;
    };
    bulk("1").await;
    let said = wait_for(c, Locator::Css("p.notice.error")).await.text().await.unwrap();
    assert!(said.contains("nothing was done") && said.contains("type 2"), "{said}");
    b.shot("05-bulk-unconfirmed").await;
    assert_eq!(app.get("/machines").await["total"], 3, "an unconfirmed delete deleted something");
    c.goto(&format!("{origin}/ui/machines?tag=web")).await.unwrap();
    bulk("2").await;
    let notice = wait_for(c, Locator::Id("notice")).await.text().await.unwrap();
    assert!(notice.contains("deleted 2 of 2 machines"), "{notice}");
    assert!(path_and_query(c).await.contains("tag=web"), "back to the same view");
    b.shot("06-bulk-done").await;
    assert_eq!(app.get("/machines").await["total"], 1);
    let deletes = audit(&app, "user=alice&method=DELETE").await;
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    for e in &deletes {
        assert_eq!(e["route"], "/machines/{id}");
        assert_eq!(e["status"], 204);
        assert_eq!(e["from"], "127.0.0.1", "the browser's address is recorded");
    }

    // Provisioning from the list is one task through the API; a bad one says why and makes none.
    c.goto(&format!("{origin}/ui/machines?tag=db")).await.unwrap();
    c.find(Locator::Id(&format!("sel-{db1}"))).await.unwrap().click().await.unwrap();
    c.find(Locator::Id("b-action")).await.unwrap().select_by_value("provision").await.unwrap();
    c.find(Locator::Id("b-image")).await.unwrap().send_keys("no-such.img").await.unwrap();
    c.find(Locator::Id("b-confirm")).await.unwrap().send_keys("1").await.unwrap();
    click_to_new_page(c, Locator::Id("b-submit")).await;
    let notice = wait_for(c, Locator::Id("notice")).await.text().await.unwrap();
    assert!(notice.starts_with("nothing was provisioned: 4"), "{notice}");
    assert!(path_and_query(c).await.contains("tag=db"));
    assert!(app.get("/tasks").await["tasks"].as_array().unwrap().is_empty(), "a refused task was created");
    // With an image that exists it runs: one task for the selection, shown on the tasks page.
    let images = app.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![5u8; 4096]).unwrap();
    c.find(Locator::Id(&format!("sel-{db1}"))).await.unwrap().click().await.unwrap();
    c.find(Locator::Id("b-action")).await.unwrap().select_by_value("provision").await.unwrap();
    c.find(Locator::Id("b-image")).await.unwrap().send_keys("lab.img").await.unwrap();
    c.find(Locator::Id("b-confirm")).await.unwrap().send_keys("1").await.unwrap();
    click_to_new_page(c, Locator::Id("b-submit")).await;
    let notice = wait_for(c, Locator::Id("notice")).await.text().await.unwrap();
    let tasks = app.get("/tasks").await["tasks"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 1, "{notice}: {tasks:?}");
    assert_eq!(tasks[0]["spec"]["select"]["macs"], json!(["52:54:00:aa:00:03"]), "{tasks:?}");
    assert!(notice.contains(&format!("task {}", tasks[0]["id"])), "{notice}");
    c.find(Locator::LinkText("Tasks")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/tasks").await;
    let listed = wait_for(c, Locator::Id("tasks")).await.text().await.unwrap();
    assert!(listed.contains("image lab.img"), "{listed}");
    b.shot("06b-tasks").await;

    // A POST without the CSRF token, or from another origin, is refused and changes nothing.
    let del = format!("action=delete&confirm=delete&id={db1}");
    assert_eq!(page_post(c, "/ui/machines/bulk", &del).await, 403);
    let csrf = c.find(Locator::Css("input[name=csrf]")).await.unwrap().prop("value").await.unwrap().unwrap();
    let forged = format!("{del}&csrf={csrf}");
    let form = ("content-type", "application/x-www-form-urlencoded");
    let (status, _) = raw(
        &app,
        "POST",
        "/ui/machines/bulk",
        &[("cookie", &session), ("origin", "https://evil.example"), form],
        &forged,
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(app.get("/machines").await["total"], 1, "a refused POST deleted something");
    // The session cookie is the UI's only: the JSON API does not take it as a credential.
    let (status, _) = raw(&app, "GET", "/api/v1/machines", &[("cookie", &session)], "").await;
    assert_eq!(status, 401);

    // The machine page updates live when an event is recorded, without a reload.
    c.goto(&format!("{origin}/ui/machines/{db1}")).await.unwrap();
    js(c, "window.__noReload = 42; return null;").await;
    let before = c.find_all(Locator::Css("#timeline li")).await.unwrap().len();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c.find(Locator::Id("live-status")).await.unwrap().text().await.unwrap().starts_with("Live") {
        assert!(Instant::now() < deadline, "the live stream did not open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.api.ok(Method::PATCH, &format!("/machines/{db1}"), Some(json!({"state": "failed"}))).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let items = c.find_all(Locator::Css("#timeline li")).await.unwrap();
        if items.len() > before {
            let top = items[0].text().await.unwrap();
            if top.contains("machine.updated") || top.contains("machine.state") {
                break;
            }
        }
        assert!(Instant::now() < deadline, "no live timeline entry after 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.find(Locator::Id("machine-state")).await.unwrap().text().await.unwrap() != "failed" {
        assert!(Instant::now() < deadline, "the state did not change live");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(js(c, "return window.__noReload;").await, 42, "the page was reloaded");
    let live = c.find(Locator::Id("timeline")).await.unwrap().attr("aria-live").await.unwrap();
    assert_eq!(live.as_deref(), Some("polite"));
    b.shot("07-machine-live").await;
    for u in urls(c).await {
        assert!(u.starts_with(&format!("{origin}/")), "{u} is not the appliance's origin");
    }

    // A script job from the list's bulk form, on a machine with a real agent: its page shows
    // the inventory, and the job's output and result arrive live.
    let node_mac = "52:54:00:aa:00:04";
    let work = tempfile::tempdir().unwrap();
    let agent = app.agent(node_mac, work.path());
    let node = crate::common::eventually(|| async {
        let m = app.api.ok(Method::GET, &format!("/machines/{node_mac}"), None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "no inventory yet");
        Ok(m)
    })
    .await["id"]
        .as_u64()
        .unwrap();
    c.goto(&format!("{origin}/ui/machines?q={node_mac}")).await.unwrap();
    c.find(Locator::Id(&format!("sel-{node}"))).await.unwrap().click().await.unwrap();
    c.find(Locator::Id("b-action")).await.unwrap().select_by_value("script").await.unwrap();
    c.find(Locator::Id("b-script")).await.unwrap().send_keys("sleep 2; echo hello-from-the-ui").await.unwrap();
    c.find(Locator::Id("b-confirm")).await.unwrap().send_keys("1").await.unwrap();
    click_to_new_page(c, Locator::Id("b-submit")).await;
    let notice = wait_for(c, Locator::Id("notice")).await.text().await.unwrap();
    assert!(notice.contains("queued a script job on 1 of 1 machines"), "{notice}");
    c.goto(&format!("{origin}/ui/machines/{node}")).await.unwrap();
    js(c, "window.__noReload = 7; return null;").await;
    let inventory = c.find(Locator::Css("section[aria-labelledby=h-inventory]")).await.unwrap().text().await.unwrap();
    assert!(inventory.contains("CPU") && inventory.contains("Memory") && inventory.contains("Network interfaces"));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let jobs = c.find(Locator::Id("jobs")).await.unwrap().text().await.unwrap();
        if jobs.contains("hello-from-the-ui") && jobs.contains("succeeded") {
            break;
        }
        assert!(Instant::now() < deadline, "the job's output and result did not arrive live: {jobs}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(js(c, "return window.__noReload;").await, 7, "the page was reloaded");
    b.shot("08-machine-job").await;
    // The page's own action form acts on this machine and comes back to it.
    c.find(Locator::Id("m-action")).await.unwrap().select_by_value("tag").await.unwrap();
    c.find(Locator::Id("m-tag")).await.unwrap().send_keys("rack-r1").await.unwrap();
    click_to_new_page(c, Locator::Id("m-submit")).await;
    let notice = wait_for(c, Locator::Id("notice")).await.text().await.unwrap();
    assert!(notice.contains("tagged \"rack-r1\": 1 of 1"), "{notice}");
    assert_eq!(c.current_url().await.unwrap().path(), format!("/ui/machines/{node}"));
    assert_eq!(app.get(&format!("/machines/{node}")).await["tags"], json!(["rack-r1"]));
    js(c, "document.getElementById('h-inventory').scrollIntoView(); return null;").await;
    b.shot("08b-machine-inventory").await;
    agent.abort();
    let jobs = audit(&app, "user=alice&method=POST").await;
    assert!(jobs.iter().any(|e| e["route"] == "/jobs" && e["status"] == 201), "{jobs:?}");

    // Logging out ends the session: its token no longer works.
    c.find(Locator::Css("form.who button")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/login").await;
    let (status, text) = raw(&app, "GET", "/ui/machines", &[("cookie", &session)], "").await;
    assert!(status == 303 && text.contains("location: /ui/login"), "{status} {text}");

    // A viewer sees no action, and the server refuses their forged POST anyway.
    login(c, &origin, "vic", PASSWORD).await;
    wait_path(c, "/ui/dashboard").await;
    c.goto(&format!("{origin}/ui/audit")).await.unwrap();
    assert!(c.source().await.unwrap().contains("the audit log is the admin"), "a viewer read the audit log");
    c.goto(&format!("{origin}/ui/machines")).await.unwrap();
    assert!(c.find_all(Locator::Css("input[name=id]")).await.unwrap().is_empty());
    assert!(c.find_all(Locator::Id("b-submit")).await.unwrap().is_empty());
    c.goto(&format!("{origin}/ui/machines/{db1}")).await.unwrap();
    assert!(c.find_all(Locator::Id("machine-actions")).await.unwrap().is_empty(), "a viewer sees no action");
    c.goto(&format!("{origin}/ui/machines")).await.unwrap();
    b.shot("09-machines-viewer").await;
    for u in urls(c).await {
        assert!(u.starts_with(&format!("{origin}/")), "{u} is not the appliance's origin");
    }
    let csrf = c.find(Locator::Css("input[name=csrf]")).await.unwrap().prop("value").await.unwrap().unwrap();
    assert_eq!(page_post(c, "/ui/machines/bulk", &format!("{del}&csrf={csrf}")).await, 403);
    let (status, _) = app.api.call(Method::GET, &format!("/machines/{db1}"), None).await.unwrap();
    assert_eq!(status, 200, "a viewer deleted a machine");
    let refused = audit(&app, "user=vic&method=DELETE").await;
    assert!(refused.iter().any(|e| e["status"] == 403), "{refused:?}");

    // The admin's pages: the audit log shows what alice did from where; users and tokens.
    c.find(Locator::Css("form.who button")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/login").await;
    user(&app, "ada", "admin").await;
    login(c, &origin, "ada", PASSWORD).await;
    wait_path(c, "/ui/dashboard").await;
    c.find(Locator::LinkText("Audit log")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/audit").await;
    c.find(Locator::Id("a-user")).await.unwrap().send_keys("alice").await.unwrap();
    c.find(Locator::Id("a-method")).await.unwrap().send_keys("DELETE").await.unwrap();
    c.find(Locator::Css("form.filters button")).await.unwrap().click().await.unwrap();
    wait_for(c, Locator::Css("#a-user[value=alice]")).await;
    let mut rows = Vec::new();
    for r in c.find_all(Locator::Css("#audit tbody tr")).await.unwrap() {
        rows.push(r.text().await.unwrap());
    }
    // Two machine deletes, and the logout's revocation of the session token.
    assert_eq!(rows.iter().filter(|r| r.contains("DELETE /machines/{id}")).count(), 2, "{rows:?}");
    assert_eq!(rows.iter().filter(|r| r.contains("DELETE /tokens/{id}")).count(), 1, "{rows:?}");
    assert!(rows.iter().all(|r| r.contains("alice") && r.contains("127.0.0.1") && r.contains(" ok")), "{rows:?}");
    b.shot("10-audit").await;
    c.find(Locator::LinkText("Users")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/users").await;
    let users = c.find(Locator::Id("users")).await.unwrap().text().await.unwrap();
    assert!(users.contains("alice") && users.contains("vic") && users.contains("viewer"), "{users}");
    let tokens = c.find(Locator::Id("tokens")).await.unwrap().text().await.unwrap();
    assert!(tokens.contains("login session") && !tokens.contains("rbt_"), "{tokens}");
    b.shot("11-users").await;
    for u in urls(c).await {
        assert!(u.starts_with(&format!("{origin}/")), "{u} is not the appliance's origin");
    }

    b.close().await;
    println!("screenshots in {}", crate::browser::screenshot_dir().display());
}
