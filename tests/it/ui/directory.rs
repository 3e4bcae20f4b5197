//! A directory user logs in through the web UI in a real browser (headless Chromium, Debian's
//! slapd with LDAPS): the login form takes their directory password, the header shows the role
//! their groups map to, a user whose groups map only to a pool lands on that pool's machines,
//! and a wrong password or an unmapped user is told so on the form. Skips with "SKIPPED: ..."
//! without chromium or slapd.

use std::time::{Duration, Instant};

use crate::api::directory::{ldaps_config, ldif};
use crate::browser::{wait_path, Browser};
use crate::common::slapd::Slapd;
use crate::common::*;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::json;

async fn submit(c: &Client, origin: &str, user: &str, password: &str) {
    c.goto(&format!("{origin}/ui/login")).await.unwrap();
    c.find(Locator::Id("username")).await.unwrap().send_keys(user).await.unwrap();
    c.find(Locator::Id("password")).await.unwrap().send_keys(password).await.unwrap();
    c.find(Locator::Css("form button[type=submit]")).await.unwrap().click().await.unwrap();
}

async fn text_of(c: &Client, css: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(e) = c.find(Locator::Css(css)).await {
            return e.text().await.unwrap();
        }
        assert!(Instant::now() < deadline, "{css} not there: {}", c.source().await.unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn logout(c: &Client) {
    c.find(Locator::Css("form.who button[type=submit]")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/login").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_user_logs_in_through_the_web_ui_in_chromium() {
    let Some(slapd) = Slapd::start(&ldif()) else { return };
    let cfg_dir = tempfile::tempdir().unwrap();
    let lab = Lab::start(&ldaps_config(&slapd, cfg_dir.path())).await;
    let pin = crate::browser::spki_pin(&lab.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = lab.https_url();
    for (mac, pool) in [("52:54:00:0c:00:01", "team-c"), ("52:54:00:0c:00:02", "default")] {
        lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
        lab.api.ok(Method::PUT, &format!("/machines/{mac}/pool"), Some(json!({"pool": pool}))).await.unwrap();
    }

    // bob of rack-ops: an operator, with the directory's password.
    submit(c, &origin, "bob", "bob-password-1").await;
    wait_path(c, "/ui/dashboard").await;
    assert!(text_of(c, "form.who span").await.contains("bob (operator)"));
    b.shot("74-directory-user").await;
    logout(c).await;

    // erin of team-c: that pool's machines only.
    submit(c, &origin, "erin", "erin-password-1").await;
    wait_path(c, "/ui/machines").await;
    assert!(text_of(c, "form.who span").await.contains("team-c: operator"));
    let rows = text_of(c, "#machines tbody").await;
    assert!(rows.contains("52:54:00:0c:00:01") && !rows.contains("52:54:00:0c:00:02"), "{rows}");
    logout(c).await;

    // A wrong password, and carol, whose group maps to nothing: the form says no.
    submit(c, &origin, "bob", "not-bobs-password").await;
    assert!(text_of(c, "#login-error").await.contains("Wrong username or password"));
    submit(c, &origin, "carol", "carol-password-1").await;
    let said = text_of(c, "#login-error").await;
    assert!(said.contains("no directory group"), "{said}");
    b.close().await;
}
