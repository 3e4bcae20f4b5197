use std::net::Ipv4Addr;

use rackboot_agent::wire::{Action, EnrollRequest, JobResult, Outcome, OutputChunk, Stream};

use super::*;
use crate::model::Sighting;
use crate::store::{decode, EVENTS, LEASES, MACHINES, MACS};
use crate::{Admission, Cmdb, NewMachine, NewRun};
use rackboot_model::jobs::{Job, NewJob};
use rackboot_model::mac::Mac;

fn mac(s: &str) -> Mac {
    s.parse().unwrap()
}

fn lease(ip: [u8; 4], m: &str, state: LeaseState, expires_at: u64) -> Lease {
    Lease {
        v: 1,
        ip: Ipv4Addr::from(ip),
        mac: mac(m),
        hostname: None,
        client_hostname: None,
        expires_at,
        state,
        updated_at: now_secs(),
    }
}

/// A machine with something in every table that hangs off it.
async fn busy_machine(db: &Cmdb, macs: [&str; 2], hostname: &str, ip: u8) -> (u64, Vec<u64>) {
    let m = db
        .create_machine(NewMachine {
            macs: vec![mac(macs[0])],
            hostname: Some(hostname.into()),
            reserved_ip: Some(Ipv4Addr::new(198, 18, 0, ip)),
            ..Default::default()
        })
        .await
        .unwrap();
    let enroll = EnrollRequest { macs: macs.iter().map(|m| m.to_string()).collect(), ..Default::default() };
    let nonce = db.issue_boot_nonce(mac(macs[0]), "198.18.0.10".into(), 600).await.unwrap();
    let auto = Admission { auto: true, nonce: Some(crate::nonce_hash(&nonce)), ..Default::default() };
    let outcome = db.enroll_agent(enroll, "00".repeat(32), auto, None).await.unwrap();
    assert!(matches!(outcome, crate::EnrollOutcome::Enrolled(e) if e.machine_id == m.id && e.approved));
    let new = NewJob { action: Action::RefreshInventory, timeout_secs: 60, max_attempts: 1 };
    let jobs = db.submit_jobs(vec![m.id, m.id], new).await.unwrap();
    let (claimed, _) = db.claim_job(m.id, 60_000).await.unwrap();
    let claimed = claimed.unwrap();
    let chunk = OutputChunk { attempt: 1, seq: 0, stream: Stream::Stdout, data: "hello\n".into() };
    db.job_output(m.id, claimed.id, chunk, 60_000).await.unwrap();
    let r = JobResult {
        attempt: 1,
        outcome: Outcome::Succeeded,
        exit_code: Some(0),
        duration_ms: 1,
        error: None,
        plugin: None,
    };
    db.finish_job(m.id, claimed.id, r).await.unwrap();
    (m.id, jobs.iter().map(|j| j.id).collect())
}

