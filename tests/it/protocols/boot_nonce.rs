//! A BootOS booted from its one UEFI image (HTTPS boot: the same command line for every
//! machine) asks for its enrollment nonce over TLS pinned to the appliance's CA
//! (`POST /agent/v1/nonce`): issued only for a MAC whose address the request comes from, it
//! enrolls the machine approved, as a boot script's nonce does. Another machine's MACs, and
//! bodies out of bounds, are refused.

use std::time::Duration;

use hyper::Method;
use serde_json::json;

use crate::common::appliance::Appliance;

const MAC: &str = "52:54:00:e5:00:01";

#[tokio::test]
async fn an_image_booted_agent_gets_its_nonce_over_tls_and_enrolls_approved() {
    let a = Appliance::start("").await;
    let m =
        a.api.ok(Method::POST, "/machines", Some(json!({"macs": [MAC], "reserved_ip": "127.0.0.1"}))).await.unwrap();
    let other = json!({"macs": ["52:54:00:e5:00:02"], "reserved_ip": "127.0.0.9"});
    a.api.ok(Method::POST, "/machines", Some(other)).await.unwrap();

    let work = tempfile::tempdir().unwrap();
    let agent = a.agent_over_tls(MAC, work.path());
    let events = crate::common::eventually(|| async {
        let ev = a.api.ok(Method::GET, &format!("/machines/{}/events?limit=100", m["id"]), None).await?;
        let ev = ev["events"].as_array().cloned().unwrap_or_default();
        anyhow::ensure!(ev.iter().any(|e| e["kind"] == "agent.inventory"), "no inventory yet: {ev:?}");
        Ok(ev)
    })
    .await;
    agent.abort();
    let script = events.iter().find(|e| e["kind"] == "boot.script").expect("the nonce's event");
    assert_eq!((&script["detail"]["loader"], &script["detail"]["nonce"]), (&json!("image"), &json!(true)), "{script}");
    let enrolled = events.iter().find(|e| e["kind"] == "agent.enrolled").unwrap();
    assert_eq!((&enrolled["detail"]["nonce"], &enrolled["detail"]["approved"]), (&json!("valid"), &json!(true)));
    assert_eq!(a.get(&format!("/machines/{MAC}")).await["state"], "ready");

    // The other machine's MAC is not at this address; bodies out of bounds say which field.
    let (url, trust) = (a.url(), a.trust());
    let ask = |body: serde_json::Value| {
        let mut c = rackboot_agent::client::Client::new(&url, &trust).unwrap();
        async move {
            let r = c.call(Method::POST, "/agent/v1/nonce", Some(&body), Duration::from_secs(5)).await.unwrap();
            (r.status, r.error_text())
        }
    };
    let (st, why) = ask(json!({"macs": ["52:54:00:e5:00:02"]})).await;
    assert_eq!(st, 403, "{why}");
    for bad in [json!({"macs": []}), json!({"macs": ["not a mac"]}), json!({"macs": vec![MAC; 17]})] {
        let (st, why) = ask(bad.clone()).await;
        assert!(st == 400 && why.contains("macs"), "{bad}: {st} {why}");
    }
    let (st, why) = ask(json!({"macs": [MAC]})).await;
    assert_eq!(st, 200, "{why}");
}
