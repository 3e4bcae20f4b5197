//! Several appliances on one CMDB in PostgreSQL (a throwaway cluster from Debian's package, on
//! a Unix socket, started and stopped here): each sees what the others write (machines, racks,
//! events in its live stream, in sequence order), and a job queued through one appliance is run
//! exactly once by an agent that polls another. Skips where PostgreSQL is not installed.

use std::time::Duration;

use crate::common::appliance::Appliance;
use crate::common::https_get;
use hyper::Method;
use serde_json::{json, Value};

fn script(body: &str) -> Value {
    json!({"kind": "script", "interpreter": "/bin/sh", "body": body})
}

/// Waits up to `secs` for `f` to succeed.
async fn within<T, F: std::future::Future<Output = anyhow::Result<T>>>(secs: u64, mut f: impl FnMut() -> F) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(e) if tokio::time::Instant::now() > deadline => panic!("still failing after {secs} s: {e:#}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(25)).await,
        }
    }
}

#[tokio::test]
async fn two_appliances_share_one_cmdb_and_a_job_queued_through_one_runs_once_through_the_other() {
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let a = Appliance::start(&pg.store()).await;
    let b = Appliance::start(&pg.store()).await;
    let mut live_on_a = a.app.as_ref().unwrap().cmdb.subscribe_events();

    // Each lists both appliances, alive, itself marked, with where each answers.
    for (me, other) in [(&a, &b), (&b, &a)] {
        let list = within(10, || async {
            let l = me.api.ok(Method::GET, "/appliances", None).await?;
            anyhow::ensure!(l["appliances"].as_array().map_or(0, |v| v.len()) == 2, "{l}");
            Ok(l)
        })
        .await;
        let all = list["appliances"].as_array().unwrap();
        assert!(all.iter().all(|x| x["alive"] == true), "{list}");
        let this: Vec<&Value> = all.iter().filter(|x| x["this"] == true).collect();
        assert_eq!(this.len(), 1, "{list}");
        assert_eq!(this[0]["https_base"], me.url().trim_end_matches('/'), "{list}");
        assert!(all.iter().any(|x| x["https_base"] == other.url().trim_end_matches('/')), "{list}");
    }

    // A machine enrolls through B; A knows it (its index, its API) and its timeline.
    const MAC: &str = "52:54:00:b0:00:01";
    let work = tempfile::tempdir().unwrap();
    let agent = b.agent(MAC, work.path());
    let m = within(10, || async {
        let m = a.api.ok(Method::GET, &format!("/machines/{MAC}"), None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "no inventory yet");
        Ok(m)
    })
    .await;
    let id = m["id"].as_u64().unwrap();
    assert_eq!(m["state"], "ready");
    assert!(a.app.as_ref().unwrap().cmdb.brief_by_mac(MAC.parse().unwrap()).is_some(), "in A's index");

    // A job queued through A reaches the agent long-polling B at once, and runs once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let job = a.submit(json!({"machine": MAC, "action": script("echo ran-once")})).await[0]["id"].as_u64().unwrap();
    let done = within(20, || async {
        let j = b.api.ok(Method::GET, &format!("/jobs/{job}"), None).await?;
        anyhow::ensure!(j["state"] == "succeeded", "job {job}: {j}");
        Ok(j)
    })
    .await;
    assert_eq!(done["attempt"], 1);
    let picked_up = done["claimed_at_ms"].as_u64().unwrap() - done["created_at_ms"].as_u64().unwrap();
    assert!(picked_up < 1500, "the job queued through A woke B's long-poll ({picked_up} ms)");
    let out = a.get(&format!("/jobs/{job}/output")).await;
    assert_eq!(out["text"].as_str().unwrap().matches("ran-once").count(), 1, "{out}");
    let ev = a.get(&format!("/machines/{id}/events?limit=500")).await;
    let started = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "job.started" && e["detail"]["job"] == json!(job))
        .count();
    assert_eq!(started, 1, "claimed exactly once");

    // A's live stream carried B's events, in sequence order with A's own.
    let mut seen = Vec::new();
    within(5, || {
        while let Ok(e) = live_on_a.try_recv() {
            seen.push(e);
        }
        let done = seen.iter().any(|e| e.kind.as_str() == "job.finished");
        async move {
            if done {
                Ok(())
            } else {
                anyhow::bail!("no job.finished in A's stream yet")
            }
        }
    })
    .await;
    let kinds: Vec<&str> = seen.iter().map(|e| e.kind.as_str()).collect();
    for k in ["agent.enrolled", "agent.inventory", "job.queued", "job.started", "job.finished"] {
        assert!(kinds.contains(&k), "{k} missing from A's stream: {kinds:?}");
    }
    assert!(seen.windows(2).all(|w| w[0].seq < w[1].seq), "in sequence order");

    // A rack made through B is in A's cache (rack lookups never read storage).
    let spec = json!({"name": "r9", "switch": {"remote_id": "leaf-r9"}, "ports": ["Ethernet1-2 -> U1-U2"]});
    let (status, body) = b.api.call(Method::POST, "/racks", Some(spec)).await.unwrap();
    assert_eq!(status, 201, "{body}");
    within(5, || async {
        anyhow::ensure!(a.app.as_ref().unwrap().cmdb.has_racks(), "A does not know the rack yet");
        Ok(())
    })
    .await;
    agent.abort();
}

