//! The boot template editor in a real browser (headless Chromium, the appliance's certificate
//! pinned): an admin edits `profile.ipxe`, previews it for a MAC, is refused a broken text
//! with the line named and the text kept, saves, and the next boot script over plain HTTP is the
//! new one; a reset goes back; a viewer sees the text read-only with no buttons. Skips with
//! "SKIPPED: ..." without chromium.

use std::time::Duration;

use crate::browser::Browser;
use crate::common::appliance::Appliance;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PASSWORD: &str = "correct horse battery";
const MAC: &str = "52:54:00:7e:00:09";

/// `GET /boot/ipxe?mac=` over plain HTTP, as iPXE fetches it.
async fn boot_script(app: &Appliance) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", app.port)).await.unwrap();
    s.write_all(format!("GET /boot/ipxe?mac={MAC} HTTP/1.0\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8(out).unwrap().split_once("\r\n\r\n").unwrap().1.to_string()
}

/// Replaces the textarea's text.
async fn type_text(c: &Client, text: &str) {
    let area = c.find(Locator::Id("t-text")).await.unwrap();
    area.clear().await.unwrap();
    area.send_keys(text).await.unwrap();
}

async fn shown(c: &Client, css: &str) -> String {
    let e = c.wait().at_most(Duration::from_secs(20)).for_element(Locator::Css(css)).await.expect(css);
    e.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_edits_previews_and_saves_a_boot_template() {
    let app = Appliance::start("").await;
    let pin = crate::browser::spki_pin(&app.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = app.url();
    for (name, role) in [("ada", "admin"), ("vic", "viewer")] {
        let user = json!({"name": name, "role": role, "password": PASSWORD});
        app.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    }
    // Not installed yet, the machine boots discovery through profile.ipxe.
    app.api.ok(Method::POST, "/machines", Some(json!({"macs": [MAC], "hostname": "db-01"}))).await.unwrap();
    let before = boot_script(&app).await;

    crate::browser::login(c, &origin, "ada", PASSWORD).await;
    c.find(Locator::LinkText("Templates")).await.unwrap().click().await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("templates")).await.unwrap();
    c.find(Locator::LinkText("profile.ipxe")).await.unwrap().click().await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("t-text")).await.unwrap();

    // Preview for the MAC: rendered for that machine, nothing saved.
    let text = "#!ipxe\necho edited for {{ hostname }} {{ mac }}\nexit\n";
    type_text(c, text).await;
    c.find(Locator::Id("t-mac")).await.unwrap().send_keys(MAC).await.unwrap();
    crate::browser::click_to_new_page(c, Locator::Id("t-preview")).await;
    let preview = shown(c, "#preview").await;
    assert!(preview.contains(&format!("echo edited for db-01 {MAC}")), "{preview}");
    assert_eq!(boot_script(&app).await, before, "a preview saves nothing");
    b.shot("40-template-preview").await;

    // A broken text: refused with its line, the text kept, nothing saved.
    type_text(c, "#!ipxe\n{% if uefi %}\nexit\n").await;
    crate::browser::click_to_new_page(c, Locator::Id("t-save")).await;
    let error = shown(c, "#error").await;
    assert!(error.contains("ipxe/profile.ipxe:") && error.contains("syntax error"), "{error}");
    let kept = c.find(Locator::Id("t-text")).await.unwrap().prop("value").await.unwrap().unwrap_or_default();
    assert!(kept.contains("{% if uefi %}"), "the typed text is kept: {kept}");
    assert_eq!(boot_script(&app).await, before);
    b.shot("41-template-refused").await;

    // Save: the next boot script is the new text.
    type_text(c, text).await;
    crate::browser::click_to_new_page(c, Locator::Id("t-save")).await;
    assert!(shown(c, "#notice").await.contains("Saved"));
    let script = boot_script(&app).await;
    assert!(script.starts_with("#!ipxe\necho edited for"), "{script}");
    assert!(!script.contains('\r'), "the browser's CRLF line ends are not stored: {script:?}");
    b.shot("42-template-saved").await;

    // A viewer: the text read-only, no form; the server refuses their POST anyway.
    c.goto(&format!("{origin}/ui/logout")).await.ok();
    c.delete_all_cookies().await.unwrap();
    crate::browser::login(c, &origin, "vic", PASSWORD).await;
    c.goto(&format!("{origin}/ui/templates/profile.ipxe")).await.unwrap();
    let ro = shown(c, "#t-readonly").await;
    assert!(ro.contains("echo edited for"), "{ro}");
    assert!(
        c.find_all(Locator::Css("#template, button[name=action]")).await.unwrap().is_empty(),
        "no form for a viewer"
    );
    b.shot("43-template-viewer").await;
    // Their own POST, with the page's CSRF token, is refused by the server and saves nothing.
    let post = "const csrf = document.querySelector('input[name=csrf]').value;
        return fetch('/ui/templates/profile.ipxe', {method: 'POST',
            headers: {'Content-Type': 'application/x-www-form-urlencoded'},
            body: 'csrf=' + encodeURIComponent(csrf) + '&action=save&text=%23!ipxe%0Aexit%0A'}).then(r => r.status);";
    let status = c.execute(post, vec![]).await.unwrap();
    assert_eq!(status, json!(403), "a viewer's POST is refused");
    assert!(boot_script(&app).await.starts_with("#!ipxe\necho edited for"), "and changes nothing");

    // Back as the admin: reset to the default.
    c.goto(&format!("{origin}/ui/logout")).await.ok();
    c.delete_all_cookies().await.unwrap();
    crate::browser::login(c, &origin, "ada", PASSWORD).await;
    c.goto(&format!("{origin}/ui/templates/profile.ipxe")).await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("t-reset")).await.unwrap();
    crate::browser::click_to_new_page(c, Locator::Id("t-reset")).await;
    assert!(shown(c, "#notice").await.contains("default"));
    assert_eq!(boot_script(&app).await, before);
    b.close().await;
}
