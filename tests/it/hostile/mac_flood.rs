//! A node that names MACs it does not own: ten enrollments with its own boot nonce, each naming
//! 63 MACs of machines still to boot. The machine never holds more than 64 MACs: past that an
//! enrollment gets 413 and the machine's timeline says why; the MACs it named past the bound
//! belong to nobody, and DHCP leases meanwhile. Enrollments are bounded a minute: a machine's
//! proven ones (a neighbour's unproven ones naming its MAC spend nothing) and any per source
//! address (429, said once on the timeline).

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::json;

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_never_holds_more_than_its_bound_of_macs() {
    let lab = Lab::start("").await;
    let app = lab.app.as_ref().unwrap();
    let own = "52:54:00:e6:00:01";
    let trust = rackboot_agent::tls::Trust::CaPem(lab.ca_pem().into_bytes());
    let mut codes = Vec::new();
    for round in 0..10u32 {
        let nonce = app.cmdb.issue_boot_nonce(own.parse().unwrap(), "127.0.0.1".into(), 600).await.unwrap();
        let mut macs = vec![own.to_string()];
        macs.extend((0..63u32).map(|i| format!("52:54:01:{:02x}:{:02x}:{:02x}", round, i / 256, i % 256)));
        let req = json!({"macs": macs, "boot_mac": own, "mode": "bootos", "nonce": nonce});
        let mut c = rackboot_agent::client::Client::new(&lab.https_url(), &trust).unwrap();
        let r = c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap();
        codes.push(r.status);
    }
    assert_eq!(codes[0], 200, "{codes:?}");
    assert!(codes[1..].iter().all(|c| *c == 413), "past the bound: 413 ({codes:?})");
    let m = lab.api.ok(Method::GET, &format!("/machines/{own}"), None).await.unwrap();
    let held = m["macs"].as_array().unwrap().len();
    assert!(held <= 64, "the machine holds {held} MACs");
    let (status, _) = lab.api.call(Method::GET, "/machines/52:54:01:05:00:07", None).await.unwrap();
    assert_eq!(status, 404, "a MAC named past the bound belongs to nobody");
    let events = lab.api.ok(Method::GET, &format!("/machines/{}/events?limit=1000", m["id"]), None).await.unwrap();
    let said = events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "agent.enroll_conflict").count();
    assert_eq!(said, 9, "each refusal is on the timeline");

    let asked = Instant::now();
    four_way(&lab, [0x52, 0x54, 0x00, 0xe6, 0x00, 0x02], 0x0e60_0001).await;
    assert!(asked.elapsed() < Duration::from_secs(2), "{:?}", asked.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enrollments_are_bounded_a_minute_per_machine_and_per_source() {
    let lab = Lab::start("[agent]\nenrollments_per_minute = 5\nenrollments_per_minute_per_source = 30\n").await;
    let app = lab.app.as_ref().unwrap();
    let trust = rackboot_agent::tls::Trust::CaPem(lab.ca_pem().into_bytes());
    let enroll = |mac: String, proven: bool| {
        let (url, trust) = (lab.https_url(), trust.clone());
        async move {
            let mut req = json!({"macs": [mac], "boot_mac": mac, "mode": "bootos"});
            if proven {
                let nonce = app.cmdb.issue_boot_nonce(mac.parse().unwrap(), "127.0.0.1".into(), 600).await.unwrap();
                req["nonce"] = json!(nonce);
            }
            let mut c = rackboot_agent::client::Client::new(&url, &trust).unwrap();
            c.call(Method::POST, "/agent/v1/enroll", Some(&req), Duration::from_secs(5)).await.unwrap()
        }
    };
    let own = "52:54:00:e6:01:01".to_string();
    assert_eq!(enroll(own.clone(), true).await.status, 200, "the machine's first boot");
    // A neighbour naming its MAC without proof is refused and spends none of its budget.
    let mut forged = Vec::new();
    for _ in 0..20 {
        forged.push(enroll(own.clone(), false).await.status);
    }
    assert!(forged.iter().all(|s| *s == 409), "{forged:?}");
    let mut codes = Vec::new();
    for _ in 0..6 {
        codes.push(enroll(own.clone(), true).await.status);
    }
    assert_eq!(codes, [200, 200, 200, 200, 200, 429], "five proven ones a minute for one machine");
    let m = lab.api.ok(Method::GET, &format!("/machines/{own}"), None).await.unwrap();
    let events = lab.api.ok(Method::GET, &format!("/machines/{}/events?limit=1000", m["id"]), None).await.unwrap();
    let said: Vec<_> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "agent.enroll_conflict" && e["detail"]["reason"] == "too many enrollments a minute")
        .collect();
    assert_eq!(said.len(), 1, "said once, not per refusal: {said:?}");
    // Other machines from the same address: the address's budget (30 a minute, 27 taken).
    let mut others = Vec::new();
    for i in 0..5u32 {
        others.push(enroll(format!("52:54:00:e6:02:{i:02x}"), true).await.status);
    }
    assert_eq!(others, [200, 200, 200, 429, 429], "thirty a minute from one address");
}
