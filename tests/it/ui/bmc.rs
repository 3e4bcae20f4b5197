//! Setting a machine's BMC from the web UI: the machine page links to the form; a refused save
//! names the field and keeps what was typed but never the password; a save stores the record
//! through the API (password sealed, never shown on any page); leaving the password empty keeps
//! it; a post without the session's CSRF token, or from a viewer, changes nothing; "Remove"
//! deletes the record.

use crate::common::appliance::Appliance;
use crate::raw::{login_as, raw, FORM};
use hyper::Method;
use serde_json::json;

const BMC_PASSWORD: &str = "Bmc-Secret-93";
#[tokio::test(flavor = "multi_thread")]
async fn an_operator_sets_changes_and_removes_a_bmc_from_the_ui() {
    let app = Appliance::start("").await;
    let m = app.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:9b:00:01"]}))).await.unwrap();
    let id = m["id"].as_u64().unwrap();
    let (cookie, csrf) = login_as(&app, "olga", "operator").await;
    let c = ("cookie", cookie.as_str());
    let (_, page) = raw(&app, "GET", &format!("/ui/machines/{id}"), &[c], "").await;
    assert!(page.contains(&format!("href=\"/ui/machines/{id}/bmc\"")) && page.contains("Set a BMC"), "{page}");
    let (status, page) = raw(&app, "GET", &format!("/ui/machines/{id}/bmc"), &[c], "").await;
    assert_eq!(status, 200);
    assert!(page.contains("id=\"bmc-none\"") && page.contains("id=\"bmc-form\""), "{page}");

    // Refused: a URL where a host belongs. The field is named, the typed user kept, the
    // password not sent back, nothing stored.
    let path = format!("/ui/machines/{id}/bmc");
    let bad = format!(
        "csrf={csrf}&action=save&address=https%3A%2F%2F198.18.7.9%2F&protocol=redfish&username=ops-admin&password={BMC_PASSWORD}&insecure=on"
    );
    let (status, page) = raw(&app, "POST", &path, &[c, FORM], &bad).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("field address") && page.contains("value=\"ops-admin\""), "{page}");
    assert!(!page.contains(BMC_PASSWORD), "the password is never sent back");
    let (s, _) = app.api.call(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap();
    assert_eq!(s, 404, "nothing stored");

    // Without the session's CSRF token: refused, nothing stored.
    let good = format!(
        "action=save&address=198.18.7.9%3A6231&protocol=ipmi&username=ops-admin&password={BMC_PASSWORD}&boot_mode=legacy"
    );
    let (status, _) = raw(&app, "POST", &path, &[c, FORM], &good).await;
    assert_eq!(status, 403);
    assert_eq!(app.api.call(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap().0, 404);

    // Saved: back on the machine page with a notice; the API has it, password sealed.
    let (status, resp) = raw(&app, "POST", &path, &[c, FORM], &format!("csrf={csrf}&{good}")).await;
    assert!(status == 303 && resp.contains(&format!("/ui/machines/{id}?notice=BMC%20saved")), "{resp}");
    let v = app.api.ok(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap();
    assert_eq!(
        (v["address"].as_str(), v["protocol"].as_str(), v["boot_mode"].as_str(), v["password_set"].as_bool()),
        (Some("198.18.7.9:6231"), Some("ipmi"), Some("legacy"), Some(true))
    );
    let (_, page) = raw(&app, "GET", &path, &[c], "").await;
    assert!(page.contains("id=\"bmc-stored\"") && page.contains("198.18.7.9:6231 (ipmi)"), "{page}");
    assert!(page.contains("keep the stored one, for the same address") && !page.contains(BMC_PASSWORD), "{page}");
    let (_, page) = raw(&app, "GET", &format!("/ui/machines/{id}"), &[c], "").await;
    assert!(page.contains("Change the BMC") && !page.contains(BMC_PASSWORD));

    // A new address without a password is refused (the stored one goes only to the BMC it was
    // given for) and changes nothing; a change that keeps where it goes keeps it.
    let moved =
        format!("csrf={csrf}&action=save&address=198.18.7.10%3A6231&protocol=ipmi&username=ops-admin&password=");
    let (status, page) = raw(&app, "POST", &path, &[c, FORM], &moved).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("required again"), "{page}");
    let v = app.api.ok(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap();
    assert_eq!(v["address"], "198.18.7.9:6231", "{v}");
    let change =
        format!("csrf={csrf}&action=save&address=198.18.7.9%3A6231&protocol=ipmi&username=ops-admin&password=");
    let (status, resp) = raw(&app, "POST", &path, &[c, FORM], &change).await;
    assert_eq!(status, 303, "{resp}");
    let v = app.api.ok(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap();
    assert_eq!((v["address"].as_str(), v["password_set"].as_bool()), (Some("198.18.7.9:6231"), Some(true)));
    assert!(v.get("boot_mode").is_none(), "the boot mode left empty: as DHCP saw it");

    // A viewer sees no form and cannot post one.
    let (vcookie, vcsrf) = login_as(&app, "vera", "viewer").await;
    let vc = ("cookie", vcookie.as_str());
    let (_, page) = raw(&app, "GET", &format!("/ui/machines/{id}"), &[vc], "").await;
    assert!(!page.contains("id=\"bmc-link\""), "{page}");
    let (status, _) = raw(&app, "POST", &path, &[vc, FORM], &format!("csrf={vcsrf}&action=remove")).await;
    assert_eq!(status, 403);
    assert_eq!(app.api.call(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap().0, 200);

    // Virtual media needs Redfish: refused for IPMI naming why; kept and shown for Redfish.
    let ipmi_vm = format!("csrf={csrf}&action=save&address=198.18.7.9%3A6231&protocol=ipmi&username=ops-admin&password=pw&boot_via=virtual-media");
    let (status, page) = raw(&app, "POST", &path, &[c, FORM], &ipmi_vm).await;
    assert_eq!(status, 400, "{page}");
    assert!(page.contains("virtual media needs a Redfish BMC"), "{page}");
    let redfish_vm = format!("csrf={csrf}&action=save&address=198.18.7.11&protocol=redfish&username=ops-admin&password=pw&insecure=on&boot_via=virtual-media");
    let (status, resp) = raw(&app, "POST", &path, &[c, FORM], &redfish_vm).await;
    assert_eq!(status, 303, "{resp}");
    let v = app.api.ok(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap();
    assert_eq!(v["boot_via"], "virtual-media", "{v}");
    let (_, page) = raw(&app, "GET", &path, &[c], "").await;
    assert!(
        page.contains("from virtual media (an ISO the BMC inserts")
            && page.contains("value=\"virtual-media\" selected"),
        "{page}"
    );

    // Removed.
    let (status, resp) = raw(&app, "POST", &path, &[c, FORM], &format!("csrf={csrf}&action=remove")).await;
    assert!(status == 303 && resp.contains("BMC%20removed"), "{resp}");
    assert_eq!(app.api.call(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap().0, 404);
}

/// Form-encodes `pairs`.
fn form(pairs: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rack_form_sets_its_machines_bmcs_and_a_bad_row_stores_nothing() {
    let app = Appliance::start("").await;
    let (cookie, csrf) = login_as(&app, "olga", "operator").await;
    let c = ("cookie", cookie.as_str());
    let rack = |name: &'static str, csv: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("name", name.to_string()),
            ("lldp_chassis_name", "leaf-r7".to_string()),
            ("ports", "swp1-2 -> U1-U2".to_string()),
            ("hostname_pattern", "{rack}-u{slot:02}".to_string()),
            ("bmc_csv", csv.to_string()),
            ("bmc_username", "rack-admin".to_string()),
            ("bmc_password", BMC_PASSWORD.to_string()),
        ]
    };
    let post = |fields: Vec<(&'static str, String)>| {
        let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        form(&pairs)
    };

    // A bad row (a URL for an address, line 2): refused with its line; no rack, no machine.
    let bad = "mac,address,protocol\n52:54:00:9c:00:01,https://10.0.9.1/,redfish\n";
    let (status, page) = raw(&app, "POST", "/ui/racks", &[c, FORM], &post(rack("r7", bad))).await;
    assert_eq!(status, 400, "the form again, with the reason");
    assert!(page.contains("BMC CSV line 2: address"), "{page}");
    assert!(page.contains("rack-admin") && !page.contains(BMC_PASSWORD), "user kept, password not sent back");
    assert_eq!(app.api.call(Method::GET, "/racks/r7", None).await.unwrap().0, 404);
    assert_eq!(app.api.call(Method::GET, "/machines/52:54:00:9c:00:01", None).await.unwrap().0, 404);

    // Good rows: the rack, then each machine registered by MAC and its BMC set.
    let good = "52:54:00:9c:00:01,10.0.9.1,ipmi,legacy\n52:54:00:9c:00:02,10.0.9.2:8443,redfish,uefi\n";
    let mut fields = rack("r7", good);
    fields.push(("bmc_insecure", "1".to_string()));
    let (status, resp) = raw(&app, "POST", "/ui/racks", &[c, FORM], &post(fields)).await;
    assert!(status == 303 && resp.contains("location: /ui/racks/r7?notice=BMCs%20set%3A%202%20of%202"), "{resp}");
    let a = app.api.ok(Method::GET, "/machines/52:54:00:9c:00:01/bmc", None).await.unwrap();
    assert_eq!(
        (a["protocol"].as_str(), a["boot_mode"].as_str(), a["username"].as_str()),
        (Some("ipmi"), Some("legacy"), Some("rack-admin"))
    );
    let b = app.api.ok(Method::GET, "/machines/52:54:00:9c:00:02/bmc", None).await.unwrap();
    assert_eq!((b["tls"]["mode"].as_str(), b["password_set"].as_bool()), (Some("insecure"), Some(true)));
    let (_, page) = raw(&app, "GET", "/ui/racks/r7?notice=BMCs%20set%3A%202%20of%202", &[c], "").await;
    assert!(page.contains("BMCs set: 2 of 2") && !page.contains(BMC_PASSWORD), "{page}");
    let r = app.api.ok(Method::GET, "/racks/r7", None).await.unwrap();
    assert!(!r.to_string().contains(BMC_PASSWORD), "the password is never kept with the rack: {r}");
}
