//! The agent (the real `rackboot-agent` library) against the whole appliance in-process on
//! loopback: enrollment and credentials, inventory, jobs by long-poll with output and results,
//! cancel, lease expiry and redelivery, jobs by tag, live output as server-sent events, and an
//! appliance restart in the middle of a job. No root needed.

use std::time::Duration;

use crate::common::appliance::Appliance;
use hyper::Method;
use serde_json::{json, Value};

fn script(body: &str) -> Value {
    json!({"kind": "script", "interpreter": "/bin/sh", "body": body})
}

async fn enrolled(a: &Appliance, mac: &str) -> Value {
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, &format!("/machines/{mac}"), None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "no inventory yet");
        Ok(m)
    })
    .await
}

#[tokio::test]
async fn agent_enrolls_inventories_and_runs_jobs_by_long_poll() {
    let a = Appliance::start("").await;
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent("52:54:00:a0:00:01", work.path());
    let m = enrolled(&a, "52:54:00:a0:00:01").await;
    assert_eq!(m["state"], "ready", "an inventoried machine is ready");
    assert!(m["inventory"]["cpu"]["threads"].as_u64().unwrap() >= 1);
    assert!(m["inventory"]["memory_bytes"].as_u64().unwrap() > 0);
    let id = m["id"].as_u64().unwrap();
    let rec = a.get(&format!("/machines/{id}/agent")).await;
    assert_eq!((rec["mode"].as_str(), rec["approved"].as_bool()), (Some("bootos"), Some(true)));
    assert!(rec.get("secret_sha256").is_none(), "the credential hash is never shown");

    // The agent is parked in a long-poll now; a job wakes it at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let jobs =
        a.submit(json!({"machine": "52:54:00:a0:00:01", "action": script("echo hello; echo oops >&2; exit 3")})).await;
    let job = jobs[0]["id"].as_u64().unwrap();
    let done = a.job_in(job, "failed", 10).await;
    assert_eq!(done["exit_code"], 3);
    assert_eq!(done["attempt"], 1);
    let picked_up = done["claimed_at_ms"].as_u64().unwrap() - done["created_at_ms"].as_u64().unwrap();
    assert!(picked_up < 1000, "a queued job reaches a polling agent at once, not at its next poll ({picked_up} ms)");
    let out = a.get(&format!("/jobs/{job}/output")).await;
    assert!(out["text"].as_str().unwrap().contains("hello\n"), "{out}");
    let streams: Vec<&str> = out["chunks"].as_array().unwrap().iter().map(|c| c["stream"].as_str().unwrap()).collect();
    assert!(streams.contains(&"stderr"), "{streams:?}");

    let ok =
        a.submit(json!({"machine": id.to_string(), "action": script("uname -s")})).await[0]["id"].as_u64().unwrap();
    a.job_in(ok, "succeeded", 10).await;
    assert!(a.get(&format!("/jobs/{ok}/output")).await["text"].as_str().unwrap().contains("Linux"));
    // A script gets its session as a file (for the identity step), never in its environment.
    let env = a
        .submit(json!({"machine": id.to_string(), "action": script("env; echo; wc -c < \"$RACKBOOT_SESSION_FILE\"")}))
        .await[0]["id"]
        .as_u64()
        .unwrap();
    a.job_in(env, "succeeded", 10).await;
    let text = a.get(&format!("/jobs/{env}/output")).await["text"].as_str().unwrap().to_string();
    assert!(text.contains("RACKBOOT_SESSION_FILE="), "{text}");
    assert!(
        !text.contains("credential") && !text.contains("RACKBOOT_SESSION="),
        "no credential in the environment: {text}"
    );
    assert!(!work.path().join("session.json").exists(), "the session file goes when the job ends");
    let inv = a.submit(json!({"machine": id.to_string(), "action": {"kind": "refresh_inventory"}})).await[0]["id"]
        .as_u64()
        .unwrap();
    a.job_in(inv, "succeeded", 10).await;

    // Stats arrive on their own schedule.
    crate::common::eventually(|| async {
        let r = a.api.ok(Method::GET, &format!("/machines/{id}/agent"), None).await?;
        anyhow::ensure!(r["stats"]["uptime_secs"].as_u64().unwrap_or(0) > 0, "no stats yet");
        Ok(())
    })
    .await;

    let ev = a.get(&format!("/machines/{id}/events")).await;
    let kinds: Vec<&str> = ev["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    for k in ["machine.discovered", "agent.enrolled", "agent.inventory", "job.queued", "job.started", "job.finished"] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    let listed = a.get(&format!("/jobs?machine={id}&state=succeeded")).await;
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 3);
    agent.abort();
}

