//! Firmware baselines against fake Redfish BMCs with an UpdateService (`bmc_fake::update`):
//! images uploaded by hash (a too-large one refused, leaving nothing), a rack of two placed by
//! CSV, its drift shown, the rack brought to the baseline: on the one BMC each drifting
//! component flashed from the image this appliance serves, the task's progress on the
//! timeline, the machine restarted for the staged BIOS and the versions read back, the drift
//! cleared; on the other the BMC's failure named, nothing tried again.

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{json, Value};
use sha2::Digest;

use super::bios::{boot_at_each_reset, events, machine, run_of, with_image};
use crate::bmc_fake::{self, update, Mode};
use crate::common::appliance::Appliance;

pub(super) fn config(bios: &str, bmc: &str) -> String {
    format!(
        r#"[bmc]
poll_interval_ms = 100
retry_backoff_ms = 50
[firmware]
max_image_mb = 1
update_timeout_secs = 60
[[firmware.baselines]]
name = "gen"
components = [
  {{ component = "bios", version = "{NEW_BIOS}", image = "sha256:{bios}" }},
  {{ component = "bmc", version = "{NEW_BMC}", image = "{bmc}" }},
]
[provision]
[[provision.hardware_profiles]]
name = "gen"
firmware_baseline = "gen"
scripts = ["echo configured after the firmware; exit 3"]
"#,
        NEW_BIOS = update::NEW_BIOS,
        NEW_BMC = update::NEW_BMC
    )
}

