//! Firmware on machines without a BMC: a baseline's components name a signed vendor plugin,
//! and the provisioning run's firmware step flashes each in BootOS through the real agent
//! (in-process): the plugin gets the component, the version and the image's URL and SHA-256
//! (its apply fetches the image from the appliance and checks the hash), a flash that asks for
//! a reboot waits for BootOS to come back, each flash is verified by the plugin's check alone,
//! and a flash that did not take fails the run, naming the component, without a second flash.
//! A task whose baseline's plugin would refuse its parameters is refused when it is made.

use std::path::Path;
use std::time::Duration;

use hyper::Method;
use serde_json::{json, Value};

use crate::common::appliance::Appliance;
use crate::common::provision::{run_where, sha256};
use crate::kit::*;

/// check: 0 when the state file holds the version wanted, else 1.
const CHECK: &str = r#"#!/bin/sh
in=$(cat)
want=$(printf '%s' "$in" | sed -n 's/.*"version":"\([^"]*\)".*/\1/p')
state=$(printf '%s' "$in" | sed -n 's/.*"state":"\([^"]*\)".*/\1/p')
echo "check: want $want, have $(cat "$state" 2>/dev/null)"
[ "$(cat "$state" 2>/dev/null)" = "$want" ] && exit 0
exit 1
"#;

/// apply: fetches the image, checks its hash, writes the version (unless `forget`), exits `exit`.
const APPLY: &str = r#"#!/bin/sh
in=$(cat)
field() { printf '%s' "$in" | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"; }
curl -fsS -o image "$(field image_url)" || exit 5
got=$(sha256sum image | cut -d' ' -f1)
[ "$got" = "$(field sha256)" ] || { echo "image hash $got"; exit 4; }
[ "$(field forget)" = "true" ] || printf '%s' "$(field version)" > "$(field state)"
echo "apply: flashed $(field component) to $(field version)"
exit "$(field exit)"
"#;

const MANIFEST: &str = r#"name = "flash-fw"
version = "1.0.0"
vendor = "rackboot-lab"
[match]
dmi_vendor = ["*"]
[check]
run = "bin/check"
timeout = 10
[apply]
run = "bin/apply"
timeout = 20
reboot = true
[params]
type = "object"
required = ["state", "exit", "firmware"]
[params.properties.state]
type = "string"
[params.properties.exit]
type = "integer"
[params.properties.forget]
type = "boolean"
[params.properties.firmware]
type = "object"
"#;

const OK: &str = "52:54:00:f1:00:01";
const FORGETS: &str = "52:54:00:f1:00:02";

fn config(dir: &Path, bios: &str, nic: &str) -> String {
    let state = |n: &str| dir.join(n).display().to_string();
    format!(
        r#"[firmware]
max_image_mb = 1
[[firmware.baselines]]
name = "inband"
components = [
  {{ component = "bios", version = "2.0", image = "{bios}", plugin = {{ name = "flash-fw", params = {{ state = "{b}", exit = 10 }} }} }},
  {{ component = "nic", version = "9.9", image = "{nic}", plugin = {{ name = "flash-fw", params = {{ state = "{n}", exit = 0 }} }} }},
  {{ component = "bmc", version = "7.0", image = "{nic}" }},
]
[[firmware.baselines]]
name = "forgets"
components = [
  {{ component = "nic", version = "9.9", image = "{nic}", plugin = {{ name = "flash-fw", params = {{ state = "{f}", exit = 0, forget = true }} }} }},
]
[[firmware.baselines]]
name = "unusable"
components = [
  {{ component = "nic", version = "9.9", image = "{nic}", plugin = {{ name = "flash-fw", params = {{ state = 5, exit = 0 }} }} }},
]
[provision]
postinstall_dir = "/nonexistent"
[[provision.hardware_profiles]]
name = "inband"
firmware_baseline = "inband"
[[provision.hardware_profiles]]
name = "forgets"
firmware_baseline = "forgets"
[[provision.hardware_profiles]]
name = "unusable"
firmware_baseline = "unusable"
"#,
        b = state("bios"),
        n = state("nic"),
        f = state("forgotten"),
    )
}

/// Trusts a lab key and stores the plugin, signed.
async fn publish(a: &Appliance, keys: &Path) {
    let (public, secret) = keypair(keys, "lab");
    let text = std::fs::read_to_string(public).unwrap();
    let key = json!({"vendor": "rackboot-lab", "public_key": text});
    a.api.ok(Method::POST, "/plugin-keys", Some(key)).await.unwrap();
    let bundle = tgz(&[
        ("manifest.toml", F, 0o644, MANIFEST.as_bytes()),
        ("bin/check", F, 0o755, CHECK.as_bytes()),
        ("bin/apply", F, 0o755, APPLY.as_bytes()),
    ]);
    let sig = sign(keys, &secret, &bundle);
    let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
    let (status, up) = a.api.post_form("/plugins", &parts).await.unwrap();
    assert_eq!(status, 201, "{up}");
}

async fn upload(a: &Appliance, bytes: &[u8]) {
    let headers = [("content-type", "application/octet-stream")];
    let resp = a.api.send(Method::PUT, "/firmware/images", &headers, bytes.to_vec()).await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
}

async fn task(a: &Appliance, mac: &str, profile: &str, disk: &Path) -> u64 {
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "hardware_profile": profile, "disk": disk,
        "retries": 2, "step_timeout_secs": 60});
    a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap()
}

