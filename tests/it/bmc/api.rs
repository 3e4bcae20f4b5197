//! The BMC and power API against the whole appliance, without a BMC to reach: bad input gets a
//! 400 naming the field and stores nothing; a password is needed the first time and kept when
//! left out later only for the same address, protocol and TLS policy; `insecure` is shown as a warning; a machine without a BMC cannot be powered;
//! a viewer can neither read a BMC record nor power a machine; changes are audited without the
//! password.

use crate::common::*;
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

fn good() -> Value {
    json!({"address": "198.18.7.9:8443", "protocol": "redfish", "username": "admin", "password": "Pw-secret-99"})
}

#[tokio::test]
async fn the_bmc_api_checks_input_and_roles_and_never_shows_the_password() {
    let lab = Lab::start("").await;
    let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:bb:00:01"]}))).await.unwrap();
    let path = format!("/machines/{}/bmc", m["id"]);

    let with = |k: &str, v: Value| {
        let mut b = good();
        b[k] = v;
        b
    };
    let bad = [
        (with("address", json!("https://198.18.7.9/redfish")), "address"),
        (with("address", json!("")), "address"),
        (with("address", json!("x".repeat(300))), "address"),
        (with("address", json!("bmc:99999")), "address"),
        (with("username", json!("")), "username"),
        (with("password", json!("a\nb")), "password"),
        (with("fingerprint", json!("abcd")), "fingerprint"),
        (with("system_id", json!("../../x")), "system_id"),
        (with("insecure", json!(true)).tap_fingerprint(), "insecure"),
    ];
    for (body, field) in bad {
        let (s, p) = lab.api.call(Method::PUT, &path, Some(body.clone())).await.unwrap();
        assert_eq!((s, p["field"].as_str()), (400, Some(field)), "{body} -> {p}");
    }
    let (s, p) = lab.api.call(Method::PUT, &path, Some(with("protocol", json!("telnet")))).await.unwrap();
    assert_eq!(s, 400, "{p}");
    let (s, p) = lab.api.call(Method::PUT, &path, Some(with("boot_mode", json!("bios")))).await.unwrap();
    assert_eq!(s, 400, "boot_mode is uefi or legacy: {p}");
    let mut no_pw = good();
    no_pw.as_object_mut().unwrap().remove("password");
    let (s, p) = lab.api.call(Method::PUT, &path, Some(no_pw.clone())).await.unwrap();
    assert_eq!((s, p["field"].as_str()), (400, Some("password")), "a first BMC needs its password: {p}");
    assert_eq!(lab.api.call(Method::GET, &path, None).await.unwrap().0, 404, "nothing was stored");
    let (s, p) = lab
        .api
        .call(Method::POST, &format!("/machines/{}/power", m["id"]), Some(json!({"action": "on"})))
        .await
        .unwrap();
    assert_eq!(s, 409, "no BMC: {p}");
    assert_eq!(lab.api.call(Method::PUT, "/machines/99/bmc", Some(good())).await.unwrap().0, 404);

    // Stored: shown without the password; insecure is a warning.
    let v = lab.api.ok(Method::PUT, &path, Some(with("insecure", json!(true)))).await.unwrap();
    assert_eq!((v["password_set"].as_bool(), v["tls"]["mode"].as_str()), (Some(true), Some("insecure")));
    assert!(v["warning"].as_str().unwrap().contains("not checked"), "{v}");
    // The stored password goes only to the BMC it was given for: a new address, protocol or TLS
    // policy without it is refused and changes nothing.
    for change in [
        with("address", json!("198.18.7.10")).with_field("insecure", json!(true)),
        with("protocol", json!("ipmi")).with_field("insecure", json!(true)),
        good(),
    ] {
        let (s, p) = lab.api.call(Method::PUT, &path, Some(change.without_password())).await.unwrap();
        assert_eq!((s, p["field"].as_str()), (400, Some("password")), "{p}");
        assert!(p["detail"].as_str().unwrap().contains("required again"), "{p}");
    }
    let v = lab.api.ok(Method::GET, &path, None).await.unwrap();
    assert_eq!((v["address"].as_str(), v["tls"]["mode"].as_str()), (Some("198.18.7.9:8443"), Some("insecure")));
    // With the password, the BMC moves; then a change that keeps where it goes keeps the password.
    let moved = with("address", json!("198.18.7.10"));
    let v = lab.api.ok(Method::PUT, &path, Some(moved.clone())).await.unwrap();
    assert_eq!((v["address"].as_str(), v["password_set"].as_bool()), (Some("198.18.7.10"), Some(true)));
    assert_eq!(v["tls"]["mode"], "ca", "neither pin nor insecure: the appliance CA");
    assert!(v.get("warning").is_none());
    assert!(v.get("boot_mode").is_none(), "no boot mode set: the one DHCP saw decides");
    let v = lab
        .api
        .ok(Method::PUT, &path, Some(moved.with_field("boot_mode", json!("legacy")).without_password()))
        .await
        .unwrap();
    assert_eq!((v["boot_mode"].as_str(), v["password_set"].as_bool()), (Some("legacy"), Some(true)));
    let (s, p) = lab
        .api
        .call(Method::POST, &format!("/machines/{}/power", m["id"]), Some(json!({"action": "dance"})))
        .await
        .unwrap();
    assert_eq!(s, 400, "{p}");

    // A viewer neither sees where the BMC is nor powers the machine.
    let (s, t) = lab.api.call(Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await.unwrap();
    assert_eq!(s, 201, "{t}");
    let viewer =
        ApiClient::new(&lab.https_url(), t["secret"].as_str().unwrap().into(), lab.ca_pem().as_bytes()).unwrap();
    assert_eq!(viewer.call(Method::GET, &path, None).await.unwrap().0, 403);
    let power = format!("/machines/{}/power", m["id"]);
    assert_eq!(viewer.call(Method::POST, &power, Some(json!({"action": "off"}))).await.unwrap().0, 403);
    assert_eq!(viewer.call(Method::DELETE, &path, None).await.unwrap().0, 403);

    // Audited, never with the password; the timeline says bmc.set.
    let audit = lab.api.ok(Method::GET, "/audit", None).await.unwrap().to_string();
    assert!(audit.contains("/bmc") && !audit.contains("Pw-secret-99"), "{audit}");
    let events = lab.api.ok(Method::GET, &format!("/machines/{}/events", m["id"]), None).await.unwrap().to_string();
    assert!(events.contains("bmc.set") && !events.contains("Pw-secret-99"));

    // Removing the BMC.
    assert_eq!(lab.api.call(Method::DELETE, &path, None).await.unwrap().0, 204);
    assert_eq!(lab.api.call(Method::GET, &path, None).await.unwrap().0, 404);
    assert_eq!(lab.api.call(Method::DELETE, &path, None).await.unwrap().0, 404);
}

trait Body {
    fn tap_fingerprint(self) -> Self;
    fn without_password(self) -> Self;
    fn with_field(self, key: &str, value: Value) -> Self;
}

impl Body for Value {
    fn tap_fingerprint(mut self) -> Self {
        self["fingerprint"] = json!("ab".repeat(32));
        self
    }
    fn without_password(mut self) -> Self {
        self.as_object_mut().unwrap().remove("password");
        self
    }
    fn with_field(mut self, key: &str, value: Value) -> Self {
        self[key] = value;
        self
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cli_bmc_set_show_and_power() {
    let lab = Lab::start(
        "[bmc]\nrequest_timeout_secs = 1\nretries = 0\naction_deadline_secs = 10\nsoft_off_timeout_secs = 5\n",
    )
    .await;
    lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:bb:00:09"]}))).await.unwrap();
    let dir = lab.dir.path().to_path_buf();
    let pw = dir.join("bmc.pw");
    std::fs::write(&pw, "Cli-secret-42\n").unwrap();
    let run = |args: &[&str]| lab.cli(args);
    let mac = "52:54:00:bb:00:09";
    // Nothing listens on port 9 of loopback: the BMC cannot be reached.
    let (ok, out) = run(&[
        "bmc",
        "set",
        mac,
        "--address",
        "127.0.0.1:9",
        "--protocol",
        "redfish",
        "--username",
        "root",
        "--password-file",
        pw.to_str().unwrap(),
        "--insecure",
        "--boot-mode",
        "legacy",
    ]);
    assert!(ok, "{out}");
    assert!(out.contains("WARNING") && out.contains("password set") && !out.contains("Cli-secret-42"), "{out}");
    let (ok, out) = run(&["bmc", "show", mac]);
    assert!(ok && out.contains("127.0.0.1:9 (redfish)") && out.contains("not read yet"), "{out}");
    assert!(out.contains("boot      legacy"), "{out}");
    let (ok, out) = run(&["power", "status", mac, "52:54:00:bb:00:0a"]);
    assert!(!ok, "{out}");
    assert!(out.contains("cannot reach the BMC") && out.contains("2 of the machines failed"), "{out}");
    let (ok, out) = run(&["bmc", "show", mac]);
    assert!(ok && out.contains("last read failed"), "the failure is shown with its age: {out}");
}
