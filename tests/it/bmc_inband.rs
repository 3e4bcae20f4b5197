//! In-band BMC accounts, the appliance's side, with a node speaking the agent protocol by hand:
//! a BootOS inventory that found a BMC on a machine with none on record queues one
//! `bmc_account` job (not two); the account report is taken only from the machine whose job it
//! is, while the job runs, for the account the job asked for, within bounds; taken, the
//! password is sealed and the machine's BMC is that account (`bmc.inband`), shown nowhere; an
//! operator asks for a new password through the same job; a job cannot be submitted by hand.
//! The agent's side (ipmitool against a real BMC simulator) is `e2e::vm::inband`.

use hyper::Method;
use rackboot_agent::wire::{Bmc, Inventory};
use serde_json::{json, Value};

use crate::common::appliance::Appliance;

const MAC: &str = "52:54:00:ee:00:31";
const OTHER: &str = "52:54:00:ee:00:32";
const PASSWORD: &str = "Zq7Rk2Lm9Wx4Tb6N";

async fn call(a: &Appliance, method: &str, path: &str, credential: Option<&str>, body: &str) -> (u16, Value) {
    let auth = credential.map(|c| format!("Bearer {c}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    let (status, text) = crate::raw::raw(a, method, path, &headers, body).await;
    (status, serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap_or_default()).unwrap_or(Value::Null))
}

async fn enroll(a: &Appliance, mac: &str) -> String {
    let body = json!({"macs": [mac], "mode": "bootos", "version": "test", "nonce": a.boot_nonce(mac).await});
    let (status, v) = call(a, "POST", "/agent/v1/enroll", None, &body.to_string()).await;
    assert_eq!(status, 200, "{v}");
    v["credential"].as_str().unwrap().to_string()
}

async fn account_jobs(a: &Appliance, mac: &str) -> Vec<Value> {
    let v = a.get(&format!("/jobs?machine={mac}&limit=100")).await;
    v["jobs"].as_array().unwrap().iter().filter(|j| j["action"]["kind"] == "bmc_account").cloned().collect()
}

fn report(username: &str, password: &str, address: &str) -> String {
    json!({"user_id": 3, "username": username, "password": password, "channel": 1, "address": address,
        "mac": "52:54:00:ee:00:77"})
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_in_band_account_is_taken_only_from_its_job_and_its_password_is_never_shown() {
    let a =
        Appliance::start("[bmc]\ninband_accounts = true\nrefresh_interval_secs = 0\nrequest_timeout_secs = 1\n").await;
    let cred = enroll(&a, MAC).await;
    let other = enroll(&a, OTHER).await;

    // A BootOS inventory that found a BMC in band: one job, whatever the node sends again.
    let found = Bmc { ip: Some("198.18.0.5".into()), mac: Some("52:54:00:ee:00:77".into()) };
    let inventory = serde_json::to_string(&Inventory { bmc: Some(found), ..Default::default() }).unwrap();
    for _ in 0..2 {
        let (status, v) = call(&a, "PUT", "/agent/v1/inventory", Some(&cred), &inventory).await;
        assert_eq!(status, 204, "{v}");
    }
    let jobs = account_jobs(&a, MAC).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(
        (jobs[0]["action"]["username"].as_str(), jobs[0]["action"]["channel"].as_u64()),
        (Some("rackboot"), Some(1))
    );
    assert_eq!(jobs[0]["max_attempts"], 1, "delivered once: a second delivery would make another password");
    let job = jobs[0]["id"].as_u64().unwrap();
    let path = format!("/agent/v1/jobs/{job}/bmc-account");
    // An inventory without a BMC queues nothing.
    let none = serde_json::to_string(&Inventory::default()).unwrap();
    assert_eq!(call(&a, "PUT", "/agent/v1/inventory", Some(&other), &none).await.0, 204);
    assert!(account_jobs(&a, OTHER).await.is_empty());

    // Not running yet: refused.
    let (status, v) = call(&a, "POST", &path, Some(&cred), &report("rackboot", PASSWORD, "198.18.0.5")).await;
    assert_eq!(status, 409, "{v}");
    let (status, v) = call(&a, "GET", "/agent/v1/jobs/next?wait=1", Some(&cred), "").await;
    assert_eq!((status, v["id"].as_u64()), (200, Some(job)), "{v}");
    // Another machine's agent, another account, bad values: refused, nothing stored.
    let (status, _) = call(&a, "POST", &path, Some(&other), &report("rackboot", PASSWORD, "198.18.0.5")).await;
    assert_eq!(status, 404, "another machine's job does not exist for it");
    for (body, why) in [
        (report("admin", PASSWORD, "198.18.0.5"), "did not ask for this account"),
        (report("rackboot", "short", "198.18.0.5"), "8 to 20"),
        (report("rackboot", PASSWORD, "127.0.0.1"), "cannot be"),
        (report("rackboot", PASSWORD, "bmc.example"), "not an IP address"),
    ] {
        let (status, v) = call(&a, "POST", &path, Some(&cred), &body).await;
        assert_eq!(status, 409, "{body}: {v}");
        assert!(v.to_string().contains(why), "{body}: {v}");
    }
    let (status, _) = call(&a, "POST", &path, Some(&cred), "{\"user_id\": 3}").await;
    assert_eq!(status, 400);
    assert_eq!(
        a.api.call(Method::GET, &format!("/machines/{MAC}/bmc"), None).await.unwrap().0,
        404,
        "nothing stored yet"
    );

    // The job's own report: the machine's BMC is that account, sealed.
    let (status, v) = call(&a, "POST", &path, Some(&cred), &report("rackboot", PASSWORD, "198.18.0.5")).await;
    assert_eq!(status, 204, "{v}");
    let bmc = a.get(&format!("/machines/{MAC}/bmc")).await;
    assert_eq!(
        (bmc["protocol"].as_str(), bmc["address"].as_str(), bmc["username"].as_str()),
        (Some("ipmi"), Some("198.18.0.5"), Some("rackboot"))
    );
    assert_eq!(
        (bmc["password_set"].as_bool(), bmc["inband"]["user_id"].as_u64(), bmc["inband"]["job"].as_u64()),
        (Some(true), Some(3), Some(job))
    );
    let events = a.get(&format!("/machines/{MAC}/events?limit=1000")).await;
    let inband: Vec<&Value> =
        events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "bmc.inband").collect();
    assert_eq!(inband.len(), 1, "{events}");
    assert_eq!(
        (inband[0]["detail"]["rotated"].as_bool(), inband[0]["detail"]["channel"].as_u64()),
        (Some(false), Some(1))
    );
    // The password is nowhere to be read: not the BMC view, the timeline, the jobs, the audit log.
    for path in [
        format!("/machines/{MAC}/bmc"),
        format!("/machines/{MAC}/events?limit=1000"),
        format!("/jobs?machine={MAC}"),
        "/audit?limit=1000".into(),
        format!("/machines/{MAC}"),
    ] {
        let text = a.get(&path).await.to_string();
        assert!(!text.contains(PASSWORD), "{path} shows the password");
    }

    // Ended, the job takes no more reports.
    let result = json!({"attempt": 1, "outcome": "succeeded", "duration_ms": 5}).to_string();
    call(&a, "POST", &format!("/agent/v1/jobs/{job}/result"), Some(&cred), &result).await;
    let (status, _) = call(&a, "POST", &path, Some(&cred), &report("rackboot", "Another-Pass-123", "198.18.0.5")).await;
    assert_eq!(status, 409);

    // A new password: an operator asks, the same job runs; a hand-made job is refused.
    let r = a.api.ok(Method::POST, &format!("/machines/{MAC}/bmc/inband"), None).await.unwrap();
    assert_eq!(r["action"]["kind"], "bmc_account", "{r}");
    let by_hand = json!({"machine": MAC, "action": {"kind": "bmc_account", "username": "admin", "channel": 1}});
    let e = a.api.ok(Method::POST, "/jobs", Some(by_hand)).await.unwrap_err().to_string();
    assert!(e.contains("/bmc/inband"), "{e}");
    let (status, v) = call(&a, "GET", "/agent/v1/jobs/next?wait=1", Some(&cred), "").await;
    assert_eq!(status, 200, "{v}");
    let rotate = format!("/agent/v1/jobs/{}/bmc-account", v["id"]);
    let (status, _) =
        call(&a, "POST", &rotate, Some(&cred), &report("rackboot", "Another-Pass-123", "198.18.0.5")).await;
    assert_eq!(status, 204);
    let events = a.get(&format!("/machines/{MAC}/events?limit=1000")).await;
    let last = events["events"].as_array().unwrap().iter().rev().find(|e| e["kind"] == "bmc.inband").unwrap().clone();
    assert_eq!(last["detail"]["rotated"], true, "{last}");
}
