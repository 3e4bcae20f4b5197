//! The firmware page and the rack page's firmware button in a real browser (headless Chromium,
//! the appliance's certificate pinned): an operator uploads an image through the form (streamed
//! to the API, audited as theirs) and sees it listed against the baseline that names it; one
//! past `firmware.max_image_mb` is refused with the reason and stores nothing; the rack's
//! button starts what it can and says why not for the rest (a machine with no BMC); a viewer
//! sees neither form. Skips with "SKIPPED: ..." without chromium.

use std::time::Duration;

use crate::browser::Browser;
use crate::common::appliance::Appliance;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::json;
use sha2::Digest;

const PASSWORD: &str = "correct horse battery";

/// Sends the upload form with `file`; the text of the notice or error that comes.
async fn send(c: &Client, file: &std::path::Path) -> String {
    c.find(Locator::Id("f-image")).await.unwrap().send_keys(&file.display().to_string()).await.unwrap();
    crate::browser::click_to_new_page(c, Locator::Id("f-submit")).await;
    let shown = c.wait().at_most(Duration::from_secs(20)).for_element(Locator::Css("#notice, #error")).await.unwrap();
    shown.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_uploads_firmware_and_brings_a_rack_to_its_baseline_from_the_ui() {
    let image = b"BIOS 3.1.4 for the lab".to_vec();
    let sha: String = sha2::Sha256::digest(&image).iter().map(|b| format!("{b:02x}")).collect();
    let config = format!(
        "[firmware]\nmax_image_mb = 1\n[[firmware.baselines]]\nname = \"lab\"\ncomponents = [{{ component = \"bios\", version = \"3.1.4\", image = \"{sha}\" }}]\n[provision]\n[[provision.hardware_profiles]]\nname = \"lab\"\nfirmware_baseline = \"lab\"\n"
    );
    let app = Appliance::start(&config).await;
    let pin = crate::browser::spki_pin(&app.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = app.url();
    for (name, role) in [("olga", "operator"), ("vic", "viewer")] {
        app.api
            .ok(Method::POST, "/users", Some(json!({"name": name, "role": role, "password": PASSWORD})))
            .await
            .unwrap();
    }
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("bios.bin"), &image).unwrap();
    std::fs::write(files.path().join("huge.bin"), vec![0u8; (1 << 20) + 10]).unwrap();

    crate::browser::login(c, &origin, "olga", PASSWORD).await;
    c.find(Locator::LinkText("Firmware")).await.unwrap().click().await.unwrap();
    if c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("upload")).await.is_err() {
        panic!("no upload form: {}", c.source().await.unwrap());
    }
    let listed = c.find(Locator::Id("baselines")).await.unwrap().text().await.unwrap();
    assert!(listed.contains("lab") && listed.contains("3.1.4") && listed.contains("not uploaded"), "{listed}");

    let said = send(c, &files.path().join("huge.bin")).await;
    assert!(said.contains("refused") && said.contains("larger than"), "{said}");
    assert_eq!(app.get("/firmware/images").await["images"], json!([]), "a refused image stored something");
    b.shot("40-firmware-refused").await;

    let said = send(c, &files.path().join("bios.bin")).await;
    assert!(said.contains(&sha) && said.contains("uploaded"), "{said}");
    let listed = c.find(Locator::Id("images")).await.unwrap().text().await.unwrap();
    assert!(listed.contains(&sha) && listed.contains("lab"), "listed with the baseline naming it: {listed}");
    let baselines = c.find(Locator::Id("baselines")).await.unwrap().text().await.unwrap();
    assert!(!baselines.contains("not uploaded"), "{baselines}");
    let audit = app.get("/audit?user=olga&method=PUT").await;
    assert!(audit.to_string().contains("/firmware/images"), "the upload is audited as olga's: {audit}");
    b.shot("41-firmware-uploaded").await;

    // The rack's button: a machine without a BMC is named with the reason.
    app.api
        .ok(Method::POST, "/racks", Some(json!({"name": "r7", "address_plan": "127.0.12.1-127.0.12.4"})))
        .await
        .unwrap();
    let m = app.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:f3:00:01"]}))).await.unwrap();
    let csv = json!({"csv": "mac,hostname,ip,slot\n52:54:00:f3:00:01,fw7,,U3\n"});
    app.api.ok(Method::POST, "/racks/r7/csv", Some(csv)).await.unwrap();
    c.goto(&format!("{origin}/ui/racks/r7")).await.unwrap();
    let Ok(row) = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Css("#elevation tr")).await else {
        panic!("no elevation: {}", c.source().await.unwrap());
    };
    assert!(row.text().await.unwrap().contains("unknown"), "never read: the standing is unknown");
    crate::browser::click_to_new_page(c, Locator::Id("firmware-submit")).await;
    let notice = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("notice")).await.unwrap();
    let notice = notice.text().await.unwrap();
    assert!(
        notice.contains("0 machines") && notice.contains(&format!("Machine {}", m["id"])) && notice.contains("no BMC"),
        "{notice}"
    );
    let audit = app.get("/audit?user=olga&method=POST").await;
    let entry = &audit["entries"][0];
    assert_eq!(
        (entry["route"].as_str(), entry["params"]["name"].as_str()),
        (Some("/racks/{name}/firmware/update"), Some("r7")),
        "{audit}"
    );

    // A viewer sees the lists, neither form.
    c.goto(&format!("{origin}/ui/logout")).await.ok();
    c.delete_all_cookies().await.unwrap();
    crate::browser::login(c, &origin, "vic", PASSWORD).await;
    c.goto(&format!("{origin}/ui/firmware")).await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("images")).await.unwrap();
    assert!(c.find_all(Locator::Id("upload")).await.unwrap().is_empty(), "a viewer has no upload form");
    c.goto(&format!("{origin}/ui/racks/r7")).await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("elevation")).await.unwrap();
    assert!(c.find_all(Locator::Id("firmware-submit")).await.unwrap().is_empty(), "a viewer has no button");
    b.close().await;
}
