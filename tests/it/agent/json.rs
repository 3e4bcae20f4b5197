//! Arbitrary JSON to the agent API, as a compromised or broken node would send it: random JSON
//! trees (with the protocol's own field names among random ones), valid bodies with a field
//! replaced by anything, and valid bodies with their bytes changed, to every agent call with a
//! real credential and a claimed job. Each is answered (2xx or 4xx, never 5xx and never a
//! dropped connection), the store keeps working and decodes every record (no quarantine), and
//! the agent's next valid calls still succeed. No root needed.

use crate::common::appliance::Appliance;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use rackboot_agent::wire::{Inventory, JobResult, Outcome, OutputChunk, Stats, Stream};
use serde_json::{json, Value};

const MAC: &str = "52:54:00:ee:00:01";

/// Field names of the agent protocol, so random trees reach past the first missing field.
const KEYS: [&str; 24] = [
    "macs",
    "boot_mac",
    "serial",
    "system_uuid",
    "mode",
    "version",
    "nonce",
    "cpu",
    "memory_bytes",
    "disks",
    "nics",
    "dmi",
    "pci",
    "attempt",
    "seq",
    "stream",
    "data",
    "outcome",
    "exit_code",
    "duration_ms",
    "error",
    "load",
    "uptime_secs",
    "lldp",
];

fn json_tree() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
        Just(json!("stdout")),
        Just(json!("succeeded")),
        Just(json!(MAC)),
    ];
    let key = prop_oneof![proptest::sample::select(KEYS.to_vec()).prop_map(str::to_string), any::<String>()];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(key.clone(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A body for a call whose valid body is `valid`: a random tree, the valid one with a field
/// set to anything, or its text with bytes changed.
fn body_for(valid: Value) -> impl Strategy<Value = String> {
    let text = valid.to_string();
    let fields: Vec<String> = valid.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    prop_oneof![
        json_tree().prop_map(|v| v.to_string()),
        (proptest::sample::select(fields), json_tree()).prop_map(move |(k, v)| {
            let mut b = valid.clone();
            b[&k] = v;
            b.to_string()
        }),
        proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6).prop_map(move |flips| {
            let mut b = text.clone().into_bytes();
            for (at, byte) in flips {
                let i = at.index(b.len());
                b[i] = byte;
            }
            String::from_utf8_lossy(&b).into_owned()
        }),
    ]
}

async fn call(a: &Appliance, method: &str, path: &str, credential: Option<&str>, body: &str) -> (u16, String) {
    let auth = credential.map(|c| format!("Bearer {c}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    crate::raw::raw(a, method, path, &headers, body).await
}

fn json_body(response: &str) -> Value {
    serde_json::from_str(response.split("\r\n\r\n").nth(1).unwrap_or_default()).unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_json_to_every_agent_call_is_answered_and_stores_nothing_bad() {
    let a = Appliance::start("").await;
    let enroll = json!({"macs": [MAC], "mode": "bootos", "version": "test", "nonce": a.boot_nonce(MAC).await});
    let (status, text) = call(&a, "POST", "/agent/v1/enroll", None, &enroll.to_string()).await;
    assert_eq!(status, 200, "{text}");
    let credential = json_body(&text)["credential"].as_str().unwrap().to_string();
    let job = a
        .submit(json!({"machine": MAC, "action": {"kind": "script", "interpreter": "/bin/sh", "body": "true"}}))
        .await[0]["id"]
        .as_u64()
        .unwrap();
    let (status, text) = call(&a, "GET", "/agent/v1/jobs/next?wait=1", Some(&credential), "").await;
    assert_eq!((status, json_body(&text)["id"].as_u64()), (200, Some(job)), "{text}");

    let output = OutputChunk { attempt: 1, seq: 0, stream: Stream::Stdout, data: "hello\n".into() };
    let result = JobResult {
        attempt: 1,
        outcome: Outcome::Succeeded,
        exit_code: Some(0),
        duration_ms: 5,
        error: None,
        plugin: None,
    };
    let calls: Vec<(&str, String, Option<&str>, Value)> = vec![
        ("PUT", "/agent/v1/inventory".into(), Some(&credential), serde_json::to_value(Inventory::default()).unwrap()),
        ("POST", format!("/agent/v1/jobs/{job}/output"), Some(&credential), serde_json::to_value(&output).unwrap()),
        ("POST", format!("/agent/v1/jobs/{job}/result"), Some(&credential), serde_json::to_value(&result).unwrap()),
        ("POST", "/agent/v1/stats".into(), Some(&credential), serde_json::to_value(Stats::default()).unwrap()),
        // Last: an enrollment that gets through replaces the credential the others use.
        ("POST", "/agent/v1/enroll".into(), None, enroll.clone()),
    ];
    let mut runner = TestRunner::deterministic();
    let mut by_status = std::collections::BTreeMap::new();
    for (method, path, cred, valid) in &calls {
        let bodies = body_for(valid.clone());
        for _ in 0..80 {
            let body = bodies.new_tree(&mut runner).unwrap().current();
            let (status, text) = call(&a, method, path, *cred, &body).await;
            assert!((200..500).contains(&status), "{method} {path} with {body:?} was answered {status}:\n{text}");
            *by_status.entry(status).or_insert(0u32) += 1;
        }
    }
    println!("400 arbitrary bodies, answers by status: {by_status:?}");
    assert!(by_status.keys().any(|s| *s >= 400), "nothing was refused: the bodies were not hostile");

    // The store took no damage: every record decodes, and the agent carries on (enrolling
    // again with a fresh boot nonce, as a rebooted node would).
    let quarantined = a.get("/quarantine").await;
    assert_eq!(quarantined["records"].as_array().map(Vec::len), Some(0), "{quarantined}");
    let machines = a.get("/machines?limit=1000").await;
    assert!(machines["machines"].as_array().unwrap().iter().any(|m| m["macs"][0] == MAC), "{machines}");
    let again = json!({"macs": [MAC], "mode": "bootos", "nonce": a.boot_nonce(MAC).await});
    let (status, text) = call(&a, "POST", "/agent/v1/enroll", None, &again.to_string()).await;
    assert_eq!(status, 200, "{text}");
    let credential = json_body(&text)["credential"].as_str().unwrap().to_string();
    let inventory = serde_json::to_string(&Inventory { memory_bytes: 1 << 30, ..Inventory::default() }).unwrap();
    let (status, text) = call(&a, "PUT", "/agent/v1/inventory", Some(&credential), &inventory).await;
    assert!((200..300).contains(&status), "a valid inventory after the storm: {status} {text}");
    assert_eq!(a.get(&format!("/machines/{MAC}")).await["inventory"]["memory_bytes"], 1u64 << 30);
}
