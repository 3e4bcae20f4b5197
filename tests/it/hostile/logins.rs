//! A password guesser on the VLAN with many connections at once: 25 logins for `admin` sent
//! together from one address are checked at most as many times as the limit allows (401); the
//! rest are refused before any hash (429, or 503 while the hashing pool is full), each with a
//! Retry-After; the API keeps answering a logged-in caller and DHCP a new client meanwhile, and
//! the audit log holds one denial per guess checked.

use std::time::{Duration, Instant};

use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::json;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_sent_at_once_get_the_configured_guesses_and_no_more() {
    let lab = Lab::start("[auth]\nlogin_failures_per_user = 5\nlogin_failures_per_address = 20\n").await;
    let url = lab.https_url();
    let mut guesses = tokio::task::JoinSet::new();
    for i in 0..25 {
        let anon = ApiClient::new(&url, String::new(), lab.ca_pem().as_bytes()).unwrap();
        guesses.spawn(async move {
            let body = json!({"username": "admin", "password": format!("guess-number-{i:02}")}).to_string();
            let resp =
                anon.send(Method::POST, "/auth/login", &[("content-type", "application/json")], body).await.unwrap();
            let retry = resp.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            (resp.status().as_u16(), retry)
        });
    }
    // The API answers a logged-in caller, and DHCP a new client, while the guesses are checked.
    let asked = Instant::now();
    lab.api.ok(Method::GET, "/auth/whoami", None).await.unwrap();
    assert!(asked.elapsed() < Duration::from_secs(3), "whoami took {:?} under the flood", asked.elapsed());
    let asked = Instant::now();
    four_way(&lab, [0x52, 0x54, 0x00, 0xe7, 0x00, 0x01], 0x0e70_0001).await;
    assert!(asked.elapsed() < Duration::from_secs(3), "a DORA took {:?} under the flood", asked.elapsed());

    let mut codes = Vec::new();
    while let Some(answer) = guesses.join_next().await {
        let (code, retry) = answer.unwrap();
        if code != 401 {
            assert!(matches!(code, 429 | 503), "{code}");
            assert!(retry.is_some_and(|s| s >= 1), "{code} without Retry-After");
        }
        codes.push(code);
    }
    let checked = codes.iter().filter(|c| **c == 401).count();
    assert!((1..=5).contains(&checked), "guesses checked: {checked} of 25 ({codes:?})");
    let v = lab.api.ok(Method::GET, "/audit?limit=1000&user=admin", None).await.unwrap();
    let denied =
        v["entries"].as_array().unwrap().iter().filter(|e| e["route"] == "/auth/login" && e["outcome"] == "denied");
    assert_eq!(denied.count(), checked, "one denial in the audit log per guess checked");
    // A sixth guess, after the others: the limit holds.
    let anon = ApiClient::new(&url, String::new(), lab.ca_pem().as_bytes()).unwrap();
    let body = json!({"username": "admin", "password": "one-more-guess"});
    let (code, _) = anon.call(Method::POST, "/auth/login", Some(body)).await.unwrap();
    if checked == 5 {
        assert_eq!(code, 429);
    }
}
