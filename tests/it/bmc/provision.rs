//! Provisioning powers machines that have a BMC up into BootOS: a task over two machines, one
//! with a (fake, pinned) Redfish BMC and one without: the first gets a one-time PXE boot in UEFI
//! mode and is powered on through its BMC, recorded on its timeline; the second keeps today's
//! path (no power action; it waits for its agent). Powered once, a run then waits for the agent.

use std::time::Duration;

use crate::common::appliance::Appliance;
use hyper::Method;
use serde_json::{json, Value};

async fn kinds(a: &Appliance, mac: &str) -> Vec<String> {
    let v = a.api.ok(Method::GET, &format!("/machines/{mac}/events"), None).await.unwrap();
    v["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_powers_up_machines_with_a_bmc_and_leaves_the_others_alone() {
    let a = Appliance::start("[bmc]\npoll_interval_ms = 100\nretry_backoff_ms = 50\n").await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), b"image").unwrap();
    let fake = crate::bmc_fake::start(
        crate::bmc_fake::Mode::Good,
        Default::default(),
        Duration::ZERO,
        &crate::bmc_fake::cert(),
    )
    .await;
    let (with, without) = ("52:54:00:c0:00:01", "52:54:00:c0:00:02");
    for mac in [with, without] {
        a.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    }
    let bmc = json!({"address": format!("127.0.0.1:{}", fake.port), "protocol": "redfish",
        "username": crate::bmc_fake::USER, "password": crate::bmc_fake::PASSWORD, "fingerprint": fake.fingerprint});
    a.api.ok(Method::PUT, &format!("/machines/{with}/bmc"), Some(bmc)).await.unwrap();

    let spec = json!({"select": {"macs": [with, without]}, "image": "lab.img", "disk": "/dev/vda"});
    a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();

    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let k = kinds(&a, with).await;
        if fake.power_state() == "On" && k.iter().filter(|k| *k == "power.action").count() == 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not powered up within 20 s: {k:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let k = kinds(&a, with).await;
    assert!(k.contains(&"provision.power_on".to_string()), "{k:?}");
    let ev = a.api.ok(Method::GET, &format!("/machines/{with}/events"), None).await.unwrap();
    let actions: Vec<&Value> =
        ev["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "power.action").collect();
    assert_eq!(actions[0]["detail"]["action"], "pxe-once");
    assert_eq!(actions[0]["detail"]["uefi"], true, "a machine DHCP never saw is taken to be UEFI");
    assert_eq!(actions[1]["detail"]["action"], "cycle", "cycle: on from off, a restart if it was on");
    assert_eq!(actions[1]["detail"]["by"], "provision");
    assert_eq!(*fake.resets.lock().unwrap(), ["On"], "it was off: powered on, not restarted");

    // Asked once: further passes wait for the agent rather than power it again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(*fake.resets.lock().unwrap(), ["On"]);
    let k = kinds(&a, without).await;
    assert!(!k.iter().any(|k| k.starts_with("power.") || k == "provision.power_on"), "no BMC, no power: {k:?}");
}
