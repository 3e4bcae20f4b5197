//! Plugins across appliances on one PostgreSQL CMDB (a throwaway cluster): a bundle uploaded
//! through one appliance runs on a machine whose agent polls another, which serves it from the
//! store's copy (checked by hash: an altered copy is refused) and keeps it on its disk; deleting
//! the version through the other appliance removes the store's copy too. Skips without
//! PostgreSQL or minisign.

use crate::common::appliance::Appliance;
use crate::kit::*;
use hyper::Method;
use serde_json::json;

const MAC: &str = "52:54:00:b1:00:01";

const MANIFEST: &str = r#"name = "shared"
version = "1.0.0"
vendor = "rackboot-lab"
[match]
dmi_vendor = ["*"]
[check]
run = "bin/check"
timeout = 10
[apply]
run = "bin/apply"
timeout = 10
[params]
type = "object"
"#;

/// Runs `query` on the store with psql (Debian's postgresql-client); its output.
fn sql(pg: &crate::pg::Cluster, query: &str) -> String {
    let out = std::process::Command::new("psql").args([&pg.url, "-qAtX", "-c", query]).output().unwrap();
    assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The hashes in the store's `plugin_blobs`.
fn shared_blobs(pg: &crate::pg::Cluster) -> String {
    sql(pg, "SELECT string_agg(sha256, ',') FROM plugin_blobs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_uploaded_through_one_appliance_runs_on_a_machine_polling_another() {
    if !have_minisign() {
        eprintln!("skipped: minisign is not installed (tools/setup.sh installs it)");
        return;
    }
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let a = Appliance::start(&pg.store()).await;
    let b = Appliance::start(&pg.store()).await;

    // The vendor key and the bundle go in through A.
    let keys = tempfile::tempdir().unwrap();
    let (public, secret) = keypair(keys.path(), "lab");
    let text = std::fs::read_to_string(public).unwrap();
    let body = json!({"vendor": "rackboot-lab", "public_key": text});
    a.api.ok(Method::POST, "/plugin-keys", Some(body)).await.unwrap();
    let bundle = tgz(&[
        ("manifest.toml", F, 0o644, MANIFEST.as_bytes()),
        ("bin/check", F, 0o755, b"#!/bin/sh\nexit 1\n"),
        ("bin/apply", F, 0o755, b"#!/bin/sh\necho applied-through-b\nexit 0\n"),
    ]);
    let sig = sign(keys.path(), &secret, &bundle);
    let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
    let (status, up) = a.api.post_form("/plugins", &parts).await.unwrap();
    assert_eq!(status, 201, "{up}");
    let sha = up["plugin"]["sha256"].as_str().unwrap().to_string();
    assert_eq!(shared_blobs(&pg), sha, "the bundle is in the store");
    let on_b = b.dir.path().join("plugins/blobs").join(&sha);
    assert!(!on_b.exists(), "B has no copy yet");

    // A machine enrolled through B runs it: B serves the store's copy.
    let work = tempfile::tempdir().unwrap();
    let agent = b.agent(MAC, work.path());
    crate::common::eventually(|| async {
        let m = b.api.ok(Method::GET, &format!("/machines/{MAC}"), None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "no inventory yet");
        Ok(())
    })
    .await;
    let action = json!({"kind": "plugin", "name": "shared", "version": "1.0.0", "sha256": sha, "params": {}});
    let job = json!({"machine": MAC, "action": action, "timeout_secs": 60});

    // A store copy that no longer matches its hash is not served (nor kept on B's disk).
    sql(&pg, "UPDATE plugin_blobs SET bytes = bytes || '\\x00'::bytea");
    let id = b.submit(job.clone()).await[0]["id"].as_u64().unwrap();
    let refused = b.job_in(id, "error", 30).await;
    assert!(refused["error"].as_str().unwrap_or_default().contains("fetching the bundle"), "{refused}");
    assert!(!on_b.exists(), "the altered copy was not kept");
    sql(&pg, "UPDATE plugin_blobs SET bytes = substring(bytes from 1 for length(bytes) - 1)");

    let id = b.submit(job).await[0]["id"].as_u64().unwrap();
    let done = b.job_in(id, "succeeded", 30).await;
    let out = b.get(&format!("/jobs/{id}/output")).await;
    assert!(out["text"].as_str().unwrap_or_default().contains("applied-through-b"), "{done} {out}");
    assert_eq!(std::fs::read(&on_b).unwrap(), bundle, "B keeps the bytes it fetched");

    // Deleted through B: the store's copy goes too.
    let (status, body) = b.api.call(Method::DELETE, "/plugins/shared/versions/1.0.0", None).await.unwrap();
    assert!(status == 200 || status == 204, "{status} {body}");
    assert_eq!(shared_blobs(&pg), "", "the store's copy is gone");
    assert!(!on_b.exists());
    agent.abort();
}
