//! Two teams on one appliance, each reading through the API what the other must not see:
//! racks (another's answers 404 as a missing one; a machine an admin moved out of a team's rack
//! is left out of its elevation), the event log and the live event stream (another pool's
//! machines' events never come through, even while they happen), jobs (a tag reaches only the
//! caller's pool; another's job, its output and its cancel answer 404), tasks (each acts in
//! one pool; another's answers 404; a pool user registers no machine and `next` takes their
//! pool's), the Ansible inventory and the audit log's pools. Writing racks stays refused to pool users: a rack claims switch ports and places
//! machines, which moves them between pools.

use std::time::Duration;

use hyper::Method;
use serde_json::{json, Value};

use super::pools::scoped;
use crate::common::Lab;

const A1: &str = "52:54:00:a2:00:01";
const A2: &str = "52:54:00:a2:00:02";
const B1: &str = "52:54:00:b2:00:01";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_teams_reach_only_their_own_racks_events_jobs_tasks_and_inventory() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    let mut id = std::collections::HashMap::new();
    for (mac, host) in [(A1, "a1"), (A2, "a2"), (B1, "b1")] {
        let m =
            api.ok(Method::POST, "/machines", Some(json!({"macs": [mac], "hostname": host, "tags": ["both"]}))).await;
        id.insert(mac, m.unwrap()["id"].as_u64().unwrap());
    }
    // Each team's rack; placing a machine in it moves the machine into the rack's pool.
    let racks = [
        ("ra", "team-a", "127.0.21.1-127.0.21.8", format!("{A1},a1,,U1\n{A2},a2,,U2\n")),
        ("rb", "team-b", "127.0.22.1-127.0.22.8", format!("{B1},b1,,U1\n")),
    ];
    for (rack, pool, plan, rows) in racks {
        let spec = json!({"name": rack, "pool": pool, "address_plan": plan});
        api.ok(Method::POST, "/racks", Some(spec)).await.unwrap();
        let csv = format!("mac,hostname,ip,slot\n{rows}");
        api.ok(Method::POST, &format!("/racks/{rack}/csv"), Some(json!({"csv": csv}))).await.unwrap();
    }
    for mac in [A1, A2] {
        assert_eq!(api.ok(Method::GET, &format!("/machines/{mac}"), None).await.unwrap()["pool"], "team-a");
    }
    // An admin moves A2 to team-b; it stays in rack ra's slot U2.
    api.ok(Method::PUT, &format!("/machines/{A2}/pool"), Some(json!({"pool": "team-b"}))).await.unwrap();
    let va = scoped(&lab, "va", json!({"team-a": "viewer"})).await;
    let ob = scoped(&lab, "ob", json!({"team-b": "operator"})).await;

    // Racks: each team lists its own; another's answers as a missing one.
    let names = |v: &Value| -> Vec<String> {
        v["racks"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&va.ok(Method::GET, "/racks", None).await.unwrap()), ["ra"]);
    assert_eq!(names(&ob.ok(Method::GET, "/racks", None).await.unwrap()), ["rb"]);
    let missing = va.call(Method::GET, "/racks/nope", None).await.unwrap();
    let (s, v) = va.call(Method::GET, "/racks/rb", None).await.unwrap();
    assert_eq!((s, &v["title"]), (missing.0, &missing.1["title"]), "{v}");
    assert_eq!(s, 404);
    let ra = va.ok(Method::GET, "/racks/ra", None).await.unwrap();
    let placed: Vec<u64> = ra["slots"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["machines"].as_array().unwrap().iter().map(|m| m["id"].as_u64().unwrap()))
        .collect();
    assert_eq!(placed, [id[A1]], "the machine moved to team-b is not in team-a's elevation: {ra}");
    // (The rack's own description still lists the row an admin wrote for slot U2: it is the
    // rack's, not the machine's.)
    assert!(!ra["slots"].to_string().contains(A2), "no slot names it: {ra}");
    let whole = api.ok(Method::GET, "/racks/ra", None).await.unwrap();
    assert!(whole["slots"].to_string().contains(A2), "an admin sees it where it is: {whole}");
    // Writing racks is not for pool users, not even an operator of the rack's pool.
    let spec = json!({"name": "rc", "pool": "team-b", "address_plan": "127.0.23.1-127.0.23.8"});
    assert_eq!(ob.call(Method::POST, "/racks", Some(spec)).await.unwrap().0, 403);
    let csv = json!({"csv": format!("mac,hostname,ip,slot\n{A1},,,U3\n")});
    assert_eq!(ob.call(Method::POST, "/racks/rb/csv", Some(csv)).await.unwrap().0, 403);
    assert_eq!(ob.call(Method::DELETE, "/racks/rb", None).await.unwrap().0, 403);

    // The event log: only team-a's machine, and some of it.
    let log = va.ok(Method::GET, "/events?limit=10000", None).await.unwrap();
    let seen: std::collections::BTreeSet<u64> =
        log["events"].as_array().unwrap().iter().map(|e| e["machine_id"].as_u64().unwrap()).collect();
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [id[A1]], "{log}");
    assert_eq!(va.call(Method::GET, &format!("/events?machine={B1}"), None).await.unwrap().0, 404);
    // The live stream: team-b's machine changes first, then team-a's; only the latter arrives.
    let mut stream = va.events("/events/stream", None).await.unwrap();
    let next = async |stream: &mut rackboot::client::EventStream| {
        tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap()
    };
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("stream.start"));
    for mac in [B1, A2, A1] {
        api.ok(Method::PATCH, &format!("/machines/{mac}"), Some(json!({"serial": format!("sn-{mac}")}))).await.unwrap();
    }
    let e: Value = serde_json::from_str(&next(&mut stream).await.data).unwrap();
    assert_eq!(e["machine_id"], id[A1], "the first event through is team-a's: {e}");
    drop(stream);
    // Resuming from the start of the log replays only team-a's events too.
    let mut stream = va.events("/events/stream", Some(0)).await.unwrap();
    for _ in 0..3 {
        let e: Value = serde_json::from_str(&next(&mut stream).await.data).unwrap();
        assert_eq!(e["machine_id"], id[A1], "{e}");
    }
    drop(stream);

    // Jobs: team-b's operator runs a job on tag "both": team-b's machines get it, no other.
    let action = json!({"kind": "script", "interpreter": "/bin/sh", "body": "true"});
    let made = ob.ok(Method::POST, "/jobs", Some(json!({"tag": "both", "action": action}))).await.unwrap();
    let mut got: Vec<u64> =
        made["jobs"].as_array().unwrap().iter().map(|j| j["machine_id"].as_u64().unwrap()).collect();
    got.sort_unstable();
    let mut want = vec![id[A2], id[B1]];
    want.sort_unstable();
    assert_eq!(got, want, "{made}");
    let b_job = made["jobs"][0]["id"].as_u64().unwrap();
    let a_job = api.ok(Method::POST, "/jobs", Some(json!({"machine": A1, "action": action}))).await.unwrap()["jobs"][0]
        ["id"]
        .as_u64()
        .unwrap();
    let (s, _) = ob.call(Method::POST, "/jobs", Some(json!({"machine": A1, "action": action}))).await.unwrap();
    assert_eq!(s, 404, "team-a's machine is not there for team-b");
    let listed = va.ok(Method::GET, "/jobs", None).await.unwrap();
    let ids: Vec<u64> = listed["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [a_job], "{listed}");
    let missing = va.call(Method::GET, "/jobs/999999", None).await.unwrap();
    for path in [format!("/jobs/{b_job}"), format!("/jobs/{b_job}/output")] {
        let (s, v) = va.call(Method::GET, &path, None).await.unwrap();
        assert_eq!((s, &v["title"]), (missing.0, &missing.1["title"]), "{path}: {v}");
    }
    assert_eq!(ob.call(Method::POST, &format!("/jobs/{a_job}/cancel"), None).await.unwrap().0, 404);
    assert_eq!(va.call(Method::POST, &format!("/jobs/{a_job}/cancel"), None).await.unwrap().0, 403, "a viewer");
    assert_eq!(api.ok(Method::GET, &format!("/jobs/{a_job}"), None).await.unwrap()["state"], "queued");
    let (s, v) = ob.call(Method::POST, &format!("/jobs/{b_job}/cancel"), None).await.unwrap();
    assert_eq!((s, &v["state"]), (200, &json!("cancelled")), "{v}");

    // The Ansible inventory: team-a's host only.
    let inv = va.ok(Method::GET, "/inventory/ansible", None).await.unwrap().to_string();
    assert!(inv.contains("\"a1\"") && !inv.contains("\"a2\"") && !inv.contains("\"b1\""), "{inv}");
    let inv = api.ok(Method::GET, "/inventory/ansible", None).await.unwrap().to_string();
    assert!(inv.contains("\"a1\"") && inv.contains("\"a2\"") && inv.contains("\"b1\""), "{inv}");

    // Tasks: team-b's operator provisions by tag; the task is team-b's, with team-b's machines.
    let images = lab.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), b"an image").unwrap();
    let by_tag = json!({"select": {"tag": "both"}, "image": "lab.img"});
    let tb = ob.ok(Method::POST, "/tasks", Some(by_tag.clone())).await.unwrap();
    assert_eq!(tb["task"]["spec"]["pool"], "team-b", "{tb}");
    let mut got: Vec<u64> = tb["runs"].as_array().unwrap().iter().map(|r| r["machine_id"].as_u64().unwrap()).collect();
    got.sort_unstable();
    assert_eq!(got, want, "{tb}");
    let tb = tb["task"]["id"].as_u64().unwrap();
    // An admin's task by a tag that spans pools says which pool; given, it takes that pool's.
    let (s, v) = api.call(Method::POST, "/tasks", Some(by_tag.clone())).await.unwrap();
    assert!(s == 400 && v["detail"].as_str().unwrap().contains("a task acts in one pool"), "{s} {v}");
    let mut in_a = by_tag.clone();
    in_a["pool"] = json!("team-a");
    let ta = api.ok(Method::POST, "/tasks", Some(in_a)).await.unwrap();
    assert_eq!(ta["runs"].as_array().unwrap().len(), 1, "{ta}");
    assert_eq!(ta["runs"][0]["machine_id"], id[A1], "{ta}");
    let ta = ta["task"]["id"].as_u64().unwrap();
    let wrong = json!({"select": {"macs": [B1]}, "image": "lab.img", "pool": "team-a"});
    let (s, v) = api.call(Method::POST, "/tasks", Some(wrong)).await.unwrap();
    assert!(s == 400 && v["detail"].as_str().unwrap().contains("team-b"), "{s} {v}");
    // Team-b's operator: team-a's machine is not there, an unknown MAC is not registered, and
    // `next` takes team-b's ready machines.
    for mac in [A1, "52:54:00:b2:00:99"] {
        let (s, v) = ob
            .call(Method::POST, "/tasks", Some(json!({"select": {"macs": [mac]}, "image": "lab.img"})))
            .await
            .unwrap();
        assert_eq!(s, 404, "{mac}: {v}");
    }
    assert_eq!(api.call(Method::GET, "/machines/52:54:00:b2:00:99", None).await.unwrap().0, 404);
    let by_next =
        ob.ok(Method::POST, "/tasks", Some(json!({"select": {"next": 1}, "image": "lab.img"}))).await.unwrap();
    assert_eq!(by_next["task"]["spec"]["pool"], "team-b", "{by_next}");
    let (s, _) = ob
        .call(Method::POST, "/tasks", Some(json!({"select": {"next": 1}, "image": "lab.img", "pool": "team-a"})))
        .await
        .unwrap();
    assert_eq!(s, 403, "not a pool they operate");
    // Team-a's viewer lists team-a's task only; team-b's answers as a missing one.
    let listed = va.ok(Method::GET, "/tasks", None).await.unwrap();
    let ids: Vec<u64> = listed["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [ta], "{listed}");
    let missing = va.call(Method::GET, "/tasks/999999", None).await.unwrap();
    let (s, v) = va.call(Method::GET, &format!("/tasks/{tb}"), None).await.unwrap();
    assert_eq!((s, &v["title"]), (missing.0, &missing.1["title"]), "{v}");
    assert_eq!(va.call(Method::POST, &format!("/tasks/{ta}/cancel"), None).await.unwrap().0, 403, "a viewer");
    assert_eq!(ob.call(Method::POST, &format!("/tasks/{ta}/cancel"), None).await.unwrap().0, 404);
    assert_eq!(ob.call(Method::POST, &format!("/tasks/{tb}/cancel"), None).await.unwrap().0, 200);

    // The audit log names the pools each change acted in, and filters by them.
    let entries = |v: Value| -> Vec<(String, String, Vec<String>)> {
        let pools =
            |e: &Value| e["pools"].as_array().map(|a| a.iter().map(|p| p.as_str().unwrap().to_string()).collect());
        let one = |e: &Value| {
            (e["user"].as_str().unwrap().into(), e["route"].as_str().unwrap().into(), pools(e).unwrap_or_default())
        };
        v["entries"].as_array().unwrap().iter().map(one).collect()
    };
    let all = entries(api.ok(Method::GET, "/audit?limit=1000", None).await.unwrap());
    let find = |user: &str, route: &str| all.iter().find(|(u, r, _)| u == user && r == route).map(|e| e.2.clone());
    assert_eq!(find("admin", "/machines/{id}/pool"), Some(vec!["team-a".into(), "team-b".into()]), "from and to");
    assert_eq!(find("ob", "/jobs/{id}/cancel"), Some(vec!["team-b".into()]));
    assert_eq!(find("ob", "/racks").map(|p| p.is_empty()), Some(true), "refused before it acted: {all:?}");
    let b = entries(api.ok(Method::GET, "/audit?pool=team-b&limit=1000", None).await.unwrap());
    assert!(b.iter().all(|(_, _, p)| p.contains(&"team-b".to_string())), "{b:?}");
    assert!(b.iter().any(|(u, r, _)| u == "ob" && r == "/jobs"), "{b:?}");
    assert_eq!(b.iter().filter(|(_, r, _)| r == "/racks/{name}/csv").count(), 1, "rb's, not ra's: {b:?}");
    let (s, _) = api.call(Method::GET, "/audit?pool=Team%20B", None).await.unwrap();
    assert_eq!(s, 400);

    // An admin changes team-a's viewer's pools: the stream they hold open (filtered by the pools
    // they had) ends at once, and the one they open again is filtered by their new pools.
    let mut stream = va.events("/events/stream", None).await.unwrap();
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("stream.start"));
    api.ok(Method::PATCH, "/users/va", Some(json!({"pools": {"team-b": "viewer"}}))).await.unwrap();
    let ended =
        tokio::time::timeout(Duration::from_secs(5), async { while let Ok(Some(_)) = stream.next().await {} }).await;
    assert!(ended.is_ok(), "the stream of the old pools ends");
    let mut stream = va.events("/events/stream", None).await.unwrap();
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("stream.start"));
    api.ok(Method::PATCH, &format!("/machines/{A1}"), Some(json!({"serial": "moved-on"}))).await.unwrap();
    api.ok(Method::PATCH, &format!("/machines/{B1}"), Some(json!({"serial": "now-seen"}))).await.unwrap();
    let e: Value = serde_json::from_str(&next(&mut stream).await.data).unwrap();
    assert_eq!(e["machine_id"], id[B1], "team-b's now: {e}");
}
