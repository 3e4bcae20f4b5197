//! Boot template overrides through the API: a save is checked, then the next boot script (over
//! plain HTTP) uses it; a refused save changes nothing; a reset goes back; a restart keeps it.

use crate::common::*;
use hyper::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MAC: &str = "52:54:00:7e:00:01";

/// The body of `GET /boot/ipxe?mac=` over the plain HTTP listener, as iPXE fetches it.
async fn boot_script(lab: &Lab, mac: &str) -> String {
    let addr = lab.app.as_ref().unwrap().http_addr;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET /boot/ipxe?mac={mac} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

async fn template(lab: &Lab, name: &str) -> Value {
    lab.api.ok(Method::GET, &format!("/templates/{name}"), None).await.unwrap()
}

/// The default profile script with a marker line after the shebang.
fn marked(default: &str, marker: &str) -> String {
    default.replacen("#!ipxe\n", &format!("#!ipxe\necho {marker} {{{{ mac }}}}\n"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saved_override_is_the_next_boot_script_and_survives_a_restart() {
    let mut lab = Lab::start("").await;
    let list = lab.api.ok(Method::GET, "/templates", None).await.unwrap();
    let names: Vec<&str> = list["templates"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "profile.ipxe",
            "localboot.ipxe",
            "profile.grub",
            "localboot.grub",
            "kickstart",
            "preseed",
            "autoinstall",
            "unattend"
        ]
    );
    assert!(list["templates"].as_array().unwrap().iter().all(|t| t["source"] == "default"), "{list}");

    let before = boot_script(&lab, MAC).await;
    let t = template(&lab, "profile.ipxe").await;
    assert_eq!(t["text"], t["default_text"]);
    let default = t["default_text"].as_str().unwrap().to_string();
    let text = marked(&default, "edited-by-ops");

    // A preview renders for this (unknown: discovery) machine and saves nothing.
    let p = lab
        .api
        .ok(Method::POST, "/templates/profile.ipxe/preview", Some(json!({"text": text, "mac": MAC})))
        .await
        .unwrap();
    assert!(p["output"].as_str().unwrap().contains(&format!("echo edited-by-ops {MAC}\n")), "{p}");
    assert_eq!(p["plan"], "profile discovery");
    assert_eq!(boot_script(&lab, MAC).await, before, "a preview changes nothing");

    let saved = lab.api.ok(Method::PUT, "/templates/profile.ipxe", Some(json!({"text": text}))).await.unwrap();
    assert_eq!((saved["source"].as_str(), saved["changed_by"].as_str()), (Some("override"), Some("admin")), "{saved}");
    let after = boot_script(&lab, MAC).await;
    assert_eq!(after, before.replacen("#!ipxe\n", &format!("#!ipxe\necho edited-by-ops {MAC}\n"), 1));

    let audit = lab.api.ok(Method::GET, "/audit?limit=5", None).await.unwrap();
    assert!(
        audit["entries"].as_array().unwrap().iter().any(|e| e["route"] == "/templates/{name}" && e["method"] == "PUT"),
        "{audit}"
    );

    // The ports change with a restart; the override's line stays.
    lab.restart().await;
    assert_eq!(template(&lab, "profile.ipxe").await["source"], "override");
    let marker = format!("#!ipxe\necho edited-by-ops {MAC}\n");
    let restarted = boot_script(&lab, MAC).await;
    assert!(restarted.starts_with(&marker), "the override survives a restart: {restarted}");

    let reset = lab.api.ok(Method::DELETE, "/templates/profile.ipxe", None).await.unwrap();
    assert_eq!(reset["source"], "default");
    assert_eq!(reset["text"], default.as_str());
    let back = boot_script(&lab, MAC).await;
    assert_eq!(back, restarted.replacen(&marker, "#!ipxe\n", 1), "a reset restores the default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_templates_are_refused_and_change_nothing() {
    let lab = Lab::start("").await;
    let before = boot_script(&lab, MAC).await;
    let put = |name: &str, text: String| {
        let api = &lab.api;
        let path = format!("/templates/{name}");
        async move { api.call(Method::PUT, &path, Some(json!({ "text": text }))).await.unwrap() }
    };

    // A syntax error: refused with the template's line.
    let (st, p) = put("profile.ipxe", "#!ipxe\necho one\n{% if uefi %}\necho two\n".into()).await;
    assert_eq!(st, 400, "{p}");
    assert_eq!(p["field"], "text");
    assert!(p["detail"].as_str().unwrap().contains("ipxe/profile.ipxe:"), "the line is named: {p}");
    // An unknown variable (strict rendering).
    let (st, p) = put("localboot.ipxe", "#!ipxe\nsanboot {{ no_such_disk }}\n".into()).await;
    assert_eq!(st, 400, "{p}");
    assert!(p["detail"].as_str().unwrap().contains("undefined"), "{p}");
    // Over 64 KiB.
    let (st, p) = put("preseed", format!("# {}\n", "x".repeat(64 << 10))).await;
    assert_eq!(st, 413, "{p}");
    // Not an editable template.
    let (st, p) = put("identity.sh", "#!/bin/sh\n".into()).await;
    assert_eq!(st, 404, "{p}");
    assert_eq!(lab.api.call(Method::GET, "/templates/nope", None).await.unwrap().0, 404);
    assert_eq!(lab.api.call(Method::DELETE, "/templates/nope", None).await.unwrap().0, 404);
    let (st, _) =
        lab.api.call(Method::POST, "/templates/nope/preview", Some(json!({"text": "x", "mac": MAC}))).await.unwrap();
    assert_eq!(st, 404);
    // A bad MAC in a preview.
    let (st, p) = lab
        .api
        .call(Method::POST, "/templates/localboot.ipxe/preview", Some(json!({"text": "#!ipxe\n", "mac": "zz"})))
        .await
        .unwrap();
    assert_eq!((st, p["field"].as_str()), (400, Some("mac")), "{p}");

    let list = lab.api.ok(Method::GET, "/templates", None).await.unwrap();
    assert!(list["templates"].as_array().unwrap().iter().all(|t| t["source"] == "default"), "nothing stored: {list}");
    assert_eq!(boot_script(&lab, MAC).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reads_but_cannot_change_or_preview() {
    let lab = Lab::start("").await;
    let (st, t) = lab.api.call(Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await.unwrap();
    assert_eq!(st, 201, "{t}");
    let viewer = rackboot::client::ApiClient::new(
        &lab.https_url(),
        t["secret"].as_str().unwrap().into(),
        lab.app.as_ref().unwrap().ca_pem.as_bytes(),
    )
    .unwrap();
    assert_eq!(viewer.call(Method::GET, "/templates", None).await.unwrap().0, 200);
    assert_eq!(viewer.call(Method::GET, "/templates/kickstart", None).await.unwrap().0, 200);
    let body = json!({"text": "#!ipxe\nexit\n"});
    assert_eq!(viewer.call(Method::PUT, "/templates/localboot.ipxe", Some(body)).await.unwrap().0, 403);
    assert_eq!(viewer.call(Method::DELETE, "/templates/localboot.ipxe", None).await.unwrap().0, 403);
    let preview = json!({"text": "#!ipxe\nexit\n", "mac": MAC});
    assert_eq!(viewer.call(Method::POST, "/templates/localboot.ipxe/preview", Some(preview)).await.unwrap().0, 403);
    assert_eq!(template(&lab, "localboot.ipxe").await["source"], "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_file_preview_uses_the_machines_name_and_the_cli_round_trips() {
    let lab = Lab::start("").await;
    let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [MAC], "hostname": "web-07"}))).await.unwrap();
    assert!(m["id"].as_u64().is_some(), "{m}");
    let text = "# host {{ hostname }} mac {{ mac }}\n";
    let p = lab
        .api
        .ok(Method::POST, "/templates/kickstart/preview", Some(json!({"text": text, "mac": MAC})))
        .await
        .unwrap();
    assert_eq!(p["output"], format!("# host web-07 mac {MAC}\n"));
    // The Windows answer file previews the same way, escaped for XML.
    let xml = "<ComputerName>{{ computer_name }}</ComputerName><X>{{ mac }} {{ media }} {{ share_address }}</X>\n";
    let p =
        lab.api.ok(Method::POST, "/templates/unattend/preview", Some(json!({"text": xml, "mac": MAC}))).await.unwrap();
    assert_eq!(p["output"], format!("<ComputerName>web-07</ComputerName><X>{MAC} sample 127.0.0.1</X>\n"), "{p}");

    let file = lab.dir.path().join("ks.cfg");
    std::fs::write(&file, text).unwrap();
    let (ok, out) = lab.cli(&["templates", "set", "kickstart", file.to_str().unwrap()]);
    assert!(ok, "{out}");
    let (ok, out) = lab.cli(&["templates", "list"]);
    assert!(ok && out.lines().any(|l| l.starts_with("kickstart") && l.contains("override")), "{out}");
    let (ok, out) = lab.cli(&["templates", "show", "kickstart"]);
    assert!(ok && out.starts_with(text), "{out}");
    std::fs::write(&file, "{{ broken").unwrap();
    let (ok, out) = lab.cli(&["templates", "set", "kickstart", file.to_str().unwrap()]);
    assert!(!ok && out.contains("syntax error"), "{out}");
    let (ok, out) = lab.cli(&["templates", "reset", "kickstart"]);
    assert!(ok, "{out}");
    assert_eq!(template(&lab, "kickstart").await["source"], "default");
}
