//! REST API, CLI and process lifecycle, against the whole appliance.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::*;
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

#[tokio::test]
async fn every_api_call_needs_the_token() {
    let lab = Lab::start("").await;
    let base = lab.https_url();
    for token in ["", "wrong"] {
        let c = ApiClient::new(&base, token.into(), lab.ca_pem().as_bytes()).unwrap();
        let (status, body) = c.call(Method::GET, "/machines", None).await.unwrap();
        assert_eq!(status, 401, "{body}");
        let (status, _) =
            c.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:00:00:01"]}))).await.unwrap();
        assert_eq!(status, 401);
    }
    let token = std::fs::read_to_string(lab.dir.path().join("admin.token")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(lab.dir.path().join("admin.token")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(token.trim(), lab.app.as_ref().unwrap().admin_token);
}

#[tokio::test]
async fn machines_crud_search_and_errors() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    let m = api
        .ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:01"], "hostname": "web01", "reserved_ip": "198.18.0.21", "tags": ["rack1", "web"]})))
        .await
        .unwrap();
    let id = m["id"].as_u64().unwrap();
    api.ok(
        Method::POST,
        "/machines",
        Some(json!({"macs": ["52:54:00:aa:00:02"], "hostname": "db01", "tags": ["rack2"]})),
    )
    .await
    .unwrap();

    let (status, err) =
        api.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:01"]}))).await.unwrap();
    assert_eq!(status, 409, "{err}");
    assert!(err["detail"].as_str().unwrap().contains("52:54:00:aa:00:01"));
    let (status, err) = api.call(Method::POST, "/machines", Some(json!({"macs": ["nope"]}))).await.unwrap();
    assert_eq!(status, 400);
    assert!(err["detail"].as_str().unwrap().contains("invalid MAC"), "{err}");
    let (status, _) = api
        .call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:03"], "hostname": "bad_name!"})))
        .await
        .unwrap();
    assert_eq!(status, 400);
    let (status, _) = api
        .call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:04"], "reserved_ip": "198.18.0.21"})))
        .await
        .unwrap();
    assert_eq!(status, 409, "reserved IP already taken");
    let (status, _) =
        api.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:00:05"], "surprise": 1}))).await.unwrap();
    assert_eq!(status, 400, "unknown fields are refused, not ignored");

    let by_mac = api.ok(Method::GET, "/machines/52-54-00-AA-00-01", None).await.unwrap();
    assert_eq!(by_mac["id"].as_u64(), Some(id));
    let found = api.ok(Method::GET, "/machines?q=web", None).await.unwrap();
    assert_eq!(found["total"], 1);
    let found = api.ok(Method::GET, "/machines?tag=rack2", None).await.unwrap();
    assert_eq!(found["machines"][0]["hostname"], "db01");
    let found = api.ok(Method::GET, "/machines?state=installed", None).await.unwrap();
    assert_eq!(found["total"], 0);
    let (status, _) = api.call(Method::GET, "/machines?state=bogus", None).await.unwrap();
    assert_eq!(status, 400);

    let patched = api
        .ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"hostname": "web02", "tags": ["rack1"]})))
        .await
        .unwrap();
    assert_eq!((patched["hostname"].as_str(), patched["reserved_ip"].as_str()), (Some("web02"), Some("198.18.0.21")));
    let (status, _) =
        api.call(Method::PATCH, &format!("/machines/{id}"), Some(json!({"hostname": "db01"}))).await.unwrap();
    assert_eq!(status, 409);

    let events = api.ok(Method::GET, &format!("/machines/{id}/events"), None).await.unwrap();
    assert_eq!(events["events"].as_array().unwrap().len(), 2);

    let (status, _) = api.call(Method::DELETE, &format!("/machines/{id}"), None).await.unwrap();
    assert_eq!(status, 204);
    let (status, _) = api.call(Method::GET, &format!("/machines/{id}"), None).await.unwrap();
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_health_and_metrics_are_served() {
    let lab = Lab::start("").await;
    let doc = lab.api.ok(Method::GET, "/openapi.json", None).await.unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/machines",
        "/machines/{id}",
        "/machines/{id}/events",
        "/leases",
        "/profiles",
        "/profiles/{name}",
        "/jobs",
        "/jobs/{id}",
        "/jobs/{id}/output",
        "/jobs/{id}/cancel",
        "/machines/{id}/approve",
        "/machines/{id}/agent",
        "/tasks",
        "/tasks/{id}",
        "/tasks/{id}/cancel",
        "/appliances",
    ] {
        assert!(paths.contains_key(p), "openapi lacks {p}");
    }
    // One appliance (on either store): this one, alive, at its HTTPS address.
    let list = lab.api.ok(Method::GET, "/appliances", None).await.unwrap();
    let all = list["appliances"].as_array().unwrap();
    assert_eq!(all.len(), 1, "{list}");
    assert_eq!((&all[0]["this"], &all[0]["alive"]), (&serde_json::json!(true), &serde_json::json!(true)), "{list}");
    let https = lab.app.as_ref().unwrap().https_addr;
    assert_eq!(all[0]["https_base"], format!("https://{https}"), "{list}");
    assert_eq!(all[0]["version"], env!("CARGO_PKG_VERSION"));
    let addr = lab.app.as_ref().unwrap().http_addr;
    // The lab's boot directory is empty: /healthz says what is missing (tests/it/api/assets.rs has more).
    let health = http_get(addr, "/healthz").await;
    assert!(health.starts_with("HTTP/1.0 503") && health.contains("undionly.kpxe"), "{health}");
    four_way(&lab, [0x52, 0x54, 0, 0, 7, 1], 1).await;
    // A reply is counted once it is sent, which can be a moment after the client has it.
    let (tls_addr, ca) = (lab.app.as_ref().unwrap().https_addr, lab.ca_pem());
    let token = lab.app.as_ref().unwrap().admin_token.clone();
    crate::common::eventually(|| async {
        let (_, metrics) = https_get_with(tls_addr, &ca, "/metrics", Some(&token)).await;
        for name in [
            "rackboot_dhcp_packets_received_total{type=\"discover\"} 1",
            "rackboot_dhcp_packets_sent_total{type=\"ack\"} 1",
            "rackboot_http_requests_total",
            // Read when /metrics is: the CMDB's machines by state and pool, the empty boot
            // directory's missing assets, no BMC held off.
            "rackboot_machines{state=\"discovered\",pool=\"default\"} 1",
            "rackboot_bmc_auth_holds 0",
        ] {
            anyhow::ensure!(metrics.contains(name), "metrics lack {name}:\n{metrics}");
        }
        let missing = metrics.lines().find_map(|l| l.strip_prefix("rackboot_boot_assets_missing "));
        anyhow::ensure!(missing.is_some_and(|n| n != "0"), "boot assets missing: {missing:?}");
        // Every metric the shipped alert rules and dashboard name is one rackboot exports: in this
        // scrape, or (a labelled family shows nothing until its first sample, e.g. a packet
        // panic) registered by name in the exporter.
        let exporter = include_str!("../../../crates/rackboot-base/src/metrics.rs");
        for file in ["rackboot-rules.yml", "rackboot-dashboard.json"] {
            let text = std::fs::read_to_string(format!("{}/dist/prometheus/{file}", env!("CARGO_MANIFEST_DIR")))?;
            let names: std::collections::BTreeSet<&str> = text
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("rackboot_"))
                .collect();
            anyhow::ensure!(names.len() >= 8, "{file}: {names:?}");
            for name in names {
                let family = name.trim_end_matches("_total").trim_end_matches("_bucket");
                let registered = exporter.contains(&format!("\"{}\"", family.trim_start_matches("rackboot_")));
                let scraped = metrics.contains(&format!("# TYPE {family} "));
                anyhow::ensure!(scraped || registered, "{file} names {name}, which is not exported");
            }
        }
        Ok(())
    })
    .await;
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rackboot"))
}

