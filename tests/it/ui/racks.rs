//! Rack bring-up in a real browser (headless Chromium over WebDriver, pinned to the
//! appliance's certificate): an operator creates a rack with the form, machines DHCP through
//! the rack's switch (relayed, option 82 naming the port), and the rack view places and names
//! them live, without a reload; the silent-slot flags go as they answer, and a machine whose
//! LLDP neighbour disagrees with option 82 is flagged mis-cabled; one whose own LLDP report is
//! all that names a slot shows as a claim, which the operator's click places. A refused form keeps
//! what was typed and says why; a viewer gets no form. Skips with "SKIPPED: ..." without
//! chromium.

use std::time::{Duration, Instant};

use crate::browser::Browser;
use crate::common::*;
use dhcproto::Encodable;
use fantoccini::{Client, Locator};
use hyper::Method;
use serde_json::json;

const PASSWORD: &str = "correct horse battery";

async fn login(c: &Client, origin: &str, name: &str) {
    crate::browser::login(c, origin, name, PASSWORD).await
}

use crate::browser::wait_path;

async fn fill(c: &Client, id: &str, text: &str) {
    let e = c.find(Locator::Id(id)).await.unwrap();
    e.clear().await.unwrap();
    e.send_keys(text).await.unwrap();
}

/// Waits (up to 10 s) until the element `id`'s text satisfies `ok`; returns it.
async fn text_until(c: &Client, id: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let t = c.find(Locator::Id(id)).await.unwrap().text().await.unwrap();
        if ok(&t) {
            return t;
        }
        assert!(Instant::now() < deadline, "#{id} never became what was expected: {t}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rack_is_brought_up_from_the_form_and_fills_in_live() {
    let lab = Lab::start("").await;
    let pin = crate::browser::spki_pin(&lab.dir.path().join("tls/server.pem"));
    let Some(b) = Browser::start(&pin).await else { return };
    let c = &b.client;
    let origin = lab.https_url();
    for (name, role) in [("olga", "operator"), ("vic", "viewer")] {
        let user = json!({"name": name, "role": role, "password": PASSWORD});
        lab.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    }
    login(c, &origin, "olga").await;
    c.find(Locator::LinkText("Racks")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/racks").await;
    if c.find_all(Locator::Id("rack-form")).await.unwrap().is_empty() {
        panic!("no rack form: {}", c.source().await.unwrap_or_default());
    }

    // A refused form says why and keeps what was typed.
    fill(c, "r-name", "r1").await;
    fill(c, "r-remote", "leaf-r1").await;
    fill(c, "r-lldp-name", "leaf-r1").await;
    fill(c, "r-ports", "Ethernet1-4 -> U1-U3").await;
    fill(c, "r-plan", "127.0.9.1-127.0.9.8").await;
    fill(c, "r-silent", "0").await;
    // Its UEFI machines have Secure Boot on: the signed chain.
    c.find(Locator::Css("#r-loader option[value=shim]")).await.unwrap().click().await.unwrap();
    c.find(Locator::Id("r-submit")).await.unwrap().click().await.unwrap();
    let err = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("rack-error")).await.unwrap();
    let err = err.text().await.unwrap();
    assert!(err.contains("not created"), "{err}");
    let kept = c.find(Locator::Id("r-ports")).await.unwrap().prop("value").await.unwrap().unwrap_or_default();
    assert_eq!(kept, "Ethernet1-4 -> U1-U3");
    let loader = c.find(Locator::Id("r-loader")).await.unwrap().prop("value").await.unwrap().unwrap_or_default();
    assert_eq!(loader, "shim", "the loader choice is kept too");
    assert!(lab.api.ok(Method::GET, "/racks", None).await.unwrap().to_string().contains("\"racks\":[]"));
    b.shot("20-rack-form-refused").await;

    // The right map, and a disk layout: the rack is created and its page opens.
    fill(c, "r-ports", "Ethernet1-4 -> U1-U4").await;
    fill(c, "r-mirror", "serial=S2").await;
    c.find(Locator::Id("r-lvm")).await.unwrap().click().await.unwrap();
    fill(c, "r-fs", "/srv/data:xfs:512").await;
    c.find(Locator::Id("r-submit")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/racks/r1").await;
    let rack = lab.api.ok(Method::GET, "/racks/r1", None).await.unwrap();
    assert_eq!(rack["rack"]["uefi_loader"], "shim", "{rack}");
    let layout = json!({"mirror": {"serial": "S2"}, "lvm": true,
        "filesystems": [{"mount": "/srv/data", "fstype": "xfs", "size_mib": 512}]});
    assert_eq!(rack["rack"]["layout"], layout, "{rack}");
    let flags = text_until(c, "flags", |t| t.contains("slot silent")).await;
    assert!(flags.contains("U2"), "{flags}");
    c.execute("window.rackMarker = 'still the same page';", vec![]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await; // the live stream is open

    // Two machines power on; the switch relays their DISCOVERs with the port they are on.
    for (last, port) in [(2u8, "Ethernet2"), (4, "leaf1:Ethernet4")] {
        let m = [0x52, 0x54, 0, 0x7b, 0, last];
        lab.send_raw(&relayed(m, 900 + u32::from(last), port, "leaf-r1").to_vec().unwrap()).await;
    }
    let elevation = text_until(c, "elevation", |t| t.contains("r1-u02") && t.contains("r1-u04")).await;
    assert!(elevation.contains("127.0.9.2") && elevation.contains("127.0.9.4"), "{elevation}");
    assert!(elevation.contains("option82"), "placed by option 82: {elevation}");
    let flags = text_until(c, "flags", |t| !t.contains("U2:") && !t.contains("U4:")).await;
    assert!(flags.contains("U1") && flags.contains("U3"), "the silent ones stay flagged: {flags}");
    // U4's machine boots BootOS: its agent's LLDP neighbour is Ethernet3, not the port option 82
    // named. The rack page flags it as mis-cabled, live.
    report_lldp_of(&lab, [0x52, 0x54, 0, 0x7b, 0, 4], "leaf-r1", "Ethernet3").await;
    let flags = text_until(c, "flags", |t| t.contains("miscabled")).await;
    assert!(flags.contains("Ethernet3"), "the flag says where LLDP found it: {flags}");
    let marker = c.execute("return window.rackMarker || null;", vec![]).await.unwrap();
    assert_eq!(marker, "still the same page", "the elevation updated without a reload");
    // The front view: one box per U from the top one down, the machines in theirs with their
    // state in words and colour, the mis-cabled one marked; live like the table.
    let picture = "var s = document.querySelector('#picture svg'); if (!s) return null; \
        return {units: s.querySelectorAll('g.slot').length, text: s.textContent, \
        u4: s.querySelector('g[data-slot=\"4\"] rect').getAttribute('class')};";
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let seen = loop {
        let v = c.execute(picture, vec![]).await.unwrap();
        let text = v["text"].as_str().unwrap_or_default();
        if (text.contains("r1-u02") && text.contains("miscabled")) || std::time::Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(seen["units"], 4, "U4 down to U1: {seen}");
    let text = seen["text"].as_str().unwrap();
    assert!(text.contains("U4") && text.contains("r1-u04") && text.contains("discovered"), "{seen}");
    assert!(text.contains("⚑ miscabled"), "{seen}");
    assert!(seen["u4"].as_str().unwrap().contains("flagged"), "{seen}");
    b.shot("21-rack-live").await;

    // A machine whose own LLDP report names U1 is not placed: the flag shows its claim, live,
    // with a button; the operator's click places it.
    let claimant = [0x52, 0x54, 0, 0x7b, 0, 9];
    report_lldp_of(&lab, claimant, "leaf-r1", "Ethernet1").await;
    let flags = text_until(c, "flags", |t| t.contains("claimed")).await;
    assert!(flags.contains("U1") && flags.contains("Ethernet1"), "{flags}");
    let m = lab.api.ok(Method::GET, &format!("/machines/{}", mac_text(&claimant)), None).await.unwrap();
    assert_eq!(m["rack"], serde_json::Value::Null, "a claim is not a placement: {m}");
    let button = format!("#flags form[action='/ui/racks/r1/confirm'] input[name=machine][value='{}']", m["id"]);
    assert!(!c.find_all(Locator::Css(&button)).await.unwrap().is_empty(), "{flags}");
    c.find(Locator::Css("#flags form[action='/ui/racks/r1/confirm'] button")).await.unwrap().click().await.unwrap();
    let notice = c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("notice")).await.unwrap();
    let notice = notice.text().await.unwrap();
    assert!(notice.contains("placed in U1"), "{notice}");
    let elevation = text_until(c, "elevation", |t| t.contains("r1-u01")).await;
    assert!(elevation.contains("operator"), "placed by the operator: {elevation}");

    // Nothing the page loaded came from anywhere but the appliance.
    let urls = c
        .execute("return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name));", vec![])
        .await
        .unwrap();
    for u in urls.as_array().unwrap() {
        assert!(u.as_str().unwrap().starts_with(&origin), "{u} is not the appliance's");
    }
    // The rack creation is audited as olga's.
    let audit = lab.api.ok(Method::GET, "/audit?user=olga&method=POST", None).await.unwrap();
    assert!(audit.to_string().contains("/racks"), "{audit}");

    // A viewer sees the rack but no form.
    c.goto(&format!("{origin}/ui/logout")).await.ok();
    c.delete_all_cookies().await.unwrap();
    login(c, &origin, "vic").await;
    c.goto(&format!("{origin}/ui/racks")).await.unwrap();
    c.wait().at_most(Duration::from_secs(10)).for_element(Locator::Id("racks")).await.unwrap();
    assert!(c.find_all(Locator::Id("rack-form")).await.unwrap().is_empty(), "a viewer has no rack form");
    b.shot("22-racks-viewer").await;
    b.close().await;
}
