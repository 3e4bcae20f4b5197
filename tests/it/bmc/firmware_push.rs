//! Firmware pushed to a BMC that does not fetch it (`bmc_fake` in `Mode::UpdatesPush`: no
//! `SimpleUpdate`, a `MultipartHttpPushUri` taking 4 KiB at most): the image reaches the BMC
//! whole, as `multipart/form-data` with its `UpdateParameters`, the task is followed to its end
//! and the version read back; an image past the BMC's `MaxImageSizeBytes` is refused before a
//! byte of it is sent, with the reason on the timeline.

use std::time::Duration;

use hyper::Method;
use serde_json::json;

use super::firmware::{config, sha, upload, wait_for};
use crate::bmc_fake::{self, update, Mode};
use crate::common::appliance::Appliance;

#[tokio::test(flavor = "multi_thread")]
async fn images_are_pushed_to_a_bmc_that_does_not_fetch_them() {
    let bios_img = b"BIOS 2.20.0 pushed".repeat(100);
    let bmc_img = vec![9u8; update::MAX_PUSH + 1];
    let a = Appliance::start(&config(&sha(&bios_img), &sha(&bmc_img))).await;
    for img in [bios_img.clone(), bmc_img.clone()] {
        assert_eq!(upload(&a, img).await.0, 201);
    }
    let fake = bmc_fake::start(Mode::UpdatesPush, Default::default(), Duration::ZERO, &bmc_fake::cert()).await;
    let mac = "52:54:00:f3:00:01";
    a.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    let bmc = json!({"address": format!("127.0.0.1:{}", fake.port), "protocol": "redfish",
        "username": bmc_fake::USER, "password": bmc_fake::PASSWORD, "fingerprint": fake.fingerprint});
    a.api.ok(Method::PUT, &format!("/machines/{mac}/bmc"), Some(bmc)).await.unwrap();
    a.api.ok(Method::POST, &format!("/machines/{mac}/power"), Some(json!({"action": "on"}))).await.unwrap();
    a.api.ok(Method::POST, &format!("/machines/{mac}/firmware"), None).await.unwrap();
    a.api.ok(Method::POST, &format!("/machines/{mac}/firmware/update"), Some(json!({}))).await.unwrap();

    let ev = wait_for(&a, mac, "firmware.failed").await;
    let fw = fake.fw.lock().unwrap();
    assert_eq!(fw.pushed.len(), 1, "the BIOS image only: {} pushed", fw.pushed.len());
    assert!(fw.pushed[0] == bios_img, "the image arrived whole ({} bytes)", fw.pushed[0].len());
    assert_eq!(fw.updates[0]["Targets"], json!(["/redfish/v1/Systems/1"]), "{:?}", fw.updates);
    assert_eq!(fw.updates[0]["@Redfish.OperationApplyTime"], "Immediate");
    drop(fw);
    let percents: Vec<u64> = ev
        .iter()
        .filter(|e| e["kind"] == "firmware.progress" && e["detail"]["component"] == "bios")
        .filter_map(|e| e["detail"]["percent"].as_u64())
        .collect();
    assert_eq!(percents, [10, 60, 100], "the pushed image's task followed to its end");
    let failed = ev.iter().find(|e| e["kind"] == "firmware.failed").unwrap();
    assert_eq!(failed["detail"]["component"], "bmc", "{failed}");
    let why = failed["detail"]["error"].as_str().unwrap();
    assert!(why.contains("MaxImageSizeBytes 4096") && why.contains("nothing sent"), "{why}");
}