// Multi-threaded: the CLI runs as a blocking child process while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_machines_add_list_show_rm() {
    let lab = Lab::start("").await;
    let api = lab.https_url();
    let token_file = lab.dir.path().join("admin.token");
    let ca = lab.dir.path().join("tls/ca.pem");
    let run = |args: &[&str]| {
        let out = bin()
            .arg("machines")
            .args(args)
            .arg("--api")
            .arg(&api)
            .arg("--ca")
            .arg(&ca)
            .arg("--token-file")
            .arg(&token_file)
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let (ok, out) = run(&["add", "52:54:00:bb:00:01", "--hostname", "cli01", "--ip", "198.18.0.77", "--tag", "rack3"]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["list", "-q", "cli"]);
    assert!(ok && out.contains("cli01") && out.contains("198.18.0.77") && out.contains("1 machine(s)"), "{out}");
    let (ok, out) = run(&["show", "52:54:00:bb:00:01"]);
    assert!(ok && out.contains("\"rack3\""), "{out}");
    let (ok, out) = run(&["add", "52:54:00:bb:00:01"]);
    assert!(!ok && out.contains("409"), "duplicate must fail loudly: {out}");
    let (ok, out) = run(&["rm", "52:54:00:bb:00:01"]);
    assert!(ok, "{out}");
    let (ok, out) = run(&["show", "52:54:00:bb:00:01"]);
    assert!(!ok && out.contains("404"), "{out}");
    // A token is taken only from a file: never from an argument or the environment, where every
    // user on the host could read it (ps, /proc/PID/environ).
    let token = std::fs::read_to_string(&token_file).unwrap();
    let out =
        bin().args(["machines", "list", "--api", &api, "--token", token.trim()]).arg("--ca").arg(&ca).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("unexpected argument '--token'"), "{said}");
    let out = bin()
        .args(["machines", "list", "--api", &api, "--token-file", "/nonexistent/token"])
        .arg("--ca")
        .arg(&ca)
        .env("RACKBOOT_TOKEN", token.trim())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("/nonexistent/token"), "the environment was used: {said}");
}

