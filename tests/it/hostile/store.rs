//! Attacks on a shared store (two appliances on one throwaway PostgreSQL cluster): the agent
//! takeover tried through the other appliance, a credential superseded through one appliance
//! that must stop working on the other within a second, and someone with the database who swaps
//! a plugin record's bytes or adds a key of their own. Skips without PostgreSQL (and the plugin
//! cases without minisign).

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{json, Value};

use crate::common::appliance::Appliance;
use crate::pg;

const VICTIM: &str = "52:54:00:e2:00:01";
const NEIGHBOUR: &str = "52:54:00:e2:00:02";

/// An agent-API call over HTTPS to `a`; status and JSON body.
async fn agent_call(
    a: &Appliance,
    method: Method,
    path: &str,
    body: Option<Value>,
    cred: Option<&str>,
) -> (u16, Value) {
    let mut c = rackboot_agent::client::Client::new(&a.url(), &a.trust()).unwrap();
    c.credential = cred.map(String::from);
    let r = c.call(method, &format!("/agent/v1{path}"), body.as_ref(), Duration::from_secs(5)).await.unwrap();
    (r.status, r.json().unwrap_or(Value::Null))
}

async fn enroll(a: &Appliance, body: Value) -> (u16, Value) {
    agent_call(a, Method::POST, "/enroll", Some(body), None).await
}

async fn poll(a: &Appliance, cred: &str) -> u16 {
    agent_call(a, Method::GET, "/jobs/next?wait=0", None, Some(cred)).await.0
}