#[tokio::test]
async fn deleting_a_machine_leaves_no_orphan_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    let (gone, gone_jobs) = busy_machine(&db, ["52:54:00:00:00:01", "52:54:00:00:00:02"], "gone", 50).await;
    let (kept, kept_jobs) = busy_machine(&db, ["52:54:00:00:00:11", "52:54:00:00:00:12"], "kept", 51).await;
    let spec = serde_json::from_value(serde_json::json!({"select": {"next": 2}, "image": "x.img"})).unwrap();
    let runs = vec![
        NewRun { machine_id: Some(gone), hostname: None, ip: None },
        NewRun { machine_id: Some(kept), hostname: None, ip: None },
    ];
    let (_, runs) = db.create_task(spec, runs).await.unwrap();
    let later = now_secs() + 3600;
    let leases = [
        lease([198, 18, 0, 100], "52:54:00:00:00:01", LeaseState::Released, later),
        lease([198, 18, 0, 101], "52:54:00:00:00:02", LeaseState::Active, now_secs() - 1),
        // Still in force: the client holds the address whatever the CMDB says about it.
        lease([198, 18, 0, 102], "52:54:00:00:00:02", LeaseState::Active, later),
        lease([198, 18, 0, 103], "52:54:00:00:00:11", LeaseState::Released, later),
    ];
    for l in leases {
        db.commit_lease(l, Sighting::default(), vec![]).await.unwrap();
    }

    db.delete_machine(gone).await.unwrap();

    // The driver of a PostgreSQL store is waited on synchronously: off the async threads.
    let store = db.inner.storage.db().unwrap();
    tokio::task::spawn_blocking(move || {
        let rtx = store.begin_read().unwrap();
        let pairs = |def: crate::kv::Def<(u64, u64), ()>| -> Vec<(u64, u64)> {
            rtx.open_table(def).unwrap().iter().unwrap().map(|r| r.unwrap().0.value()).collect()
        };
        assert!(rtx.open_table(MACHINES).unwrap().get(gone).unwrap().is_none());
        let macs: Vec<u64> = rtx.open_table(MACS).unwrap().iter().unwrap().map(|r| r.unwrap().1.value()).collect();
        assert_eq!(macs, [kept, kept], "only the kept machine's MACs are left");
        let events: Vec<(u64, u64)> =
            rtx.open_table(EVENTS).unwrap().iter().unwrap().map(|r| r.unwrap().0.value()).collect();
        assert!(!events.is_empty() && events.iter().all(|(m, _)| *m == kept), "{events:?}");
        assert!(rtx.open_table(AGENTS).unwrap().get(gone).unwrap().is_none());
        assert!(rtx.open_table(AGENTS).unwrap().get(kept).unwrap().is_some());
        let jobs: Vec<Job> =
            rtx.open_table(JOBS).unwrap().iter().unwrap().map(|r| decode(r.unwrap().1.value()).unwrap()).collect();
        assert_eq!(jobs.iter().map(|j| j.id).collect::<Vec<_>>(), kept_jobs);
        assert!(pairs(MACHINE_JOBS).iter().all(|(m, _)| *m == kept));
        assert!(pairs(ACTIVE_JOBS).iter().all(|(m, _)| *m == kept));
        assert_eq!(pairs(ACTIVE_JOBS).len(), 1, "the kept machine's queued job is still queued");
        let output: Vec<u64> =
            rtx.open_table(JOB_OUTPUT).unwrap().iter().unwrap().map(|r| r.unwrap().0.value().0).collect();
        assert!(!output.is_empty() && output.iter().all(|j| kept_jobs.contains(j) && !gone_jobs.contains(j)));
        let active: Vec<u64> =
            rtx.open_table(ACTIVE_RUNS).unwrap().iter().unwrap().map(|r| r.unwrap().0.value()).collect();
        assert_eq!(active, [runs[1].id], "the deleted machine's run left the active set");
        let failed: Run = crate::store::get(&rtx.open_table(RUNS).unwrap(), runs[0].id).unwrap();
        assert_eq!(failed.state, RunState::Failed);
        assert!(failed.error.as_deref().unwrap().contains("the machine was deleted"), "{:?}", failed.error);
        let leased: Vec<u32> = rtx.open_table(LEASES).unwrap().iter().unwrap().map(|r| r.unwrap().0.value()).collect();
        let ip = |last: u8| u32::from(Ipv4Addr::new(198, 18, 0, last));
        assert_eq!(leased, [ip(102), ip(103)], "ended leases of its MACs go; one in force and others' stay");
    })
    .await
    .unwrap();

    assert!(db.brief_by_mac(mac("52:54:00:00:00:02")).is_none());
    assert_eq!(db.dns_hosts(now_secs()).hosts.iter().filter(|(h, _)| h == "gone").count(), 0);
    assert!(matches!(db.delete_machine(gone).await, Err(CmdbError::NotFound(_))));
}
