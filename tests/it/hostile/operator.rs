//! An operator (not an admin) who wants a machine's BMC password: the API never shows it, and
//! pointing the BMC record at a host of theirs with certificate checks off, leaving the
//! password out, is refused, so no power action or refresh ever sends the stored password
//! there. A host that listens shows whether anything was sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use serde_json::json;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_bmc_password_never_goes_to_a_host_the_operator_points_at() {
    let lab = Lab::start(
        "[bmc]\nrequest_timeout_secs = 1\nretries = 0\naction_deadline_secs = 10\nsoft_off_timeout_secs = 5\n",
    )
    .await;
    let mac = "52:54:00:e4:00:01";
    let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    let path = format!("/machines/{}/bmc", m["id"]);
    // The real BMC (nothing answers on port 9 of loopback).
    let real =
        json!({"address": "127.0.0.1:9", "protocol": "redfish", "username": "root", "password": "Bmc-secret-77"});
    lab.api.ok(Method::PUT, &path, Some(real)).await.unwrap();

    // The operator's host: counts connections.
    let theirs = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = theirs.local_addr().unwrap().to_string();
    let reached = Arc::new(AtomicUsize::new(0));
    let counter = reached.clone();
    tokio::spawn(async move {
        while let Ok((_s, _)) = theirs.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });

    for change in [
        json!({"address": at, "protocol": "redfish", "username": "root", "insecure": true}),
        json!({"address": at, "protocol": "redfish", "username": "root"}),
        json!({"address": "127.0.0.1:9", "protocol": "redfish", "username": "root", "insecure": true}),
        json!({"address": at, "protocol": "ipmi", "username": "root"}),
    ] {
        let (status, p) = lab.api.call(Method::PUT, &path, Some(change.clone())).await.unwrap();
        assert_eq!((status, p["field"].as_str()), (400, Some("password")), "{change}: {p}");
    }
    let bmc = lab.api.ok(Method::GET, &path, None).await.unwrap();
    assert_eq!(bmc["address"], "127.0.0.1:9", "{bmc}");
    assert!(!bmc.to_string().contains("Bmc-secret-77"));

    // A power action goes to the BMC as stored, not to the operator's host.
    let power = format!("/machines/{}/power", m["id"]);
    let (status, _) = lab.api.call(Method::POST, &power, Some(json!({"action": "status"}))).await.unwrap();
    assert_ne!(status, 200, "nothing answers at the real BMC's address");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(reached.load(Ordering::SeqCst), 0, "nothing was sent to the operator's host");

    // The same host with a password the operator gives (their own) is theirs to use: the check
    // above would have seen a connection.
    let own =
        json!({"address": at, "protocol": "redfish", "username": "root", "password": "their-own", "insecure": true});
    lab.api.ok(Method::PUT, &path, Some(own)).await.unwrap();
    let _ = lab.api.call(Method::POST, &power, Some(json!({"action": "status"}))).await.unwrap();
    eventually(|| async {
        anyhow::ensure!(reached.load(Ordering::SeqCst) > 0, "no connection yet");
        Ok(())
    })
    .await;
}