/// `rackboot store migrate` with the real binary: an embedded CMDB into PostgreSQL (verified,
/// refused the second time), an appliance on PostgreSQL seeing the same machines, and back into
/// a new file that an appliance opens with them all.
#[tokio::test]
async fn store_migrate_copies_into_postgres_and_back_verified() {
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let mut first = Appliance::start("").await;
    for i in 1..=3 {
        let body = json!({"macs": [format!("52:54:00:c0:00:0{i}")], "hostname": format!("web{i}")});
        assert_eq!(first.api.call(Method::POST, "/machines", Some(body)).await.unwrap().0, 201);
    }
    let listed = |v: &Value| -> Vec<String> {
        let mut names: Vec<String> =
            v["machines"].as_array().unwrap().iter().map(|m| m["hostname"].as_str().unwrap().to_string()).collect();
        names.sort();
        names
    };
    let before = listed(&first.get("/machines").await);
    first.stop().await;

    let migrate = |config: &std::path::Path, to: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rackboot"))
            .args(["store", "migrate", "--config"])
            .arg(config)
            .args(["--to", to])
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let embedded = first.dir.path().join("embedded.toml");
    std::fs::write(&embedded, format!("[server]\ndata_dir = \"{}\"\n", first.dir.path().display())).unwrap();
    let (ok, out) = migrate(&embedded, &pg.url);
    assert!(ok && out.contains("count and checksum the same"), "{out}");
    assert!(out.contains("machines") && out.contains("        3 rows"), "{out}");
    let (ok, out) = migrate(&embedded, &pg.url);
    assert!(!ok && out.contains("not empty"), "a second copy is refused: {out}");

    let on_pg = Appliance::start(&pg.store()).await;
    assert_eq!(listed(&on_pg.get("/machines").await), before, "the appliance on PostgreSQL has them");

    let back = tempfile::tempdir().unwrap();
    let postgres = back.path().join("postgres.toml");
    std::fs::write(
        &postgres,
        format!("[server]\ndata_dir = \"{}\"\n{}", back.path().join("unused").display(), pg.store()),
    )
    .unwrap();
    let file = back.path().join("back.redb");
    let (ok, out) = migrate(&postgres, file.to_str().unwrap());
    assert!(ok, "{out}");
    let db = rackboot::cmdb::Cmdb::open(&file, 8).unwrap();
    let page = db.list_machines(Default::default()).await.unwrap();
    let mut names: Vec<String> = page.machines.iter().filter_map(|m| m.hostname.clone()).collect();
    names.sort();
    assert_eq!(names, before, "the file made from PostgreSQL holds them");
}

