//! Backup and restore as an operator does them: `rackboot backup FILE` (the real CLI) against a
//! serving appliance, `rackboot restore` refused while it runs, then a wiped CMDB restored into
//! the stopped appliance gives back the same machines, jobs with output, events and users, byte
//! for byte in the API's answers. No root needed.

use std::path::Path;
use std::process::Output;

use crate::common::appliance::Appliance;
use hyper::Method;
use serde_json::{json, Value};

/// Runs the rackboot binary off the runtime (it talks to the appliance running on it).
async fn rackboot(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || std::process::Command::new(env!("CARGO_BIN_EXE_rackboot")).args(args).output())
        .await
        .unwrap()
        .unwrap()
}

fn api_args(a: &Appliance, token_file: &Path) -> Vec<String> {
    let dir = a.dir.path();
    vec![
        "--api".into(),
        a.url(),
        "--ca".into(),
        dir.join("tls/ca.pem").display().to_string(),
        "--token-file".into(),
        token_file.display().to_string(),
    ]
}

/// What an operator reads back: the answers that must survive the round trip.
async fn answers(a: &Appliance, job: u64) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in [
        "/machines".to_string(),
        "/machines/52:54:00:b1:00:01".into(),
        "/machines/52:54:00:b1:00:01/events".into(),
        "/machines/52:54:00:b1:00:02/events".into(),
        format!("/jobs/{job}"),
        format!("/jobs/{job}/output"),
        "/leases".into(),
        "/users".into(),
    ] {
        let (status, body) = a.api.call(Method::GET, &path, None).await.unwrap();
        assert_eq!(status, 200, "{path}: {body}");
        out.push((path, body.to_string()));
    }
    out
}

#[tokio::test]
async fn a_backup_taken_while_serving_restores_every_machine_job_and_event() {
    let mut a = Appliance::start("").await;
    let work = tempfile::tempdir().unwrap();
    a.api
        .ok(
            Method::POST,
            "/machines",
            Some(json!({"macs": ["52:54:00:b1:00:02"], "hostname": "web02", "reserved_ip": "198.18.0.22", "tags": ["rack1"]})),
        )
        .await
        .unwrap();
    let agent = a.agent("52:54:00:b1:00:01", work.path());
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, "/machines/52:54:00:b1:00:01", None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "no inventory yet");
        Ok(())
    })
    .await;
    let body = json!({"machine": "52:54:00:b1:00:01", "action": {"kind": "script", "body": "echo backed up"}});
    let job = a.submit(body).await[0]["id"].as_u64().unwrap();
    a.job_in(job, "succeeded", 10).await;
    agent.abort();
    let before = answers(&a, job).await;

    // A viewer may not take the whole CMDB home; the refusal is audited.
    let viewer = a.api.ok(Method::POST, "/tokens", Some(json!({"name": "peek", "role": "viewer"}))).await.unwrap();
    let viewer_file = work.path().join("viewer.token");
    std::fs::write(&viewer_file, viewer["secret"].as_str().unwrap()).unwrap();
    let file = work.path().join("rackboot.bak");
    let mut args = vec!["backup".to_string(), file.display().to_string()];
    args.extend(api_args(&a, &viewer_file));
    let out = rackboot(args).await;
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("403"), "{out:?}");
    assert!(!file.exists(), "a refused backup leaves no file");

    // The admin's, while the appliance serves.
    let admin_file = a.dir.path().join("admin.token");
    let mut args = vec!["backup".to_string(), file.display().to_string()];
    args.extend(api_args(&a, &admin_file));
    let out = rackboot(args.clone()).await;
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("2 machines") && said.contains("1 jobs"), "{said}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    // Never over an existing file.
    let out = rackboot(args).await;
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("exists"), "{out:?}");
    let audit = a.get("/audit?method=GET").await;
    let routes: Vec<(&str, u64)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["route"].as_str().unwrap(), e["status"].as_u64().unwrap()))
        .collect();
    assert!(routes.contains(&("/backup", 200)) && routes.contains(&("/backup", 403)), "{routes:?}");

    // Restore needs the appliance stopped.
    let config = work.path().join("restore.toml");
    std::fs::write(&config, format!("[server]\ndata_dir = \"{}\"\n", a.dir.path().display())).unwrap();
    let restore = vec!["restore".into(), "--config".into(), config.display().to_string(), file.display().to_string()];
    let out = rackboot(restore.clone()).await;
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("stop it"), "{out:?}");

    // A bad day: the CMDB is gone. The backup brings back everything.
    a.stop().await;
    std::fs::remove_file(a.dir.path().join("rackboot.redb")).unwrap();
    let out = rackboot(restore).await;
    assert!(out.status.success(), "{out:?}");
    a.boot().await;
    let after = answers(&a, job).await;
    for ((path, was), (_, is)) in before.iter().zip(&after) {
        assert_eq!(was, is, "{path} differs after the restore");
    }
    let v: Value = a.get("/machines/52:54:00:b1:00:02").await;
    assert_eq!(v["reserved_ip"], "198.18.0.22");
}

