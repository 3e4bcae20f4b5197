use super::*;
use rackboot_agent::wire::Action;

#[tokio::test]
async fn last_output_is_the_newest_chunks_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    let m = db
        .create_machine(super::super::NewMachine {
            macs: vec!["52:54:00:00:00:01".parse().unwrap()],
            ..Default::default()
        })
        .await
        .unwrap();
    let new = NewJob { action: Action::RefreshInventory, timeout_secs: 60, max_attempts: 1 };
    let job = db.submit_jobs(vec![m.id], new).await.unwrap().remove(0);
    let (claimed, _) = db.claim_job(m.id, 60_000).await.unwrap();
    assert_eq!(claimed.map(|j| j.id), Some(job.id));
    for seq in 0..5 {
        let chunk = OutputChunk { attempt: 1, seq, stream: Stream::Stdout, data: format!("line {seq}\n") };
        db.job_output(m.id, job.id, chunk, 60_000).await.unwrap();
    }
    let last: Vec<String> = db.last_output(job.id, 2).await.unwrap().into_iter().map(|c| c.data).collect();
    assert_eq!(last, ["line 3\n", "line 4\n"]);
    assert_eq!(db.last_output(job.id, 10).await.unwrap().len(), 5);
    // A key sent again keeps what was stored first and adds nothing.
    let again = OutputChunk { attempt: 1, seq: 4, stream: Stream::Stdout, data: "x".repeat(60_000) };
    let (j, _, stored) = db.job_output(m.id, job.id, again, 60_000).await.unwrap();
    assert!(stored.is_none());
    assert_eq!(j.output_bytes, 35);
    assert_eq!(db.last_output(job.id, 1).await.unwrap()[0].data, "line 4\n");
    assert!(db.last_output(job.id + 1, 2).await.unwrap().is_empty(), "another job's output is not mixed in");
}

#[tokio::test]
async fn output_stops_at_the_cap_and_after_the_job_ends() {
    let dir = tempfile::tempdir().unwrap();
    let db = Cmdb::open_for_test(&dir.path().join("c.redb"), 64).unwrap();
    let macs = vec!["52:54:00:00:00:02".parse().unwrap()];
    let m = db.create_machine(super::super::NewMachine { macs, ..Default::default() }).await.unwrap();
    let new = NewJob { action: Action::RefreshInventory, timeout_secs: 60, max_attempts: 1 };
    let job = db.submit_jobs(vec![m.id], new).await.unwrap().remove(0);
    db.claim_job(m.id, 60_000).await.unwrap();
    let big = "é".repeat(32 << 10); // 64 KiB of two-byte characters
    let mut stored_chunks = 0;
    for seq in 0..300 {
        // One byte first, so the 256th 64 KiB chunk crosses the cap.
        let data = if seq == 0 { "x".to_string() } else { big.clone() };
        let chunk = OutputChunk { attempt: 1, seq, stream: Stream::Stdout, data };
        let (j, _, stored) = db.job_output(m.id, job.id, chunk, 60_000).await.unwrap();
        stored_chunks += u32::from(stored.is_some());
        if seq == 256 {
            let cut = stored.as_ref().map_or(0, |c| c.data.len());
            assert_eq!(cut, big.len() - 2, "the capping chunk comes back as stored: cut at a character");
        }
        assert!(j.output_bytes <= MAX_OUTPUT_BYTES);
    }
    assert_eq!(stored_chunks, 257, "16 MiB: a byte and 64 KiB chunks, the last cut");
    let kept: usize = db.last_output(job.id, 1000).await.unwrap().iter().map(|c| c.data.len()).sum();
    assert_eq!(kept as u64, MAX_OUTPUT_BYTES - 1, "all but the half character");
    let capped = db.events(m.id, 0, 1000).await.unwrap();
    assert_eq!(capped.iter().filter(|e| e.kind == EventKind::JobOutputCapped).count(), 1, "said once");

    let done = || JobResult {
        attempt: 1,
        outcome: rackboot_agent::wire::Outcome::Succeeded,
        exit_code: Some(0),
        duration_ms: 1,
        error: None,
        plugin: None,
    };
    db.finish_job(m.id, job.id, done()).await.unwrap();
    let job2 = db
        .submit_jobs(vec![m.id], NewJob { action: Action::RefreshInventory, timeout_secs: 60, max_attempts: 1 })
        .await
        .unwrap()
        .remove(0);
    db.claim_job(m.id, 60_000).await.unwrap();
    db.finish_job(m.id, job2.id, done()).await.unwrap();
    let late = OutputChunk { attempt: 1, seq: 0, stream: Stream::Stdout, data: "after the end".into() };
    let (j, _, stored) = db.job_output(m.id, job2.id, late, 60_000).await.unwrap();
    assert!(stored.is_none(), "a finished job takes no output");
    assert_eq!(j.output_bytes, 0);
}