/// With `store.tls_ca_file` the connection to PostgreSQL is TLS, checked against that CA, or
/// nothing: a server whose certificate another CA signed is refused, and so is a plain
/// connection to a server that takes TLS only.
#[tokio::test]
async fn tls_to_postgres_is_checked_against_the_configured_ca() {
    let Some(pg) = crate::pg::Cluster::start_tls() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let store = |ca: Option<&std::path::Path>| {
        let ca = ca.map(|c| format!("tls_ca_file = \"{}\"\n", c.display())).unwrap_or_default();
        format!("\n[store]\nbackend = \"postgres\"\nurl = \"{}\"\n{ca}", pg.url)
    };
    let a = Appliance::start(&store(Some(&pg.ca()))).await;
    let body = json!({"macs": ["52:54:00:d0:00:01"], "hostname": "tls1"});
    assert_eq!(a.api.call(Method::POST, "/machines", Some(body)).await.unwrap().0, 201);

    // Another CA: the server's certificate does not chain to it.
    let other = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=other-ca", "-keyout"])
        .arg(other.path().join("k.pem"))
        .arg("-out")
        .arg(other.path().join("ca.pem"))
        .output()
        .unwrap();
    assert!(made.status.success());
    for (ca, why) in [(Some(other.path().join("ca.pem")), "another CA"), (None, "no TLS")] {
        let dir = tempfile::tempdir().unwrap();
        let text = format!(
            "[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n[http]\nlisten = \"127.0.0.1:0\"\n[https]\nlisten = \"127.0.0.1:0\"\n[dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n{}",
            dir.path().display(),
            store(ca.as_deref())
        );
        let cfg = rackboot::config::Config::parse(&text).unwrap();
        let err = match rackboot::app::start(cfg).await {
            Ok(_) => panic!("started with {why}"),
            Err(e) => format!("{e:#}"),
        };
        assert!(err.contains("opening the CMDB on PostgreSQL"), "{why}: {err}");
    }
}

/// PostgreSQL unreachable: a change is refused at once with 503 naming the store (nothing is
/// half-written, nothing hangs), what is in memory still answers, and writes resume by
/// themselves once the server is back, with everything acknowledged before still there.
#[tokio::test]
async fn an_unreachable_postgres_refuses_changes_and_writes_resume_when_it_is_back() {
    let Some(pg) = crate::pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let a = Appliance::start(&pg.store()).await;
    let machine = |i: u32| json!({"macs": [format!("52:54:00:e0:00:{i:02x}")], "hostname": format!("db{i}")});
    assert_eq!(a.api.call(Method::POST, "/machines", Some(machine(1))).await.unwrap().0, 201);

    pg.set("down");
    let t = std::time::Instant::now();
    let (status, body) = a.api.call(Method::POST, "/machines", Some(machine(2))).await.unwrap();
    assert_eq!(status, 503, "{body}");
    // The token cannot be checked either: the caller has proven nothing yet, so the answer says
    // the CMDB cannot be read and names no host or database (the log does).
    assert!(body["detail"].as_str().unwrap_or_default().contains("cannot read its CMDB"), "{body}");
    assert!(!body.to_string().contains("PostgreSQL") && !body.to_string().contains("rackboot-pg"), "{body}");
    let (status, health) =
        https_get(a.app.as_ref().unwrap().https_addr, &a.app.as_ref().unwrap().ca_pem, "/healthz").await;
    assert_eq!(status, 503, "{health}");
    assert!(health.contains("degraded") && !health.contains("rackboot-pg"), "{health}");
    assert!(t.elapsed() < Duration::from_secs(15), "refused, not hung ({:?})", t.elapsed());
    let cmdb = &a.app.as_ref().unwrap().cmdb;
    assert!(cmdb.brief_by_mac("52:54:00:e0:00:01".parse().unwrap()).is_some(), "memory still answers");
    assert!(cmdb.storage_fault().is_some());

    pg.set("up");
    within(20, || async {
        let (status, body) = a.api.call(Method::POST, "/machines", Some(machine(3))).await?;
        anyhow::ensure!(status == 201, "{status}: {body}");
        Ok(())
    })
    .await;
    let names: Vec<String> = a.get("/machines").await["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["hostname"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"db1".to_string()) && names.contains(&"db3".to_string()), "{names:?}");
    assert!(!names.contains(&"db2".to_string()), "the refused change left nothing: {names:?}");
}