#[tokio::test]
async fn a_junk_file_is_not_restored_and_the_cmdb_is_left_alone() {
    let mut a = Appliance::start("").await;
    a.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:b1:00:09"]}))).await.unwrap();
    a.stop().await;
    let work = tempfile::tempdir().unwrap();
    let junk = work.path().join("junk.redb");
    std::fs::write(&junk, vec![0x5a; 4096]).unwrap();
    let config = work.path().join("restore.toml");
    std::fs::write(&config, format!("[server]\ndata_dir = \"{}\"\n", a.dir.path().display())).unwrap();
    let out =
        rackboot(vec!["restore".into(), "--config".into(), config.display().to_string(), junk.display().to_string()])
            .await;
    assert!(!out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be restored"), "{out:?}");
    a.boot().await;
    assert_eq!(a.get("/machines").await["machines"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_record_that_does_not_decode_is_quarantined_and_the_appliance_starts() {
    let mut a = Appliance::start("").await;
    for i in 1..=3 {
        a.api.ok(Method::POST, "/machines", Some(json!({"macs": [format!("52:54:00:b1:01:0{i}")]}))).await.unwrap();
    }
    let id = a.get("/machines/52:54:00:b1:01:02").await["id"].as_u64().unwrap();
    a.stop().await;
    {
        // A bad block: the record's bytes are no longer a machine.
        let raw = redb::Database::create(a.dir.path().join("rackboot.redb")).unwrap();
        let tx = raw.begin_write().unwrap();
        let def: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("machines");
        tx.open_table(def).unwrap().insert(id, [0xffu8, 0x00, 0x13].as_slice()).unwrap();
        tx.commit().unwrap();
    }
    a.boot().await;
    let list = a.get("/machines").await;
    assert_eq!(list["total"], 2, "the appliance started with the others: {list}");
    let (status, body) = crate::common::https_get_with(
        ([127, 0, 0, 1], a.tls_port).into(),
        &std::fs::read_to_string(a.dir.path().join("tls/ca.pem")).unwrap(),
        "/healthz",
        None,
    )
    .await;
    assert!(status == 503 && body.contains("1 CMDB record(s)") && body.contains("/api/v1/quarantine"), "{body}");
    let q = a.get("/quarantine").await;
    assert_eq!(
        (q["records"][0]["table"].as_str(), q["records"][0]["key"].as_u64()),
        (Some("machines"), Some(id)),
        "{q}"
    );
    let ev = a.get("/events?kind=cmdb.quarantined").await;
    assert!(ev.to_string().contains("cmdb.quarantined"), "{ev}");
    let cleared = a.api.ok(Method::DELETE, "/quarantine", None).await.unwrap();
    assert_eq!(cleared["cleared"], 1);
    let (_, body) = crate::common::https_get_with(
        ([127, 0, 0, 1], a.tls_port).into(),
        &std::fs::read_to_string(a.dir.path().join("tls/ca.pem")).unwrap(),
        "/healthz",
        None,
    )
    .await;
    assert!(!body.contains("quarantine"), "{body}");
}
