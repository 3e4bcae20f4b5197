//! The audit log against the whole appliance: every change (refused ones and failed logins
//! too) is recorded with who, when, from where, what and the result; it pages and filters on
//! the server, rotates at its cap, and never holds a password or a token.

use std::collections::BTreeSet;

use crate::common::*;
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

fn client(lab: &Lab, token: &str) -> ApiClient {
    ApiClient::new(&lab.https_url(), token.to_string(), lab.ca_pem().as_bytes()).unwrap()
}

async fn page(lab: &Lab, query: &str) -> Value {
    lab.api.ok(Method::GET, &format!("/audit?{query}"), None).await.unwrap()
}

#[tokio::test]
async fn the_log_rotates_at_its_cap_and_pages_newest_first() {
    let lab = Lab::start("[auth]\naudit_max_entries = 100\n").await;
    let before = rackboot::cmdb::now_ms();
    for i in 0..130u32 {
        let (s, _) = lab.api.call(Method::DELETE, &format!("/machines/{}", 90_000 + i), None).await.unwrap();
        assert_eq!(s, 404);
    }
    let cmdb = &lab.app.as_ref().unwrap().cmdb;
    assert_eq!(cmdb.audit_len().await.unwrap(), 100);
    let mut seen = Vec::new();
    let mut cursor = String::new();
    loop {
        let p = page(&lab, &format!("limit=30&cursor={cursor}")).await;
        seen.extend(p["entries"].as_array().unwrap().iter().map(|e| e["seq"].as_u64().unwrap()));
        match p["next_cursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    let want: Vec<u64> = (31..=130).rev().collect();
    assert_eq!(seen, want, "the newest 100, newest first, each once");
    let newest = &page(&lab, "limit=1").await["entries"][0];
    assert_eq!(newest["route"], "/machines/{id}");
    assert_eq!(newest["params"]["id"], "90129");
    assert_eq!(
        (newest["user"].as_str(), newest["status"].as_u64(), newest["outcome"].as_str()),
        (Some("admin"), Some(404), Some("failed"))
    );
    assert!(newest["at_ms"].as_u64().unwrap() >= before);
    // Filters: time, status, method; a cursor of another list is refused.
    assert_eq!(page(&lab, &format!("until={before}")).await["entries"].as_array().unwrap().len(), 0);
    assert_eq!(page(&lab, "status=404&method=delete&limit=10000").await["entries"].as_array().unwrap().len(), 100);
    assert_eq!(page(&lab, "status=200").await["entries"].as_array().unwrap().len(), 0);
    let (s, p) = lab.api.call(Method::GET, "/audit?cursor=machines.1", None).await.unwrap();
    assert_eq!((s, p["field"].as_str()), (400, Some("cursor")));
    // Lengths are in characters, as the document's maxLength (schemathesis sent 10 characters,
    // 22 bytes, and was refused): 16 four-byte characters pass, 17 do not.
    let (s, _) =
        lab.api.call(Method::GET, &format!("/audit?method={}", "%F0%A4%94%AE".repeat(16)), None).await.unwrap();
    assert_eq!(s, 200);
    let (s, p) =
        lab.api.call(Method::GET, &format!("/audit?method={}", "%F0%A4%94%AE".repeat(17)), None).await.unwrap();
    assert_eq!((s, p["field"].as_str()), (400, Some("method")));
}

#[tokio::test]
async fn unauthenticated_changes_are_audited_as_nobody() {
    let lab = Lab::start("").await;
    let stranger = client(&lab, "rbt_0123456789abcdef_feedface");
    assert_eq!(stranger.call(Method::POST, "/machines", Some(json!({"macs": []}))).await.unwrap().0, 401);
    assert_eq!(client(&lab, "").call(Method::GET, "/machines", None).await.unwrap().0, 401);
    let e = page(&lab, "user=-").await["entries"].as_array().unwrap().clone();
    assert_eq!(e.len(), 1, "the refused change, not the refused read: {e:?}");
    assert_eq!((e[0]["status"].as_u64(), e[0]["outcome"].as_str()), (Some(401), Some("denied")));
    assert!(e[0]["token"].is_null());
}

#[tokio::test]
async fn no_secret_reaches_the_log_or_any_answer() {
    let mut lab = Lab::start("").await;
    let password = "correct-horse-battery-staple";
    let made = lab
        .api
        .ok(Method::POST, "/users", Some(json!({"name": "otto", "role": "operator", "password": password})))
        .await
        .unwrap();
    let anon = client(&lab, "");
    let (_, s) =
        anon.call(Method::POST, "/auth/login", Some(json!({"username": "otto", "password": password}))).await.unwrap();
    let session = s["token"].as_str().unwrap().to_string();
    anon.call(Method::POST, "/auth/login", Some(json!({"username": "otto", "password": "wrong-horse-battery"})))
        .await
        .unwrap();
    let otto = client(&lab, &session);
    let (_, t) = otto.call(Method::POST, "/tokens", Some(json!({"name": "ci"}))).await.unwrap();
    let secret = t["secret"].as_str().unwrap().to_string();
    lab.api.ok(Method::PATCH, "/users/otto", Some(json!({"password": "another-long-password"}))).await.unwrap();
    let admin_token = lab.app.as_ref().unwrap().admin_token.clone();

    let mut answers = vec![made, page(&lab, "limit=10000").await];
    for path in ["/users", "/users/otto", "/tokens", "/auth/whoami"] {
        answers.push(lab.api.ok(Method::GET, path, None).await.unwrap());
    }
    let text: String = answers.iter().map(Value::to_string).collect();
    let routes: BTreeSet<&str> =
        answers[1]["entries"].as_array().unwrap().iter().map(|e| e["route"].as_str().unwrap()).collect();
    assert_eq!(routes, BTreeSet::from(["/auth/login", "/tokens", "/users", "/users/{name}"]));
    for secret in [password, "wrong-horse-battery", "another-long-password", &session, &secret, &admin_token, "argon2"]
    {
        assert!(!text.contains(secret), "{secret} is in an answer");
    }
    for (i, part) in [&session, &secret, &admin_token].iter().enumerate() {
        let hex_secret = part.rsplit('_').next().unwrap();
        assert!(!text.contains(hex_secret), "secret {i} is in an answer");
    }
    // Nor is a plaintext password or token anywhere in the CMDB file.
    lab.stop().await;
    let file = std::fs::read(lab.dir.path().join("rackboot.redb")).unwrap();
    let file = String::from_utf8_lossy(&file);
    for secret in [password, "wrong-horse-battery", "another-long-password", &session, &secret, &admin_token] {
        assert!(!file.contains(secret), "{secret} is stored in the clear");
    }
}
