//! BIOS settings as a provisioning step, against the fake Redfish BMC (settings wait for the
//! next reset, as on real servers): four machines, each with its own BMC and a BootOS agent
//! that boots again when its BMC restarts it.
//!
//! - `tuned`: the setting that differs is written (asking for OnReset), the machine restarted
//!   into BootOS, read back as declared; the run goes on to the profile's script.
//! - `refused`: a value the BMC refuses fails the run at once, naming the attribute; nothing
//!   restarted.
//! - `missing`: an attribute the BMC does not have fails the run before anything is written.
//! - `lost`: a setting the BMC takes but drops at the reset fails the run after the read-back,
//!   naming what it reports.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{json, Value};

use crate::bmc_fake::{self, Fake, Mode};
use crate::common::appliance::Appliance;

const CONFIG: &str = r#"[bmc]
poll_interval_ms = 100
retry_backoff_ms = 50
[provision]
[[provision.hardware_profiles]]
name = "tuned"
scripts = ["echo configured after the BIOS; exit 3"]
[provision.hardware_profiles.bios]
ProcVirtualization = "Enabled"
EmbeddedSata = "Ahci"
NumCores = 8
[[provision.hardware_profiles]]
name = "refused"
[provision.hardware_profiles.bios]
EmbeddedSata = "Nvme"
[[provision.hardware_profiles]]
name = "missing"
[provision.hardware_profiles.bios]
NoSuchAttribute = "On"
[[provision.hardware_profiles]]
name = "lost"
[provision.hardware_profiles.bios]
QuietBoot = false
"#;

/// A machine: its MAC, its BMC, and its BootOS agent, booted again after each restart.
pub(crate) struct Machine {
    pub mac: &'static str,
    pub fake: Arc<Fake>,
    pub task: u64,
}

pub(crate) async fn events(a: &Appliance, mac: &str) -> Vec<Value> {
    let v = a.api.ok(Method::GET, &format!("/machines/{mac}/events?limit=1000"), None).await.unwrap();
    v["events"].as_array().unwrap().clone()
}

pub(crate) async fn run_of(a: &Appliance, task: u64) -> Value {
    a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap()["runs"][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_profile_s_bios_settings_are_written_restarted_into_and_read_back() {
    let a = Appliance::start(CONFIG).await;
    with_image(&a);
    let cert = bmc_fake::cert();
    let mut machines = Vec::new();
    for (i, profile) in ["tuned", "refused", "missing", "lost"].into_iter().enumerate() {
        let mac = format!("52:54:00:b1:00:0{}", i + 1);
        machines.push(
            machine(&a, &mac, bmc_fake::start(Mode::Good, Default::default(), Duration::ZERO, &cert).await, profile)
                .await,
        );
    }

    boot_at_each_reset(&a, &machines).await;

    // tuned: EmbeddedSata written (ProcVirtualization was pending already and came with the
    // power-on; NumCores was set), restarted through the BMC, read back, on to the script.
    let m = &machines[0];
    let run = run_of(&a, m.task).await;
    assert_eq!(run["state"], "failed", "{run}");
    assert_eq!(run["step"]["step"], "configure", "past the BIOS step, at the script: {run}");
    assert!(run["error"].as_str().unwrap().contains("exit code 3"), "{run}");
    let bios = m.fake.bios.lock().unwrap().0.clone();
    assert_eq!((bios["EmbeddedSata"].as_str(), bios["ProcVirtualization"].as_str()), (Some("Ahci"), Some("Enabled")));
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On", "ForceRestart"], "powered on, then restarted once for the BIOS");
    let patched: Vec<String> = m.fake.paths().into_iter().filter(|p| p.ends_with("/Bios/Settings")).collect();
    assert!(!patched.is_empty(), "the settings object was used");
    let ev = events(&a, m.mac).await;
    let phases: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "provision.step").filter_map(|e| e["detail"]["bios"].as_str()).collect();
    assert_eq!(phases, ["apply", "written", "verify", "verified"], "{ev:?}");
    let written = ev.iter().find(|e| e["detail"]["bios"] == "written").unwrap();
    assert_eq!(written["detail"]["attributes"], json!(["EmbeddedSata"]), "only what differed is written");
    let actions: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "power.action").filter_map(|e| e["detail"]["action"].as_str()).collect();
    assert_eq!(actions, ["pxe-once", "cycle", "pxe-once", "cycle"], "PXE once before each start, into BootOS");
    // The read-back is kept on the BMC record.
    let fw = a.api.ok(Method::GET, &format!("/machines/{}/firmware", m.mac), None).await.unwrap();
    assert_eq!(fw["bios"]["EmbeddedSata"], "Ahci", "{fw}");

    // refused: named, not retried, nothing restarted for it.
    let m = &machines[1];
    let run = run_of(&a, m.task).await;
    let error = run["error"].as_str().unwrap();
    assert_eq!((run["state"].as_str(), run["step"]["step"].as_str()), (Some("failed"), Some("bios")), "{run}");
    assert!(error.contains("EmbeddedSata") && error.contains("not in the list of acceptable values"), "{error}");
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On"], "no restart for refused settings");

    // missing: refused before anything was written.
    let m = &machines[2];
    let run = run_of(&a, m.task).await;
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("NoSuchAttribute (no such attribute on this BMC)"), "{error}");
    assert!(!m.fake.paths().iter().any(|p| p.ends_with("/Bios/Settings")), "nothing written");

    // lost: taken, restarted into, then reported otherwise.
    let m = &machines[3];
    let run = run_of(&a, m.task).await;
    let error = run["error"].as_str().unwrap();
    assert_eq!(run["step"]["step"], "bios", "{run}");
    assert!(error.contains("after the restart the BMC reports QuietBoot (wanted false, is true)"), "{error}");
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On", "ForceRestart"]);
}

