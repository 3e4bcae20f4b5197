//! A plugin job run by the real agent (the `rackboot-agent` library) in-process: the bundle is
//! fetched by hash over the agent's TLS client, unpacked, and its `check` and `apply` run with
//! the parameters on stdin; exit codes 0/1/10/20 map to their results on the job and the
//! machine's timeline (plugin, version, signer, result); a timeout kills the whole process
//! group; a bundle whose bytes no longer match its hash is refused before anything runs. A
//! provisioning task whose hardware profile names plugins runs the one that fits as a configure
//! step and reports the one whose `[match]` fits nothing; parameters breaking a plugin's schema
//! refuse the task.

use std::time::Duration;

use crate::common::appliance::Appliance;
use crate::kit::*;
use hyper::Method;
use serde_json::{json, Value};

const MAC: &str = "52:54:00:b0:00:01";

/// check: records its stdin, touches params.marker, exits params.check.
const CHECK: &str = r#"#!/bin/sh
in=$(cat)
echo "check got $in"
m=$(printf '%s' "$in" | sed -n 's/.*"marker":"\([^"]*\)".*/\1/p')
[ -n "$m" ] && touch "$m"
exit $(printf '%s' "$in" | sed -n 's/.*"check":\([0-9]*\).*/\1/p')
"#;

/// apply: exits params.apply; with params.hang, leaves a child in its group and hangs.
const APPLY: &str = r#"#!/bin/sh
in=$(cat)
echo "apply running"
p=$(printf '%s' "$in" | sed -n 's/.*"hang":"\([^"]*\)".*/\1/p')
if [ -n "$p" ]; then sleep 300 & echo $! > "$p"; wait; fi
exit $(printf '%s' "$in" | sed -n 's/.*"apply":\([0-9]*\).*/\1/p')
"#;

const MANIFEST: &str = r#"name = "exits"
version = "1.0.0"
vendor = "rackboot-lab"
[match]
dmi_vendor = ["*"]
[check]
run = "bin/check"
timeout = 10
[apply]
run = "bin/apply"
timeout = 2
reboot = true
[params]
type = "object"
additionalProperties = false
[params.properties.check]
type = "integer"
[params.properties.apply]
type = "integer"
[params.properties.marker]
type = "string"
[params.properties.hang]
type = "string"
"#;

async fn job(a: &Appliance, sha: &str, params: Value, state: &str) -> (Value, String) {
    let action = json!({"kind": "plugin", "name": "exits", "version": "1.0.0", "sha256": sha, "params": params});
    let id = a.submit(json!({"machine": MAC, "action": action, "timeout_secs": 60})).await[0]["id"].as_u64().unwrap();
    let done = a.job_in(id, state, 30).await;
    let out = a.get(&format!("/jobs/{id}/output")).await["text"].as_str().unwrap_or_default().to_string();
    (done, out)
}

async fn last_result(a: &Appliance) -> Value {
    let ev = a.get(&format!("/machines/{MAC}/events")).await;
    ev["events"].as_array().unwrap().iter().rev().find(|e| e["kind"] == "plugin.result").cloned().unwrap_or(Value::Null)
}

/// Trusts a fresh lab key and uploads each manifest with the two scripts; (key, sha256s).
async fn publish(a: &Appliance, keys: &std::path::Path, manifests: &[&str]) -> (Value, Vec<String>) {
    let (public, secret) = keypair(keys, "lab");
    let text = std::fs::read_to_string(public).unwrap();
    let key = a
        .api
        .ok(Method::POST, "/plugin-keys", Some(json!({"vendor": "rackboot-lab", "public_key": text})))
        .await
        .unwrap();
    let mut shas = Vec::new();
    for m in manifests {
        let bundle = tgz(&[
            ("manifest.toml", F, 0o644, m.as_bytes()),
            ("bin/check", F, 0o755, CHECK.as_bytes()),
            ("bin/apply", F, 0o755, APPLY.as_bytes()),
        ]);
        let sig = sign(keys, &secret, &bundle);
        let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
        let (status, up) = a.api.post_form("/plugins", &parts).await.unwrap();
        assert_eq!(status, 201, "{up}");
        shas.push(up["plugin"]["sha256"].as_str().unwrap().to_string());
    }
    (key, shas)
}

async fn inventoried(a: &Appliance) {
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, &format!("/machines/{MAC}"), None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "no inventory yet");
        Ok(())
    })
    .await;
}

