//! Logging in through a real OpenID provider in a real browser: node-oidc-provider (OpenID
//! Certified, `tests/oidc/provider.mjs`) and headless Chromium pinned to both servers'
//! certificates. The login page's button goes to the provider, its login and consent pages send
//! the browser back logged in with the role the groups claim maps to; logging out ends the
//! session; the user's groups change at the provider and the next login acts with the new role
//! (here: a pool's, so the UI shows that pool only); the CLI logs in by the device flow, the
//! code confirmed in the browser. Skips with "SKIPPED: ..." without chromium,
//! node or the provider's npm package.

use std::time::{Duration, Instant};

use crate::browser::{wait_path, Browser};
use crate::common::oidc_provider::OidcProvider;
use crate::common::*;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::json;

/// Goes through the provider's pages (login, consent) as `user`, whichever it shows, until the
/// browser is back at the appliance (`origin`).
async fn through_provider(c: &Client, origin: &str, user: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let url = c.current_url().await.unwrap();
        if url.as_str().starts_with(origin) && url.path() != "/ui/oidc/start" {
            return;
        }
        assert!(Instant::now() < deadline, "still at {url}: {}", c.source().await.unwrap_or_default());
        if let Ok(login) = c.find(Locator::Css("input[name=login]")).await {
            login.send_keys(user).await.unwrap();
            c.find(Locator::Css("input[name=password]")).await.unwrap().send_keys("any password").await.unwrap();
            c.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        } else if let Ok(go) = c.find(Locator::Css("input[name=prompt][value=consent] ~ button")).await {
            go.click().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn who(c: &Client) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(e) = c.find(Locator::Css("form.who span")).await {
            return e.text().await.unwrap();
        }
        assert!(Instant::now() < deadline, "not logged in: {}", c.source().await.unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_through_the_company_s_openid_provider_in_chromium() {
    let port = free_port();
    let origin = format!("https://127.0.0.1:{port}");
    let callback = format!("{origin}/ui/oidc/callback");
    let Some(idp) = OidcProvider::start(&callback, json!({"olivia": {"groups": ["rack-ops"]}})) else { return };
    let files = tempfile::tempdir().unwrap();
    let (ca, secret) = (files.path().join("idp-ca.pem"), files.path().join("oidc.secret"));
    std::fs::write(&ca, &idp.ca_pem).unwrap();
    std::fs::write(&secret, &idp.client_secret).unwrap();
    let extra = format!(
        "[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{}\"\nclient_secret_file = \"{}\"\nredirect_url = \"{callback}\"\n\
         ca_file = \"{}\"\nscopes = [\"openid\", \"profile\", \"groups\"]\nname = \"Example SSO\"\n\
         claims = [{{ claim = \"groups\", value = \"rack-ops\", role = \"operator\" }},\n\
         {{ claim = \"groups\", value = \"team-a\", role = \"operator\", pool = \"team-a\" }}]\n",
        idp.issuer,
        idp.client_id,
        secret.display(),
        ca.display()
    );
    let lab = Lab::start_https_on(port, &extra).await;
    let pins = format!(
        "{},{}",
        crate::browser::spki_pin(&lab.dir.path().join("tls/server.pem")),
        crate::browser::spki_pin(&idp.cert())
    );
    let Some(b) = Browser::start(&pins).await else { return };
    let c = &b.client;
    for (mac, pool) in [("52:54:00:0e:00:01", "team-a"), ("52:54:00:0e:00:02", "default")] {
        lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
        lab.api.ok(Method::PUT, &format!("/machines/{mac}/pool"), Some(json!({"pool": pool}))).await.unwrap();
    }

    // The login page's button, the provider's pages, and back: an operator.
    c.goto(&format!("{origin}/ui/login")).await.unwrap();
    b.shot("70-login-with-sso").await;
    c.find(Locator::Id("oidc-login")).await.unwrap().click().await.unwrap();
    through_provider(c, &origin, "olivia").await;
    wait_path(c, "/ui/dashboard").await;
    assert!(who(c).await.contains("olivia (operator)"), "{}", who(c).await);
    b.shot("71-logged-in-through-sso").await;
    let users = lab.api.ok(Method::GET, "/users", None).await.unwrap();
    let o = users["users"].as_array().unwrap().iter().find(|u| u["name"] == "olivia").cloned().unwrap();
    assert_eq!((o["role"].as_str(), o["directory"]["kind"].as_str()), (Some("operator"), Some("oidc")), "{o}");

    // Logging out ends the session: the pages ask for a login again.
    c.find(Locator::Css("form.who button[type=submit]")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/login").await;
    c.goto(&format!("{origin}/ui/machines")).await.unwrap();
    wait_path(c, "/ui/login").await;
    let sessions = lab.api.ok(Method::GET, "/tokens", None).await.unwrap();
    let live = sessions["tokens"].as_array().unwrap().iter().filter(|t| t["user"] == "olivia").count();
    assert_eq!(live, 0, "her session was revoked: {sessions}");

    // Her groups change at the provider: the next login acts with the new role, in team-a only.
    idp.set_groups("olivia", &["team-a"]);
    c.find(Locator::Id("oidc-login")).await.unwrap().click().await.unwrap();
    through_provider(c, &origin, "olivia").await;
    wait_path(c, "/ui/machines").await;
    assert!(who(c).await.contains("team-a: operator"), "{}", who(c).await);
    let rows = c.find(Locator::Css("#machines tbody")).await.unwrap().text().await.unwrap();
    assert!(rows.contains("52:54:00:0e:00:01") && !rows.contains("52:54:00:0e:00:02"), "{rows}");
    b.shot("72-sso-claim-changed").await;

    // The CLI logs in through the provider too (the device flow): it shows a URL and a code,
    // the user confirms them in a browser and logs in, and the CLI gets the session.
    let out = files.path().join("olivia.token");
    let mut cli = std::process::Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["login", "--sso", "--out"])
        .arg(&out)
        .args(["--api", &lab.https_url(), "--ca"])
        .arg(lab.dir.path().join("tls/ca.pem"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = cli.stderr.take().unwrap();
    let url = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let url = lines.by_ref().map_while(Result::ok).find_map(|l| l.strip_prefix("Open ").map(str::to_string));
        std::thread::spawn(move || lines.for_each(drop));
        url
    })
    .await
    .unwrap()
    .expect("the CLI shows where to log in");
    assert!(url.starts_with(&idp.issuer), "{url}");
    c.goto(&url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let page = c.source().await.unwrap_or_default();
        if page.contains("Sign-in Success") {
            break;
        }
        assert!(Instant::now() < deadline, "the device login did not succeed: {page}");
        if let Ok(go) = c.find(Locator::Css("button[autofocus][form='op.deviceConfirmForm']")).await {
            go.click().await.unwrap();
        } else if let Ok(login) = c.find(Locator::Css("input[name=login]")).await {
            login.send_keys("olivia").await.unwrap();
            c.find(Locator::Css("input[name=password]")).await.unwrap().send_keys("any password").await.unwrap();
            c.find(Locator::Css("button[type=submit]")).await.unwrap().click().await.unwrap();
        } else if let Ok(go) = c.find(Locator::Css("input[name=prompt][value=consent] ~ button")).await {
            go.click().await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    b.shot("73-sso-device-confirmed").await;
    let done = tokio::task::spawn_blocking(move || cli.wait_with_output().unwrap()).await.unwrap();
    let said = String::from_utf8_lossy(&done.stdout).to_string();
    assert!(done.status.success() && said.contains("logged in as olivia"), "{said}");
    let token = std::fs::read_to_string(&out).unwrap();
    let me = crate::api::directory::client(&lab, token.trim()).ok(Method::GET, "/auth/whoami", None).await.unwrap();
    assert_eq!(me["user"], "olivia", "{me}");
    let mine = crate::api::directory::client(&lab, token.trim()).ok(Method::GET, "/machines", None).await.unwrap();
    assert_eq!(mine["total"], 1, "the CLI's session is team-a's too: {mine}");
    b.close().await;
}