/// The image tasks install (`lab.img`, in the appliance's boot directory).
pub(crate) fn with_image(a: &Appliance) {
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), b"image").unwrap();
}

/// A machine `mac` whose BMC is `fake`, with a task installing `lab.img` under hardware profile
/// `profile` (no retries, a minute per step).
pub(crate) async fn machine(a: &Appliance, mac: &str, fake: Arc<Fake>, profile: &str) -> Machine {
    let mac: &'static str = Box::leak(mac.to_string().into_boxed_str());
    a.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    let bmc = json!({"address": format!("127.0.0.1:{}", fake.port), "protocol": "redfish",
        "username": bmc_fake::USER, "password": bmc_fake::PASSWORD, "fingerprint": fake.fingerprint});
    a.api.ok(Method::PUT, &format!("/machines/{mac}/bmc"), Some(bmc)).await.unwrap();
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "disk": "/dev/null",
        "hardware_profile": profile, "retries": 0, "step_timeout_secs": 60});
    let t = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();
    Machine { mac, fake, task: t["task"]["id"].as_u64().unwrap() }
}

/// Each machine's BootOS: it boots when its BMC powers it on, and again at each restart,
/// until every machine's run has ended (a minute at most).
pub(crate) async fn boot_at_each_reset(a: &Appliance, machines: &[Machine]) {
    let work = tempfile::tempdir().unwrap();
    let mut agents: Vec<(usize, tokio::task::JoinHandle<()>)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut ended = 0;
        for (i, m) in machines.iter().enumerate() {
            let resets = m.fake.resets.lock().unwrap().len();
            let booted = agents.iter().filter(|(j, _)| *j == i).count();
            if resets > booted {
                // A new boot: the old agent is gone with the old boot.
                if let Some((_, h)) = agents.iter().rev().find(|(j, _)| *j == i) {
                    h.abort();
                }
                tokio::time::sleep(Duration::from_millis(1100)).await;
                let dir = work.path().join(format!("{i}-{resets}"));
                std::fs::create_dir_all(&dir).unwrap();
                agents.push((i, a.agent(m.mac, Path::new(&dir))));
            }
            if run_of(a, m.task).await["state"] != "active" {
                ended += 1;
            }
        }
        if ended == machines.len() {
            break;
        }
        assert!(Instant::now() < deadline, "runs not ended: {:?}", all_runs(a, machines).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for (_, h) in &agents {
        h.abort();
    }
}

async fn all_runs(a: &Appliance, machines: &[Machine]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in machines {
        out.push(run_of(a, m.task).await);
    }
    out
}