#[test]
fn serve_stops_cleanly_on_sigterm_and_fails_loudly_on_a_bad_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("rackboot.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\ndata_dir = \"{}\"\n[http]\nlisten = \"127.0.0.1:0\"\n[https]\nlisten = \"127.0.0.1:0\"\n[dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let child =
        bin().args(["serve", "--config"]).arg(&cfg).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let token = dir.path().join("admin.token");
    for _ in 0..100 {
        if token.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("admin token created"));
    assert!(dir.path().join("rackboot.redb").exists());

    // The port is taken: the process exits non-zero and says why.
    let blocker = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(
        &cfg,
        format!(
            "[server]\ndata_dir = \"{}\"\n[http]\nlisten = \"{}\"\n[https]\nlisten = \"127.0.0.1:0\"\n[dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n",
            dir.path().display(),
            blocker.local_addr().unwrap()
        ),
    )
    .unwrap();
    let out = bin().args(["serve", "--config"]).arg(&cfg).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("binding http"), "{}", String::from_utf8_lossy(&out.stderr));

    // A bad config is refused with the key that is wrong.
    std::fs::write(&cfg, "[dhcp]\nmode = \"everything\"\n").unwrap();
    let out = bin().args(["serve", "--config"]).arg(&cfg).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dhcp.mode"));
}

// Multi-threaded: the CLI runs as a blocking child process while the server answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rackboot_api_makes_any_call_with_the_clis_token_and_refuses_a_bad_body_before_sending() {
    let lab = Lab::start("").await;
    let (ok, out) =
        lab.cli(&["api", "post", "/machines", "--data", r#"{"macs": ["52:54:00:00:07:01"], "hostname": "cli-01"}"#]);
    assert!(ok, "{out}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["hostname"], "cli-01", "{out}");
    let body = lab.dir.path().join("patch.json");
    std::fs::write(&body, r#"{"tags": ["web"]}"#).unwrap();
    let (ok, out) = lab.cli(&["api", "PATCH", "/machines/cli-01-is-no-id", "--data", &format!("@{}", body.display())]);
    assert!(!ok && out.contains("400"), "not an id or MAC: {out}");
    let (ok, out) =
        lab.cli(&["api", "PATCH", "/machines/52:54:00:00:07:01", "--data", &format!("@{}", body.display())]);
    assert!(ok, "{out}");
    let (ok, out) = lab.cli(&["api", "GET", "/machines?tag=web&limit=5"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert!(ok && listed["total"] == 1 && listed["machines"][0]["hostname"] == "cli-01", "{out}");
    // An error status fails the command, with the problem printed.
    let (ok, out) = lab.cli(&["api", "GET", "/machines/52:54:00:00:07:99"]);
    assert!(!ok && out.contains("404") && out.contains("problem"), "{out}");
    // A body that is not JSON is refused before anything is sent; so is a path outside /api/v1's form.
    let (ok, out) = lab.cli(&["api", "POST", "/machines", "--data", "{macs: nope"]);
    assert!(!ok && out.contains("not JSON"), "{out}");
    let (ok, out) = lab.cli(&["api", "GET", "machines"]);
    assert!(!ok && out.contains("starts with /"), "{out}");
    let all = lab.api.ok(Method::GET, "/machines", None).await.unwrap();
    assert_eq!(all["total"], 1, "nothing else was made: {all}");
}
