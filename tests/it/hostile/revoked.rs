//! A token that holds an answer open (the event stream, a job's output) loses it the moment it
//! is revoked or its user is disabled: the appliance ends the stream at once, not at its next
//! periodic check (30 s), so a revoked operator stops seeing what the machines do.

use std::time::Duration;

use hyper::Method;
use rackboot::client::{ApiClient, EventStream};
use serde_json::json;

use crate::common::appliance::Appliance;
use crate::common::*;

/// A new user's session token.
async fn session(lab: &Lab, name: &str, role: &str) -> String {
    let password = format!("{name}-password-123");
    let user = json!({"name": name, "role": role, "password": password});
    lab.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    let anonymous = ApiClient::new(&lab.https_url(), String::new(), lab.ca_pem().as_bytes()).unwrap();
    let (s, v) = anonymous
        .call(Method::POST, "/auth/login", Some(json!({"username": name, "password": password})))
        .await
        .unwrap();
    assert_eq!(s, 200, "{v}");
    v["token"].as_str().unwrap().to_string()
}

/// An open event stream of `token`'s, past its opening frame.
async fn open(lab: &Lab, token: &str) -> EventStream {
    let api = ApiClient::new(&lab.https_url(), token.to_string(), lab.ca_pem().as_bytes()).unwrap();
    let mut stream = api.events("/events/stream", None).await.unwrap();
    let start = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(start.event.as_deref(), Some("stream.start"));
    stream
}

/// Reads until the stream ends; fails if it is still open after 5 s (a sixth of the periodic
/// check: only the revocation itself can have ended it) or if a machine's event came first.
async fn ends(stream: &mut EventStream, who: &str) {
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.next().await {
                Ok(Some(ev)) => assert!(!ev.event.as_deref().unwrap_or("").starts_with("machine."), "{who}: {ev:?}"),
                Ok(None) | Err(_) => return,
            }
        }
    })
    .await;
    assert!(end.is_ok(), "{who}: the stream outlived its credential");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_event_stream_ends_when_its_token_is_revoked_or_its_user_disabled() {
    let lab = Lab::start("").await;
    let (vic, val) = (session(&lab, "vic", "viewer").await, session(&lab, "val", "viewer").await);
    let (mut revoked, mut disabled, mut kept) =
        (open(&lab, &vic).await, open(&lab, &val).await, open(&lab, &val).await);

    // vic's session is revoked by the admin: vic's stream ends; val's go on.
    let tokens = lab.api.ok(Method::GET, "/tokens?user=vic", None).await.unwrap();
    let id = tokens["tokens"][0]["id"].as_str().unwrap().to_string();
    lab.api.ok(Method::DELETE, &format!("/tokens/{id}"), None).await.unwrap();
    ends(&mut revoked, "revoked").await;
    let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:e5:00:01"]}))).await.unwrap();
    for stream in [&mut disabled, &mut kept] {
        let seen = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
        let e: serde_json::Value = serde_json::from_str(&seen.data).unwrap();
        assert_eq!((seen.event.as_deref(), &e["machine_id"]), (Some("machine.registered"), &m["id"]), "{e}");
    }

    // val is disabled: both of val's streams end.
    lab.api.ok(Method::PATCH, "/users/val", Some(json!({"disabled": true}))).await.unwrap();
    ends(&mut disabled, "disabled").await;
    ends(&mut kept, "disabled, second stream").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_job_output_ends_when_the_token_is_revoked() {
    let a = Appliance::start("").await;
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:e5:00:02";
    let agent = a.agent(mac, work.path());
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, &format!("/machines/{mac}"), None).await?;
        anyhow::ensure!(!m["inventory"].is_null(), "not enrolled yet");
        Ok(m)
    })
    .await;
    let user = json!({"name": "vic", "role": "viewer", "password": "vic-password-123"});
    a.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    let anonymous =
        ApiClient::new(&a.url(), String::new(), &std::fs::read(a.dir.path().join("tls/ca.pem")).unwrap()).unwrap();
    let login = json!({"username": "vic", "password": "vic-password-123"});
    let (_, v) = anonymous.call(Method::POST, "/auth/login", Some(login)).await.unwrap();
    let token = v["token"].as_str().unwrap().to_string();
    let body = "echo started; sleep 60; echo finished";
    let job = a
        .submit(json!({"machine": mac, "action": {"kind": "script", "interpreter": "/bin/sh", "body": body}}))
        .await[0]["id"]
        .as_u64()
        .unwrap();
    a.job_in(job, "running", 10).await;

    // vic follows the job's output (the token in a header curl reads from stdin, never argv).
    let url = format!("{}/api/v1/jobs/{job}/output?follow=true", a.url());
    let ca = a.dir.path().join("tls/ca.pem");
    let Ok(mut curl) = tokio::process::Command::new("curl")
        .args(["-sN", "--max-time", "50", "--cacert", ca.to_str().unwrap(), "-H", "@-", &url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        eprintln!("SKIPPED: curl is not installed");
        return;
    };
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stdin = curl.stdin.take().unwrap();
    stdin.write_all(format!("authorization: Bearer {token}\n").as_bytes()).await.unwrap();
    drop(stdin);
    let mut stdout = curl.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("started") {
        let n = tokio::time::timeout(Duration::from_secs(20), stdout.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "the stream ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }

    // Revoked while the job runs on: the stream ends within 5 s, with no `done`.
    let tokens = a.api.ok(Method::GET, "/tokens?user=vic", None).await.unwrap();
    let id = tokens["tokens"][0]["id"].as_str().unwrap().to_string();
    a.api.ok(Method::DELETE, &format!("/tokens/{id}"), None).await.unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).await.map(|_| rest)
    })
    .await;
    let rest = rest.expect("the output stream outlived its revoked token").unwrap();
    let text = String::from_utf8_lossy(&rest);
    assert!(!text.contains("event: done") && !text.contains("finished"), "{text}");
    assert_eq!(a.get(&format!("/jobs/{job}")).await["state"], "running", "the job itself goes on");
    let _ = curl.kill().await;
    agent.abort();
}