fn skip() -> bool {
    if have_minisign() {
        return false;
    }
    eprintln!("SKIPPED: minisign is not installed (tools/setup.sh installs it)");
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_runs_check_and_apply_by_exit_code_and_refuses_a_changed_bundle() {
    if skip() {
        return;
    }
    let a = Appliance::start("").await;
    let keys = tempfile::tempdir().unwrap();
    let (key, shas) = publish(&a, keys.path(), &[MANIFEST]).await;
    let sha = shas[0].clone();
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent(MAC, work.path());
    inventoried(&a).await;

    let cases = [
        (json!({"check": 0}), "succeeded", "unchanged", Some(0)),
        (json!({"check": 20}), "succeeded", "not_applicable", Some(20)),
        (json!({"check": 1, "apply": 0}), "succeeded", "applied", Some(0)),
        (json!({"check": 1, "apply": 10}), "succeeded", "applied_reboot", Some(10)),
        (json!({"check": 7}), "failed", "failed", Some(7)),
        (json!({"check": 1, "apply": 3}), "failed", "failed", Some(3)),
    ];
    for (params, state, result, code) in cases {
        let (done, out) = job(&a, &sha, params.clone(), state).await;
        assert_eq!(done["exit_code"].as_i64(), code.map(i64::from), "{params}: {done}");
        assert!(out.contains(&format!("check got {params}")), "params reach check as JSON on stdin: {out}");
        let ev = last_result(&a).await;
        let d = &ev["detail"];
        assert_eq!(d["result"], result, "{params}: {ev}");
        assert_eq!((d["plugin"].as_str(), d["version"].as_str()), (Some("exits"), Some("1.0.0")));
        assert_eq!(d["signer"], key["key_id"], "{ev}");
        assert_eq!(d["job"], done["id"]);
    }

    // apply past its 2 s timeout: the job times out and its whole process group is killed.
    let pidfile = work.path().join("child.pid");
    let (done, _) =
        job(&a, &sha, json!({"check": 1, "apply": 0, "hang": pidfile.to_str().unwrap()}), "timed_out").await;
    assert!(done["error"].as_str().unwrap().contains("process group"), "{done}");
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    let gone = crate::common::eventually(|| async {
        anyhow::ensure!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "child {pid} still alive");
        Ok(true)
    })
    .await;
    assert!(gone);

    // The blob changed on the appliance after it was stored: the agent refuses it, and check
    // never runs (its marker stays absent).
    let blob = a.dir.path().join("plugins/blobs").join(&sha);
    let mut bytes = std::fs::read(&blob).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();
    let marker = work.path().join("ran");
    let (done, out) = job(&a, &sha, json!({"check": 0, "marker": marker.to_str().unwrap()}), "failed").await;
    assert!(done["error"].as_str().unwrap().contains("sha256 mismatch"), "{done}");
    assert!(out.contains("refusing to run"), "{out}");
    assert!(!marker.exists(), "nothing of the changed bundle ran");
    assert_eq!(last_result(&a).await["detail"]["result"], "failed");

    // A job naming a hash that is not this plugin's is refused at submission.
    let action = json!({"kind": "plugin", "name": "exits", "version": "1.0.0", "sha256": "0".repeat(64), "params": {}});
    let (status, v) = a.api.call(Method::POST, "/jobs", Some(json!({"machine": MAC, "action": action}))).await.unwrap();
    assert_eq!(status, 400, "{v}");
    // Parameters breaking the schema are refused at submission.
    let action =
        json!({"kind": "plugin", "name": "exits", "version": "1.0.0", "sha256": sha, "params": {"check": "zero"}});
    let (status, v) = a.api.call(Method::POST, "/jobs", Some(json!({"machine": MAC, "action": action}))).await.unwrap();
    assert_eq!(status, 400, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("/check: must be integer"), "{v}");
    agent.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;
}

const PROFILES: &str = r#"
[provision]
postinstall_dir = "/nonexistent"
[[provision.hardware_profiles]]
name = "hw"
scripts = ["echo script first"]
[[provision.hardware_profiles.plugins]]
name = "exits"
params = { check = 1, apply = 0 }
[[provision.hardware_profiles.plugins]]
name = "elsewhere"
[[provision.hardware_profiles]]
name = "bad"
[[provision.hardware_profiles.plugins]]
name = "exits"
params = { check = "one" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hardware_profile_runs_its_fitting_plugins_and_reports_the_others() {
    if skip() {
        return;
    }
    let a = Appliance::start(PROFILES).await;
    let keys = tempfile::tempdir().unwrap();
    let elsewhere = MANIFEST
        .replace("name = \"exits\"", "name = \"elsewhere\"")
        .replace("dmi_vendor = [\"*\"]", "dmi_vendor = [\"NoSuchVendor*\"]");
    publish(&a, keys.path(), &[MANIFEST, &elsewhere]).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![7u8; 4096]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let disk = work.path().join("disk.img");
    let agent = a.agent(MAC, work.path());
    inventoried(&a).await;
    // Parameters that break the plugin's schema refuse the task, naming the place.
    let bad = json!({"select": {"macs": [MAC]}, "image": "lab.img", "hardware_profile": "bad", "disk": disk});
    let (status, v) = a.api.call(Method::POST, "/tasks", Some(bad)).await.unwrap();
    assert_eq!(status, 400, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("/check: must be integer"), "{v}");
    let spec =
        json!({"select": {"macs": [MAC]}, "image": "lab.img", "hardware_profile": "hw", "disk": disk, "retries": 0});
    let task = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();
    let run = crate::common::provision::run_where(&a, task, 60, "install", |r| {
        r["state"] != "active" || r["step"]["step"] == "identity" || r["step"]["step"] == "wait_installed"
    })
    .await;
    let ev = a.get(&format!("/machines/{MAC}/events")).await;
    let events = ev["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    let result = events
        .iter()
        .find(|e| e["kind"] == "plugin.result")
        .unwrap_or_else(|| panic!("no plugin.result: {run}\n{kinds:?}"));
    assert_eq!(
        (result["detail"]["plugin"].as_str(), result["detail"]["result"].as_str()),
        (Some("exits"), Some("applied")),
        "{result}"
    );
    let unmatched = events.iter().find(|e| e["kind"] == "plugin.unmatched").expect("a plugin.unmatched event");
    assert_eq!(unmatched["detail"]["plugin"], "elsewhere", "{unmatched}");
    assert_eq!(events.iter().filter(|e| e["kind"] == "plugin.result").count(), 1, "the unmatched plugin did not run");
    agent.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;
}
