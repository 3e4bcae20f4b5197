//! The plugin upload form in a real browser (headless Chromium, the appliance's certificate
//! pinned): an admin uploads a bundle signed with the real `minisign` and sees it listed with its
//! signer and hash; a bundle signed by a key nobody trusted is refused with the API's reason and
//! stores nothing; a viewer sees the list but no form. Skips with "SKIPPED: ..." without chromium
//! or minisign.

use std::time::Duration;

use crate::browser::Browser;
use crate::common::appliance::Appliance;
use crate::kit::*;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::json;

const PASSWORD: &str = "correct horse battery";

async fn login(c: &Client, origin: &str, name: &str) {
    crate::browser::login(c, origin, name, PASSWORD).await
}

/// Fills the form with the two files and sends it; the text of the notice or error that comes.
async fn send(c: &Client, bundle: &std::path::Path, sig: &std::path::Path) -> String {
    c.find(Locator::Id("u-bundle")).await.unwrap().send_keys(&bundle.display().to_string()).await.unwrap();
    c.find(Locator::Id("u-sig")).await.unwrap().send_keys(&sig.display().to_string()).await.unwrap();
    crate::browser::click_to_new_page(c, Locator::Id("u-submit")).await;
    let shown = c
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("#notice, #error"))
        .await
        .expect("the page says what happened");
    shown.text().await.unwrap()
}

async fn versions(app: &Appliance) -> usize {
    let list = app.get("/plugins").await;
    list["plugins"].as_array().unwrap().iter().map(|p| p["versions"].as_array().unwrap().len()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_uploads_a_signed_plugin_through_the_form() {
    if !have_minisign() {
        eprintln!("SKIPPED: minisign is not installed (tools/setup.sh installs it)");
        return;
    }
    let app = Appliance::start("").await;
    let pin = crate::browser::spki_pin(&app.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = app.url();
    let keys = tempfile::tempdir().unwrap();
    let (public, lab) = keypair(keys.path(), "lab");
    let (_, stranger) = keypair(keys.path(), "stranger");
    let key = json!({"vendor": "rackboot-lab", "public_key": std::fs::read_to_string(public).unwrap()});
    app.api.ok(Method::POST, "/plugin-keys", Some(key)).await.unwrap();
    for (name, role) in [("ada", "admin"), ("vic", "viewer")] {
        let user = json!({"name": name, "role": role, "password": PASSWORD});
        app.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    }
    let files = tempfile::tempdir().unwrap();
    let bundle = good("lab-bios", "1.2.0", "rackboot-lab", "#!/bin/sh\nexit 1\n", "#!/bin/sh\nexit 0\n");
    std::fs::write(files.path().join("lab-bios.tar.gz"), &bundle).unwrap();
    std::fs::write(files.path().join("good.minisig"), sign(keys.path(), &lab, &bundle)).unwrap();
    std::fs::write(files.path().join("bad.minisig"), sign(keys.path(), &stranger, &bundle)).unwrap();

    login(c, &origin, "ada").await;
    c.find(Locator::LinkText("Plugins")).await.unwrap().click().await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("upload")).await.unwrap();

    // Signed by a key nobody trusted: refused with the API's reason, nothing stored.
    let said = send(c, &files.path().join("lab-bios.tar.gz"), &files.path().join("bad.minisig")).await;
    assert!(said.contains("refused") && said.contains("key"), "{said}");
    assert_eq!(versions(&app).await, 0, "a refused upload stored something");
    b.shot("30-plugin-refused").await;

    // The right signature: verified, stored, listed with its signer and hash.
    let said = send(c, &files.path().join("lab-bios.tar.gz"), &files.path().join("good.minisig")).await;
    assert!(said.contains("lab-bios 1.2.0 uploaded and verified"), "{said}");
    assert_eq!(versions(&app).await, 1);
    let listed = c.find(Locator::Id("plugins")).await.unwrap().text().await.unwrap();
    let stored = app.get("/plugins/lab-bios").await;
    let v = &stored["versions"][0];
    assert!(listed.contains("lab-bios") && listed.contains("1.2.0") && listed.contains("active"), "{listed}");
    assert!(listed.contains(v["key_id"].as_str().unwrap()), "the signer is shown: {listed}");
    assert!(listed.contains(&v["sha256"].as_str().unwrap()[..16]), "the hash is shown: {listed}");
    let audit = app.get("/audit?user=ada&method=POST").await;
    assert!(audit.to_string().contains("/plugins"), "the upload is audited as ada's: {audit}");
    b.shot("31-plugin-uploaded").await;

    // A viewer sees the list, not the form.
    c.goto(&format!("{origin}/ui/logout")).await.ok();
    c.delete_all_cookies().await.unwrap();
    login(c, &origin, "vic").await;
    c.goto(&format!("{origin}/ui/plugins")).await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("plugins")).await.unwrap();
    assert!(c.find_all(Locator::Id("upload")).await.unwrap().is_empty(), "a viewer has no upload form");
    b.close().await;
}
