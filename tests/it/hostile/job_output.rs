//! A node that fills the disk through its own job's output: re-sending the same (attempt, seq)
//! keys with 64 KiB each, after a burst of one-byte chunks, stores nothing more than the first
//! of each key; output sent after the job ended is not stored; and DHCP leases meanwhile.

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::json;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn re_sent_and_late_output_cannot_grow_a_job() {
    let lab = Lab::start("").await;
    let m = [0x52, 0x54, 0x00, 0xe5, 0x00, 0x01];
    let mut agent = enroll_agent(&lab, m).await;
    let action = json!({"kind": "script", "interpreter": "/bin/sh", "body": "true"});
    let jobs =
        lab.api.ok(Method::POST, "/jobs", Some(json!({"machine": mac_text(&m), "action": action}))).await.unwrap();
    let job = jobs["jobs"][0]["id"].as_u64().unwrap();
    let r = agent.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=1", None, Duration::from_secs(10)).await.unwrap();
    assert_eq!(r.status, 200);

    let path = format!("/agent/v1/jobs/{job}/output");
    let chunk = |seq: u32, data: String| json!({"attempt": 1, "seq": seq, "stream": "stdout", "data": data});
    for seq in 0..300 {
        let r = agent.call(Method::POST, &path, Some(&chunk(seq, "x".into())), Duration::from_secs(5)).await.unwrap();
        assert_eq!(r.status, 200);
    }
    let big = "y".repeat(64 << 10);
    for seq in 0..300 {
        let r = agent.call(Method::POST, &path, Some(&chunk(seq, big.clone())), Duration::from_secs(5)).await.unwrap();
        assert_eq!(r.status, 200, "a re-sent chunk is acknowledged (idempotent), not stored again");
    }
    let j = lab.api.ok(Method::GET, &format!("/jobs/{job}"), None).await.unwrap();
    assert_eq!(j["output_bytes"], 300, "{j}");
    let text = lab.api.ok(Method::GET, &format!("/jobs/{job}/output"), None).await.unwrap();
    assert!(!text.to_string().contains("yyyy"), "the first of each key is what is kept");

    let done = json!({"attempt": 1, "outcome": "succeeded", "exit_code": 0, "duration_ms": 1});
    let r = agent
        .call(Method::POST, &format!("/agent/v1/jobs/{job}/result"), Some(&done), Duration::from_secs(5))
        .await
        .unwrap();
    assert!(r.status < 300, "{}", r.status);
    let r = agent.call(Method::POST, &path, Some(&chunk(1000, big.clone())), Duration::from_secs(5)).await.unwrap();
    assert_eq!(r.status, 200);
    let j = lab.api.ok(Method::GET, &format!("/jobs/{job}"), None).await.unwrap();
    assert_eq!(j["output_bytes"], 300, "a finished job takes no output: {j}");

    // DHCP was never held up by any of it.
    let asked = Instant::now();
    four_way(&lab, [0x52, 0x54, 0x00, 0xe5, 0x00, 0x02], 0x0e50_0001).await;
    assert!(asked.elapsed() < Duration::from_secs(2), "{:?}", asked.elapsed());
}