#[tokio::test]
async fn a_neighbour_heard_during_a_long_poll_reaches_the_appliance_at_once() {
    // The product's poll (25 s), not the tests' 2 s: the neighbour must not wait for it to end.
    let a = Appliance::start("poll_secs = 25\nlease_secs = 60\nstats_secs = 5").await;
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:a0:00:0c";
    let (agent, heard) = a.agent_with_lldp(mac, work.path()).await;
    let m = enrolled(&a, mac).await;
    assert_eq!(m["inventory"]["lldp"], json!([]));
    // The agent is parked in its long-poll (25 s) now. The switch port it is heard on must show
    // within the 2 s `eventually` allows, not when the poll ends, and the poll still brings jobs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    heard(rackboot_agent::wire::LldpNeighbor {
        interface: "eth0".into(),
        chassis_id: "leaf-r9".into(),
        port_id: "swp12".into(),
        system_name: Some("leaf-r9".into()),
        ..Default::default()
    });
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, &format!("/machines/{mac}"), None).await?;
        anyhow::ensure!(
            m["inventory"]["lldp"][0]["port_id"] == "swp12",
            "no neighbour yet: {}",
            m["inventory"]["lldp"]
        );
        Ok(())
    })
    .await;
    let job = a.submit(json!({"machine": mac, "action": script("true")})).await[0]["id"].as_u64().unwrap();
    let done = a.job_in(job, "succeeded", 10).await;
    let picked_up = done["claimed_at_ms"].as_u64().unwrap() - done["created_at_ms"].as_u64().unwrap();
    assert!(picked_up < 1000, "the poll kept waiting beside the inventory ({picked_up} ms)");

    // A neighbour on the VLAN sending ever-changing frames gets one inventory beside the poll,
    // not one per frame.
    let inventories =
        |ev: &Value| ev["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "agent.inventory").count();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = inventories(&a.get(&format!("/machines/{mac}/events?limit=1000")).await);
    for i in 0..50 {
        heard(rackboot_agent::wire::LldpNeighbor {
            interface: "eth0".into(),
            chassis_id: format!("spoof-{i}"),
            port_id: "swp1".into(),
            ..Default::default()
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let after = inventories(&a.get(&format!("/machines/{mac}/events?limit=1000")).await);
    assert_eq!(after - before, 1, "one inventory beside the poll, the rest wait for its end");
    agent.abort();
}

#[tokio::test]
async fn forged_missing_and_superseded_credentials_are_refused() {
    let a = Appliance::start("").await;
    let http = |cred: Option<String>| {
        let (url, trust) = (a.url(), a.trust());
        async move {
            let mut c = rackboot_agent::client::Client::new(&url, &trust).unwrap();
            c.credential = cred;
            c.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=0", None, Duration::from_secs(5)).await.unwrap().status
        }
    };
    let enroll_as = |nonce: Option<String>, status: u16| {
        let (url, trust) = (a.url(), a.trust());
        async move {
            let mut c = rackboot_agent::client::Client::new(&url, &trust).unwrap();
            let req = json!({"macs": ["52:54:00:a0:00:02"], "boot_mac": "52:54:00:a0:00:02", "nonce": nonce});
            let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
            assert_eq!(r.status, status, "{}", r.error_text());
            r.json::<Value>().unwrap()
        }
    };
    let enroll = || async { enroll_as(Some(a.boot_nonce("52:54:00:a0:00:02").await), 200).await };
    let first = enroll().await;
    let cred = first["credential"].as_str().unwrap().to_string();
    assert_eq!(http(Some(cred.clone())).await, 204);
    assert_eq!(http(None).await, 401, "missing");
    let id = first["machine_id"].as_u64().unwrap();
    assert_eq!(http(Some(format!("{id}.{}", "0".repeat(64)))).await, 401, "forged");
    assert_eq!(
        http(Some(format!("{}.{}", id + 1, &cred[cred.find('.').unwrap() + 1..]))).await,
        401,
        "another machine's id"
    );
    assert_eq!(http(Some("garbage".into())).await, 401);
    // A long-poll already waiting with the old credential when the new boot enrolls: the job
    // that wakes it goes to nobody (401; the poll keeps only a copy of its credential).
    let waiting = {
        let mut c = rackboot_agent::client::Client::new(&a.url(), &a.trust()).unwrap();
        c.credential = Some(cred.clone());
        tokio::spawn(async move {
            c.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=20", None, Duration::from_secs(30))
                .await
                .unwrap()
                .status
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let nonce = a.boot_nonce("52:54:00:a0:00:02").await;
    let second = enroll_as(Some(nonce.clone()), 200).await;
    assert_eq!(second["machine_id"], first["machine_id"], "the same machine, matched by MAC");
    a.submit(json!({"machine": "52:54:00:a0:00:02", "action": script("true")})).await;
    let woken = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("woken by the job").unwrap();
    assert_eq!(woken, 401, "a waiting poll with a superseded credential gets no job");
    assert_eq!(http(Some(cred)).await, 401, "an older credential is superseded by the new boot's enrollment");
    let current = second["credential"].as_str().unwrap().to_string();
    assert_eq!(http(Some(current.clone())).await, 200, "the job goes to the current credential");
    // A neighbour with the MAC but not a boot of it: refused, and the genuine agent keeps working.
    let refused = enroll_as(None, 409).await;
    assert_eq!(refused["status"], 409, "{refused}");
    enroll_as(Some(nonce), 409).await;
    assert_eq!(http(Some(current)).await, 204, "the live credential is untouched");
    let events = a.get("/machines/52:54:00:a0:00:02/events").await;
    let conflicts = events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "agent.enroll_conflict");
    assert_eq!(conflicts.map(|e| e["detail"]["from"].clone()).collect::<Vec<_>>(), vec![json!("127.0.0.1"); 2]);
    // A malformed enrollment is refused with the reason.
    let mut c = rackboot_agent::client::Client::new(&a.url(), &a.trust()).unwrap();
    let r = c
        .call(Method::POST, "/agent/v1/enroll", Some(&json!({"macs": ["nope"]})), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.error_text());
}

#[tokio::test]
async fn approval_policy_holds_new_machines_until_an_operator_approves() {
    let a = Appliance::start("enroll = \"approve\"").await;
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent("52:54:00:a0:00:03", work.path());
    let m =
        crate::common::eventually(|| async { a.api.ok(Method::GET, "/machines/52:54:00:a0:00:03/agent", None).await })
            .await;
    assert_eq!(m["approved"], false);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let machine = a.get("/machines/52:54:00:a0:00:03").await;
    assert!(machine["inventory"].is_null(), "nothing but enrollment is accepted before approval");
    a.api.ok(Method::POST, "/machines/52:54:00:a0:00:03/approve", None).await.unwrap();
    let job =
        a.submit(json!({"machine": "52:54:00:a0:00:03", "action": script("true")})).await[0]["id"].as_u64().unwrap();
    a.job_in(job, "succeeded", 15).await;
    enrolled(&a, "52:54:00:a0:00:03").await;
    agent.abort();
}

#[tokio::test]
async fn a_silent_agent_loses_its_job_to_redelivery_and_cancel_stops_a_running_one() {
    let a = Appliance::start("").await;
    // A fake agent claims a job and then goes silent (a node that crashed mid-job).
    let mut c = rackboot_agent::client::Client::new(&a.url(), &a.trust()).unwrap();
    let nonce = a.boot_nonce("52:54:00:a0:00:04").await;
    let req = json!({"macs": ["52:54:00:a0:00:04"], "boot_mac": "52:54:00:a0:00:04", "nonce": nonce});
    let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
    c.credential = Some(r.json::<Value>().unwrap()["credential"].as_str().unwrap().into());
    let job = a.submit(json!({"machine": "52:54:00:a0:00:04", "action": script("echo second try")})).await[0]["id"]
        .as_u64()
        .unwrap();
    let r = c.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=1", None, Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(a.get(&format!("/jobs/{job}")).await["attempt"], 1);
    // The machine reboots into a working agent; after the 3 s lease the job is delivered again.
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent("52:54:00:a0:00:04", work.path());
    let done = a.job_in(job, "succeeded", 15).await;
    assert_eq!(done["attempt"], 2, "delivered a second time");
    let m = a.get("/machines/52:54:00:a0:00:04/events").await;
    assert!(m["events"].as_array().unwrap().iter().any(|e| e["kind"] == "job.lease_expired"));

    // Cancel: the running script is killed before it can leave its mark.
    let marker = work.path().join("marker");
    let body = format!("sleep 2; touch {}", marker.display());
    let job =
        a.submit(json!({"machine": "52:54:00:a0:00:04", "action": script(&body)})).await[0]["id"].as_u64().unwrap();
    a.job_in(job, "running", 5).await;
    let cancelled = a.api.ok(Method::POST, &format!("/jobs/{job}/cancel"), None).await.unwrap();
    assert_eq!(cancelled["state"], "cancelled");
    let (status, _) = a.api.call(Method::POST, &format!("/jobs/{job}/cancel"), None).await.unwrap();
    assert_eq!(status, 409, "a finished job cannot be cancelled again");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!marker.exists(), "the cancelled script was killed");
    agent.abort();
}

#[tokio::test]
async fn background_children_do_not_hold_a_job_and_deleting_a_machine_revokes_its_agent() {
    let a = Appliance::start("").await;
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent("52:54:00:a0:00:09", work.path());
    let m = enrolled(&a, "52:54:00:a0:00:09").await;
    // The script starts a daemon that keeps stdout open and exits: the job ends with the script.
    let job = a
        .submit(
            json!({"machine": "52:54:00:a0:00:09", "action": script("sleep 30 & echo started"), "timeout_secs": 20}),
        )
        .await[0]["id"]
        .as_u64()
        .unwrap();
    let done = a.job_in(job, "succeeded", 10).await;
    assert!(done["duration_ms"].as_u64().unwrap() < 5_000, "{done}");
    assert!(a.get(&format!("/jobs/{job}/output")).await["text"].as_str().unwrap().contains("started"));

    let (status, err) = a
        .api
        .call(
            Method::POST,
            "/jobs",
            Some(json!({"machine": "52:54:00:a0:00:09", "action": script("true"), "timeout_secs": u64::MAX})),
        )
        .await
        .unwrap();
    assert_eq!(status, 400, "{err}");

    // Delete the machine: its jobs go with it (the queued one never runs) and its agent's
    // credential stops working.
    agent.abort();
    let queued =
        a.submit(json!({"machine": "52:54:00:a0:00:09", "action": script("true")})).await[0]["id"].as_u64().unwrap();
    let id = m["id"].as_u64().unwrap();
    a.api.ok(Method::DELETE, &format!("/machines/{id}"), None).await.unwrap();
    let (status, _) = a.api.call(Method::GET, &format!("/jobs/{queued}"), None).await.unwrap();
    assert_eq!(status, 404, "a deleted machine's jobs are deleted with it");
    let (status, _) = a.api.call(Method::GET, &format!("/machines/{id}/agent"), None).await.unwrap();
    assert_eq!(status, 404);
}

#[tokio::test]
async fn jobs_by_tag_and_live_output_as_server_sent_events() {
    let a = Appliance::start("").await;
    let work = tempfile::tempdir().unwrap();
    let agents: Vec<_> = ["52:54:00:a0:00:05", "52:54:00:a0:00:06"].iter().map(|m| a.agent(m, work.path())).collect();
    for mac in ["52:54:00:a0:00:05", "52:54:00:a0:00:06"] {
        let m = enrolled(&a, mac).await;
        a.api.ok(Method::PATCH, &format!("/machines/{}", m["id"]), Some(json!({"tags": ["rack7"]}))).await.unwrap();
    }
    let jobs =
        a.submit(json!({"tag": "rack7", "action": script("for i in 1 2 3; do echo line$i; sleep 0.3; done")})).await;
    assert_eq!(jobs.len(), 2);
    let (status, err) =
        a.api.call(Method::POST, "/jobs", Some(json!({"tag": "nope", "action": script("true")}))).await.unwrap();
    assert_eq!(status, 404, "{err}");
    let (status, _) = a.api.call(Method::POST, "/jobs", Some(json!({"action": script("true")}))).await.unwrap();
    assert_eq!(status, 400);

    // Follow one job live: output events as they come, then done.
    let id = jobs[0]["id"].as_u64().unwrap();
    let token = a.app.as_ref().unwrap().admin_token.clone();
    let url = format!("{}/api/v1/jobs/{id}/output?follow=true", a.url());
    let ca = a.dir.path().join("tls/ca.pem");
    let out = tokio::process::Command::new("curl")
        .args(["-sN", "--max-time", "20", "--cacert", ca.to_str().unwrap()])
        .args(["-H", &format!("authorization: Bearer {token}"), &url])
        .output()
        .await;
    let Ok(out) = out else {
        eprintln!("SKIPPED live-output part: curl is not installed");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("event:")).collect();
    assert_eq!(lines.last(), Some(&"event: done"), "{text}");
    assert!(text.contains("line1") && text.contains("line3"), "{text}");
    for j in &jobs {
        a.job_in(j["id"].as_u64().unwrap(), "succeeded", 10).await;
    }
    for h in agents {
        h.abort();
    }
}

#[tokio::test]
async fn an_appliance_restart_mid_job_loses_nothing() {
    let mut a = Appliance::start("").await;
    let work = tempfile::tempdir().unwrap();
    let agent = a.agent("52:54:00:a0:00:07", work.path());
    enrolled(&a, "52:54:00:a0:00:07").await;
    let job = a
        .submit(json!({"machine": "52:54:00:a0:00:07", "action": script("echo before; sleep 3; echo after")}))
        .await[0]["id"]
        .as_u64()
        .unwrap();
    a.job_in(job, "running", 5).await;
    a.stop().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    a.boot().await;
    let done = a.job_in(job, "succeeded", 30).await;
    assert_eq!(done["attempt"], 1, "the same delivery finished; nothing ran twice");
    let text = a.get(&format!("/jobs/{job}/output")).await["text"].as_str().unwrap().to_string();
    assert!(text.contains("before") && text.contains("after"), "{text}");
    // The agent keeps working with the restarted appliance.
    let next =
        a.submit(json!({"machine": "52:54:00:a0:00:07", "action": script("true")})).await[0]["id"].as_u64().unwrap();
    a.job_in(next, "succeeded", 30).await;
    agent.abort();
}