/// Polls with `cred` on `a` until it is refused; how long that took.
async fn refused_within(a: &Appliance, cred: &str, most: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let status = poll(a, cred).await;
        if status == 401 {
            return start.elapsed();
        }
        assert_eq!(status, 204, "a live credential polls");
        assert!(start.elapsed() < most, "the superseded credential still works after {most:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_other_appliance_a_takeover_is_refused_and_a_superseded_credential_stops_at_once() {
    let Some(pg) = pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let a = Appliance::start(&pg.store()).await;
    let b = Appliance::start(&pg.store()).await;

    // The victim enrolls through A; its credential works on both.
    let nonce = a.boot_nonce(VICTIM).await;
    let (status, genuine) = enroll(&a, json!({"boot_mac": VICTIM, "macs": [VICTIM], "nonce": nonce})).await;
    assert_eq!((status, genuine["approved"].as_bool()), (200, Some(true)), "{genuine}");
    let first = genuine["credential"].as_str().unwrap().to_string();
    assert_eq!((poll(&a, &first).await, poll(&b, &first).await), (204, 204));

    // The neighbour's own nonce (its boot served by A) presented through B for the victim.
    let theirs = a.boot_nonce(NEIGHBOUR).await;
    for body in [
        json!({"boot_mac": VICTIM, "macs": [NEIGHBOUR], "nonce": theirs}),
        json!({"macs": [VICTIM, NEIGHBOUR], "nonce": theirs}),
        json!({"boot_mac": VICTIM, "macs": [VICTIM], "nonce": nonce}),
    ] {
        let (status, answer) = enroll(&b, body.clone()).await;
        assert_eq!(status, 409, "{body}: {answer}");
    }
    assert_eq!((poll(&a, &first).await, poll(&b, &first).await), (204, 204), "the victim keeps its credential");
    // B's index follows the store: the machine A enrolled reaches it within moments.
    let path = format!("/machines/{VICTIM}");
    let m = crate::common::eventually(|| b.api.ok(Method::GET, &path, None)).await;
    assert_eq!(m["macs"], json!([VICTIM]), "nothing attached: {m}");

    // A new boot re-enrolls the victim through A: the old credential, cached on B, stops there
    // within a second.
    let again = a.boot_nonce(VICTIM).await;
    let (status, renewed) = enroll(&a, json!({"boot_mac": VICTIM, "macs": [VICTIM], "nonce": again})).await;
    assert_eq!(status, 200, "{renewed}");
    let second = renewed["credential"].as_str().unwrap().to_string();
    let took = refused_within(&b, &first, Duration::from_secs(1)).await;
    eprintln!("a superseded credential stopped on the other appliance after {took:?}");
    assert_eq!(poll(&b, &second).await, 204);

    // Deleted through A: its agent is refused on B within a second too.
    let id = renewed["machine_id"].as_u64().unwrap();
    let (status, body) = a.api.call(Method::DELETE, &format!("/machines/{id}"), None).await.unwrap();
    assert!(status == 200 || status == 204, "{status} {body}");
    refused_within(&b, &second, Duration::from_secs(1)).await;
}

/// An agent's fetch of a plugin bundle by its hash from `on`: the status.
async fn fetch(on: &Appliance, sha: &str, cred: &str) -> u16 {
    agent_call(on, Method::GET, &format!("/plugins/{sha}"), None, Some(cred)).await.0
}

/// Runs `query` on the store with psql; its output.
fn sql(pg: &pg::Cluster, query: &str) -> String {
    let out = std::process::Command::new("psql").args([&pg.url, "-qAtX", "-c", query]).output().unwrap();
    assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Someone with the database: a plugin record pointed at bytes no trusted key signed (the store
/// copy and the record's hash agree) is not served by an appliance that lacks them; and a key
/// added to the store does not make an appliance that pins its keys serve what it signed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_with_the_database_cannot_get_an_agent_to_run_bytes_no_trusted_key_signed() {
    use crate::kit::*;
    if !have_minisign() {
        eprintln!("skipped: minisign is not installed (tools/setup.sh installs it)");
        return;
    }
    let Some(pg) = pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let keys = tempfile::tempdir().unwrap();
    let (vendor_pub, vendor_key) = keypair(keys.path(), "vendor");
    let (rogue_pub, rogue_key) = keypair(keys.path(), "rogue");
    let vendor_line = std::fs::read_to_string(&vendor_pub).unwrap().lines().nth(1).unwrap().to_string();
    let a = Appliance::start(&pg.store()).await;
    let b = Appliance::start(&format!("{}\n[plugins]\ntrusted_keys = [\"{vendor_line}\"]\n", pg.store())).await;

    let upload = |name: &str, key_file: &std::path::Path| {
        let bundle = good(name, "1.0.0", "rackboot-lab", "exit 1", "echo applied");
        let sig = sign(keys.path(), key_file, &bundle);
        (bundle, sig)
    };
    for (public, vendor) in [(&vendor_pub, "rackboot-lab"), (&rogue_pub, "rackboot-lab")] {
        let body = json!({"vendor": vendor, "public_key": std::fs::read_to_string(public).unwrap()});
        let (status, answer) = a.api.call(Method::POST, "/plugin-keys", Some(body)).await.unwrap();
        assert!(status == 200 || status == 201, "{status} {answer}");
    }
    let mut shas = Vec::new();
    for (name, key) in [("genuine", &vendor_key), ("rogue", &rogue_key)] {
        let (bundle, sig) = upload(name, key);
        let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
        let (status, up) = a.api.post_form("/plugins", &parts).await.unwrap();
        assert_eq!(status, 201, "{up}");
        shas.push(up["plugin"]["sha256"].as_str().unwrap().to_string());
    }
    let nonce = b.boot_nonce(VICTIM).await;
    let (_, enrolled) = enroll(&b, json!({"boot_mac": VICTIM, "macs": [VICTIM], "nonce": nonce})).await;
    let cred = enrolled["credential"].as_str().unwrap().to_string();

    // The genuine bundle is served by both; the rogue key's only by A, which does not pin keys.
    assert_eq!(fetch(&b, &shas[0], &cred).await, 200);
    assert_eq!(fetch(&a, &shas[1], &cred).await, 200, "A trusts the store's key list");
    assert_eq!(fetch(&b, &shas[1], &cred).await, 403, "B serves only what its pinned keys signed");

    // The record of a version B has never fetched is pointed at other bytes, with the copy in
    // the store to match: B refuses to serve it and keeps nothing.
    let evil = good("swapped", "1.0.0", "rackboot-lab", "exit 1", "echo owned");
    let evil_sha = rackboot_agent::bundle::sha256_hex(&evil);
    let hex: String = evil.iter().map(|b| format!("{b:02x}")).collect();
    sql(&pg, &format!("INSERT INTO plugin_blobs (sha256, bytes) VALUES ('{evil_sha}', '\\x{hex}'::bytea)"));
    sql(
        &pg,
        &format!(
            "UPDATE plugins SET v = jsonb_set(jsonb_set(v::jsonb, '{{sha256}}', '\"{evil_sha}\"'), '{{size}}', '{}')::json WHERE k = 'rogue/1.0.0'",
            evil.len()
        ),
    );
    // The rogue key is revoked-free and A trusts it, yet the swapped bytes carry no signature of it.
    assert_eq!(fetch(&a, &evil_sha, &cred).await, 403, "the kept signature does not cover the swapped bytes");
    assert_eq!(fetch(&b, &evil_sha, &cred).await, 403);
    assert!(!b.dir.path().join("plugins/blobs").join(&evil_sha).exists(), "nothing kept on B");
}