/// The firmware phases the run's timeline shows, as `phase component`.
fn phases(ev: &[Value]) -> Vec<String> {
    ev.iter()
        .filter(|e| e["kind"] == "provision.step" && e["detail"]["firmware"].is_string())
        .map(|e| {
            format!("{} {}", e["detail"]["firmware"].as_str().unwrap(), e["detail"]["component"].as_str().unwrap_or(""))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_bring_a_machine_without_a_bmc_to_its_baseline_in_bootos() {
    if !have_minisign() {
        eprintln!("SKIPPED: minisign is not installed (tools/setup.sh installs it)");
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let (bios_img, nic_img) = (b"BIOS 2.0 for the lab".repeat(100), b"NIC 9.9".to_vec());
    let a = Appliance::start(&config(state.path(), &sha256(&bios_img), &sha256(&nic_img))).await;
    let keys = tempfile::tempdir().unwrap();
    publish(&a, keys.path()).await;
    upload(&a, &bios_img).await;
    upload(&a, &nic_img).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![7u8; 4096]).unwrap();
    std::fs::write(state.path().join("bios"), "1.0").unwrap();

    let work = tempfile::tempdir().unwrap();
    // A baseline whose plugin would not take its parameters refuses the task, naming them.
    let spec = json!({"select": {"macs": [OK]}, "image": "lab.img", "hardware_profile": "unusable"});
    let (status, v) = a.api.call(Method::POST, "/tasks", Some(spec)).await.unwrap();
    assert_eq!(status, 400, "{v}");
    let why = v["detail"].as_str().unwrap();
    assert!(why.contains("firmware baseline \"unusable\", nic 9.9") && why.contains("/state: must be string"), "{why}");
    let agent = a.agent(OK, work.path());
    let t = task(&a, OK, "inband", &work.path().join("disk.img")).await;
    // The BIOS flash asks for a reboot: the run waits for BootOS to come back.
    run_where(&a, t, 60, "the BIOS flashed", |r| r["state"] != "active" || phases_of(r).contains("flash_restart"))
        .await;
    assert_eq!(
        std::fs::read_to_string(state.path().join("bios")).unwrap(),
        "2.0",
        "the image fetched, its hash checked"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let still = a.api.ok(Method::GET, &format!("/tasks/{t}"), None).await.unwrap();
    assert_eq!(still["runs"][0]["step"]["step"], "firmware", "no BootOS back yet: {still}");
    // BootOS comes back (a new agent, enrolled after the reboot): verified, then the NIC.
    agent.abort();
    let agent = a.agent(OK, work.path());
    let run =
        run_where(&a, t, 60, "past the firmware", |r| r["state"] != "active" || r["step"]["step"] != "firmware").await;
    assert_eq!(run["state"], "active", "{run}");
    assert_eq!(std::fs::read_to_string(state.path().join("nic")).unwrap(), "9.9");
    let ev = events(&a, OK).await;
    assert_eq!(
        phases(&ev),
        [
            "flash bios",
            "flash bios",
            "flashed bios",
            "verify bios",
            "verify bios",
            "verified bios",
            "flash nic",
            "flashed nic",
            "verify nic",
            "verified nic"
        ],
        "{ev:#?}"
    );
    let first = ev.iter().find(|e| e["detail"]["firmware"] == "flash").unwrap();
    assert_eq!(first["detail"]["left"], json!(["bmc"]), "the BMC's component: no plugin, no BMC, left: {first}");
    let results: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "plugin.result").map(|e| e["detail"]["result"].as_str().unwrap()).collect();
    assert_eq!(results, ["applied_reboot", "unchanged", "applied", "unchanged"], "each flash, then its check alone");
    agent.abort();

    // A flash that does not take: its verification fails the run, naming the component, and
    // nothing is flashed again although the task allows retries.
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent(FORGETS, work.path());
    let t = task(&a, FORGETS, "forgets", &work.path().join("disk.img")).await;
    let run = run_where(&a, t, 60, "ended", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("nic is not at 9.9 after the flash") && error.contains("still not as wanted"), "{error}");
    let ev = events(&a, FORGETS).await;
    let applies = ev.iter().filter(|e| e["kind"] == "plugin.result" && e["detail"]["apply_exit"].is_number()).count();
    assert_eq!(applies, 1, "one flash, never a second: {ev:#?}");
    agent.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;
}

async fn events(a: &Appliance, mac: &str) -> Vec<Value> {
    let v = a.api.ok(Method::GET, &format!("/machines/{mac}/events?limit=1000"), None).await.unwrap();
    v["events"].as_array().unwrap().clone()
}

/// The phase a run's JSON shows, as text (for a predicate).
fn phases_of(run: &Value) -> String {
    run["firmware"].to_string()
}