pub(super) fn sha(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// An upload's status and answer; 0 when the appliance closed the connection before the body
/// was sent (a declared length past the bound is refused at once).
pub(super) async fn upload(a: &Appliance, bytes: Vec<u8>) -> (u16, Value) {
    let resp =
        match a.api.send(Method::PUT, "/firmware/images", &[("content-type", "application/octet-stream")], bytes).await
        {
            Ok(r) => r,
            Err(e) => return (0, json!(format!("{e:#}"))),
        };
    let status = resp.status().as_u16();
    let body = http_body_util::BodyExt::collect(resp.into_body()).await.map(|b| b.to_bytes()).unwrap_or_default();
    (status, serde_json::from_slice(&body).unwrap_or_default())
}

pub(super) async fn wait_for(a: &Appliance, mac: &str, kind: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ev = events(a, mac).await;
        if ev.iter().any(|e| e["kind"] == kind) {
            return ev;
        }
        assert!(Instant::now() < deadline, "no {kind} on {mac}: {ev:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rack_is_brought_to_its_firmware_baseline_through_its_bmcs() {
    let (bios_img, bmc_img) = (b"BIOS image 2.20.0".repeat(1000), b"BMC image 1.60".to_vec());
    let a = Appliance::start(&config(&sha(&bios_img), &sha(&bmc_img).to_uppercase())).await;

    // Images: refused past the bound (nothing left), kept by hash, the same bytes twice one image.
    let baselines = a.api.ok(Method::GET, "/firmware/baselines", None).await.unwrap();
    assert_eq!(baselines["baselines"][0]["missing_images"].as_array().unwrap().len(), 2, "{baselines}");
    let (status, e) = upload(&a, vec![7u8; (1 << 20) + 1]).await;
    assert!(status == 413 || (status == 0 && e.as_str().unwrap().contains("Broken pipe")), "{status} {e}");
    let list = a.api.ok(Method::GET, "/firmware/images", None).await.unwrap();
    assert_eq!(list["images"], json!([]), "a refused upload leaves nothing");
    let (status, img) = upload(&a, bios_img.clone()).await;
    assert_eq!((status, img["sha256"].as_str()), (201, Some(sha(&bios_img).as_str())), "{img}");
    assert_eq!(upload(&a, bios_img.clone()).await.0, 200, "the same image again");
    assert_eq!(upload(&a, bmc_img.clone()).await.0, 201);
    let list = a.api.ok(Method::GET, "/firmware/images", None).await.unwrap();
    assert_eq!(list["images"].as_array().unwrap().len(), 2, "only the two kept: {list}");
    assert_eq!(list["images"][0]["used_by"], json!(["gen"]), "{list}");
    let (status, _) = a.api.call(Method::DELETE, &format!("/firmware/images/{}", sha(&bmc_img)), None).await.unwrap();
    assert_eq!(status, 409, "a baseline names it");

    // A rack of two, each with its BMC; the good one is on.
    let cert = bmc_fake::cert();
    let good = bmc_fake::start(Mode::Updates, Default::default(), Duration::ZERO, &cert).await;
    let bad = bmc_fake::start(Mode::UpdateFails, Default::default(), Duration::ZERO, &cert).await;
    let (m1, m2) = ("52:54:00:f1:00:01", "52:54:00:f1:00:02");
    a.api
        .ok(Method::POST, "/racks", Some(json!({"name": "r9", "address_plan": "127.0.11.1-127.0.11.8"})))
        .await
        .unwrap();
    for (mac, fake) in [(m1, &good), (m2, &bad)] {
        a.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
        let bmc = json!({"address": format!("127.0.0.1:{}", fake.port), "protocol": "redfish",
            "username": bmc_fake::USER, "password": bmc_fake::PASSWORD, "fingerprint": fake.fingerprint});
        a.api.ok(Method::PUT, &format!("/machines/{mac}/bmc"), Some(bmc)).await.unwrap();
    }
    let csv = format!("mac,hostname,ip,slot\n{m1},fw1,,U2\n{m2},fw2,,U1\n");
    a.api.ok(Method::POST, "/racks/r9/csv", Some(json!({"csv": csv}))).await.unwrap();
    a.api.ok(Method::POST, &format!("/machines/{m1}/power"), Some(json!({"action": "on"}))).await.unwrap();

    // Drift: unknown until read, then the BIOS and the BMC behind.
    let rack = a.api.ok(Method::GET, "/racks/r9/firmware", None).await.unwrap();
    assert_eq!(rack["standing"], "unknown", "{rack}");
    for mac in [m1, m2] {
        a.api.ok(Method::POST, &format!("/machines/{mac}/firmware"), None).await.unwrap();
    }
    let drift = a.api.ok(Method::GET, &format!("/machines/{m1}/firmware/drift"), None).await.unwrap();
    let standing: Vec<(&str, &str)> = drift["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["component"].as_str().unwrap(), c["standing"].as_str().unwrap()))
        .collect();
    assert_eq!(standing, [("bios", "drift"), ("bmc", "drift")], "{drift}");
    let rack = a.api.ok(Method::GET, "/racks/r9/firmware", None).await.unwrap();
    assert_eq!(rack["standing"], "drift", "{rack}");
    assert_eq!(rack["machines"][0]["hostname"], "fw1", "top slot first: {rack}");

    // The rack's update: both start; a second ask while they run is refused.
    let started = a.api.ok(Method::POST, "/racks/r9/firmware/update", Some(json!({}))).await.unwrap();
    assert_eq!(started["started"].as_array().unwrap().len(), 2, "{started}");
    let again = a.api.call(Method::POST, &format!("/machines/{m1}/firmware/update"), Some(json!({}))).await.unwrap();
    assert_eq!(again.0, 409, "{again:?}");

    // The good one: flashed from this appliance's image, progress shown, restarted, current.
    let ev = wait_for(&a, m1, "firmware.updated").await;
    let updated = ev.iter().find(|e| e["kind"] == "firmware.updated").unwrap();
    assert_eq!(updated["detail"]["standing"], "current", "{updated}");
    assert_eq!(updated["detail"]["restarted"], true, "the staged BIOS needed the restart: {updated}");
    let percents: Vec<u64> = ev
        .iter()
        .filter(|e| e["kind"] == "firmware.progress" && e["detail"]["component"] == "bios")
        .filter_map(|e| e["detail"]["percent"].as_u64())
        .collect();
    assert_eq!(percents, [10, 60, 100], "{ev:#?}");
    let flashes = good.fw.lock().unwrap().updates.clone();
    assert_eq!(flashes.len(), 2, "{flashes:?}");
    assert_eq!(flashes[0]["Targets"], json!(["/redfish/v1/Systems/1"]), "the BIOS through its system");
    assert_eq!(flashes[1]["Targets"], json!(["/redfish/v1/UpdateService/FirmwareInventory/BMC"]));
    let uri = flashes[0]["ImageURI"].as_str().unwrap().to_string();
    assert!(uri.ends_with(&format!("/boot/files/firmware/{}", sha(&bios_img))), "{uri}");
    // What the BMC would fetch is the image, served by this appliance.
    let path = uri.split_once("/boot/").map(|(_, p)| format!("/boot/{p}")).unwrap();
    let served = crate::common::http_get(format!("127.0.0.1:{}", a.port).parse().unwrap(), &path).await;
    assert!(served.contains("BIOS image 2.20.0"), "{}", &served[..served.len().min(300)]);
    assert_eq!(good.bios_version(), update::NEW_BIOS);
    assert!(good.resets.lock().unwrap().iter().any(|r| r == "ForceRestart"), "restarted once for the BIOS");

    // The bad one: failed with the BMC's message, tried once.
    let ev = wait_for(&a, m2, "firmware.failed").await;
    let failed = ev.iter().find(|e| e["kind"] == "firmware.failed").unwrap();
    assert!(failed["detail"]["error"].as_str().unwrap().contains("Image verification failed"), "{failed}");
    assert_eq!(failed["detail"]["component"], "bios", "{failed}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(bad.fw.lock().unwrap().updates.len(), 1, "a failed flash is not tried again");

    // The rack: the good one current, the bad one still drifting.
    let rack = a.api.ok(Method::GET, "/racks/r9/firmware", None).await.unwrap();
    let by: Vec<(&str, &str)> = rack["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["hostname"].as_str().unwrap(), m["drift"]["standing"].as_str().unwrap()))
        .collect();
    assert_eq!(by, [("fw1", "current"), ("fw2", "drift")], "{rack}");
}

/// The firmware step of a provisioning run: before anything else the machine is brought to its
/// profile's baseline (the staged BIOS makes the step restart it into BootOS, PXE once), then
/// the run goes on to the profile's script; a flash the BMC fails fails the run at the step,
/// with the BMC's message, tried once.
#[tokio::test(flavor = "multi_thread")]
async fn provisioning_brings_a_machine_to_its_baseline_first() {
    let (bios_img, bmc_img) = (b"BIOS 2.20.0".to_vec(), b"BMC 1.60".to_vec());
    let a = Appliance::start(&config(&sha(&bios_img), &sha(&bmc_img))).await;
    with_image(&a);
    for img in [bios_img, bmc_img] {
        assert_eq!(upload(&a, img).await.0, 201);
    }
    let cert = bmc_fake::cert();
    let good = bmc_fake::start(Mode::Updates, Default::default(), Duration::ZERO, &cert).await;
    let bad = bmc_fake::start(Mode::UpdateFails, Default::default(), Duration::ZERO, &cert).await;
    let machines =
        vec![machine(&a, "52:54:00:f2:00:01", good, "gen").await, machine(&a, "52:54:00:f2:00:02", bad, "gen").await];
    boot_at_each_reset(&a, &machines).await;

    let m = &machines[0];
    let run = run_of(&a, m.task).await;
    assert_eq!(run["step"]["step"], "configure", "past the firmware, at the script: {run}");
    assert!(run["error"].as_str().unwrap().contains("exit code 3"), "{run}");
    let ev = events(&a, m.mac).await;
    let phases: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "provision.step").filter_map(|e| e["detail"]["firmware"].as_str()).collect();
    assert_eq!(phases, ["update", "updated", "verified"], "{ev:#?}");
    assert_eq!(m.fake.bios_version(), update::NEW_BIOS);
    assert_eq!(*m.fake.resets.lock().unwrap(), ["On", "ForceRestart"], "powered on, then restarted once for the BIOS");
    let actions: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "power.action").filter_map(|e| e["detail"]["action"].as_str()).collect();
    assert_eq!(actions, ["pxe-once", "cycle", "pxe-once", "cycle"], "into BootOS each time: {ev:#?}");
    let updated = ev.iter().find(|e| e["kind"] == "firmware.updated").unwrap();
    assert_eq!(
        (updated["detail"]["by"].as_str(), updated["detail"]["standing"].as_str()),
        (Some("provision"), Some("current"))
    );

    let m = &machines[1];
    let run = run_of(&a, m.task).await;
    assert_eq!((run["state"].as_str(), run["step"]["step"].as_str()), (Some("failed"), Some("firmware")), "{run}");
    assert!(run["error"].as_str().unwrap().contains("Image verification failed"), "{run}");
    assert_eq!(m.fake.fw.lock().unwrap().updates.len(), 1, "a failed flash is not tried again");
}

/// The CLI: an image uploaded from its file (streamed, its length declared), again (one image),
/// one past the bound refused before anything is sent; the images with the baseline naming
/// them, the baselines with the image still missing, a machine's drift before any read.
#[tokio::test(flavor = "multi_thread")]
async fn the_cli_uploads_images_and_shows_baselines_and_drift() {
    let image = b"BIOS image for the CLI".to_vec();
    let lab = crate::common::Lab::start(&config(&sha(&image), &"ab".repeat(32))).await;
    let dir = tempfile::tempdir().unwrap();
    let (file, big) = (dir.path().join("bios.bin"), dir.path().join("big.bin"));
    std::fs::write(&file, &image).unwrap();
    std::fs::write(&big, vec![1u8; (1 << 20) + 1]).unwrap();
    let path = |p: &std::path::Path| p.display().to_string();
    let (ok, out) = lab.cli(&["firmware", "upload", &path(&file)]);
    assert!(ok && out.contains(&format!("sha256:{} ({} bytes, stored)", sha(&image), image.len())), "{out}");
    let (ok, out) = lab.cli(&["firmware", "upload", &path(&file)]);
    assert!(ok && out.contains("stored already"), "{out}");
    let (ok, out) = lab.cli(&["firmware", "upload", &path(&big)]);
    assert!(!ok && out.contains("larger than the appliance takes"), "{out}");
    let (ok, out) = lab.cli(&["firmware", "images"]);
    assert!(ok && out.contains(&sha(&image)) && out.contains("gen") && out.lines().count() == 1, "{out}");
    let (ok, out) = lab.cli(&["firmware", "baselines"]);
    assert!(ok && out.contains(update::NEW_BIOS) && out.matches("(image not uploaded)").count() == 1, "{out}");
    lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:f4:00:01"]}))).await.unwrap();
    let (ok, out) = lab.cli(&["firmware", "drift", "52:54:00:f4:00:01"]);
    assert!(ok && out.contains("baseline  gen  (unknown)") && out.contains("never read"), "{out}");
}
