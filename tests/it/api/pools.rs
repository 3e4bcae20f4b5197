//! Resource pools, the first part: machines and racks belong to a pool (`default` unless said);
//! a machine placed in a rack joins the rack's pool (and follows it when the rack's pool
//! changes); an admin moves a machine to another pool (the API and `rackboot machines pool`),
//! an operator may not; the machine list filters by pool; users get roles per pool from the CLI;
//! a boot profile of a pool is for its machines only, and only its users (and admins) see it.

use hyper::Method;
use serde_json::{json, Value};

use crate::api::directory::client;
use crate::common::Lab;

const PLACED: &str = "52:54:00:a0:00:01";
const LOOSE: &str = "52:54:00:a0:00:02";

async fn pools(lab: &Lab, pool: &str) -> Vec<String> {
    let v = lab.api.ok(Method::GET, &format!("/machines?pool={pool}"), None).await.unwrap();
    v["machines"].as_array().unwrap().iter().map(|m| m["macs"][0].as_str().unwrap().to_string()).collect()
}

async fn pool_of(lab: &Lab, mac: &str) -> Value {
    lab.api.ok(Method::GET, &format!("/machines/{mac}"), None).await.unwrap()["pool"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machines_join_their_rack_s_pool_and_only_an_admin_moves_them() {
    let lab = Lab::start("").await;
    for mac in [PLACED, LOOSE] {
        lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    }
    assert_eq!(pool_of(&lab, LOOSE).await, "default");
    let rack = json!({"name": "r1", "pool": "team-a", "address_plan": "127.0.13.1-127.0.13.8"});
    lab.api.ok(Method::POST, "/racks", Some(rack)).await.unwrap();
    let (s, v) = lab.api.call(Method::POST, "/racks", Some(json!({"name": "r2", "pool": "Team A"}))).await.unwrap();
    assert_eq!(s, 400, "{v}");
    let csv = format!("mac,hostname,ip,slot\n{PLACED},pa1,,U1\n");
    lab.api.ok(Method::POST, "/racks/r1/csv", Some(json!({"csv": csv}))).await.unwrap();
    assert_eq!(pool_of(&lab, PLACED).await, "team-a", "placed in r1: its pool");
    let ev = lab.api.ok(Method::GET, &format!("/machines/{PLACED}/events"), None).await.unwrap();
    let placed = ev["events"].as_array().unwrap().iter().find(|e| e["kind"] == "rack.placed").cloned().unwrap();
    assert_eq!(placed["detail"]["pool"], "team-a", "{placed}");
    assert_eq!(pools(&lab, "team-a").await, [PLACED]);
    assert_eq!(pools(&lab, "default").await, [LOOSE]);

    // An admin moves the loose one; an operator may not; a bad name is refused.
    let moved = lab.api.ok(Method::PUT, &format!("/machines/{LOOSE}/pool"), Some(json!({"pool": "team-b"}))).await;
    assert_eq!(moved.unwrap()["pool"], "team-b");
    let (s, v) =
        lab.api.call(Method::PUT, &format!("/machines/{LOOSE}/pool"), Some(json!({"pool": "-x"}))).await.unwrap();
    assert_eq!(s, 400, "{v}");
    let user = json!({"name": "olga", "role": "operator", "password": "olga-password-123"});
    lab.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    let login = json!({"username": "olga", "password": "olga-password-123"});
    let (_, v) = client(&lab, "").call(Method::POST, "/auth/login", Some(login)).await.unwrap();
    let olga = client(&lab, v["token"].as_str().unwrap());
    let (s, v) =
        olga.call(Method::PUT, &format!("/machines/{LOOSE}/pool"), Some(json!({"pool": "team-a"}))).await.unwrap();
    assert_eq!(s, 403, "{v}");
    assert_eq!(pool_of(&lab, LOOSE).await, "team-b");

    // The CLI, and the rack's pool changing: its machines follow.
    let (ok, said) = lab.cli(&["machines", "pool", LOOSE, "team-c"]);
    assert!(ok && said.contains("in pool team-c"), "{said}");
    let (ok, listed) = lab.cli(&["machines", "list", "--pool", "team-c"]);
    assert!(ok && listed.contains(LOOSE) && !listed.contains(PLACED), "{listed}");
    let spec = json!({"name": "r1", "pool": "team-z", "address_plan": "127.0.13.1-127.0.13.8",
        "machines_csv": format!("mac,hostname,ip,slot\n{PLACED},pa1,,U1\n")});
    let (s, v) = lab.api.call(Method::PUT, "/racks/r1", Some(spec)).await.unwrap();
    assert_eq!(s, 200, "{v}");
    assert_eq!(pool_of(&lab, PLACED).await, "team-z", "it follows its rack's pool");

    // A user with roles in pools, from the CLI.
    let (ok, said) = lab.cli_with_input(
        &["users", "add", "pat", "--role", "viewer", "--pool", "team-z=operator"],
        "pat-password-123\n",
    );
    assert!(ok, "{said}");
    let (ok, listed) = lab.cli(&["users", "list"]);
    assert!(ok && listed.lines().any(|l| l.starts_with("pat ") && l.contains("team-z=operator")), "{listed}");
    // pat's global role (viewer) does not cap the operator role pat holds in team-z.
    let (_, v) = client(&lab, "")
        .call(Method::POST, "/auth/login", Some(json!({"username": "pat", "password": "pat-password-123"})))
        .await
        .unwrap();
    let pat = client(&lab, v["token"].as_str().unwrap());
    let (s, v) = pat.call(Method::PATCH, &format!("/machines/{PLACED}"), Some(json!({"tags": ["z"]}))).await.unwrap();
    assert_eq!(s, 200, "{v}");
    assert_eq!(pat.call(Method::GET, &format!("/machines/{LOOSE}"), None).await.unwrap().0, 404, "team-c is not pat's");
    let (ok, said) = lab.cli(&["users", "set", "pat", "--pool", "team-z=admin"]);
    assert!(!ok && said.contains("viewer or operator"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_s_boot_profile_is_for_that_pool_only() {
    let lab = Lab::start("").await;
    let (mine, theirs) = ("52:54:00:a0:01:01", "52:54:00:a0:01:02");
    for (mac, pool) in [(mine, "team-a"), (theirs, "team-b")] {
        lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
        lab.api.ok(Method::PUT, &format!("/machines/{mac}/pool"), Some(json!({"pool": pool}))).await.unwrap();
    }
    let profile = |pool: &str| json!({"kernel": "vmlinuz", "initrd": "initrd.img", "pool": pool});
    let (s, v) = lab.api.call(Method::PUT, "/profiles/a-only", Some(profile("Team A"))).await.unwrap();
    assert_eq!(s, 400, "not a pool name: {v}");
    lab.api.ok(Method::PUT, "/profiles/a-only", Some(profile("team-a"))).await.unwrap();
    lab.api
        .ok(Method::PUT, "/profiles/shared", Some(json!({"kernel": "vmlinuz", "initrd": "initrd.img"})))
        .await
        .unwrap();
    // Pinned: team-a's machine yes, team-b's no; the shared profile anywhere.
    let pin = |name: &str| Some(json!({"boot_profile": name}));
    lab.api.ok(Method::PATCH, &format!("/machines/{mine}"), pin("a-only")).await.unwrap();
    let (s, v) = lab.api.call(Method::PATCH, &format!("/machines/{theirs}"), pin("a-only")).await.unwrap();
    assert!(s == 400 && v["detail"].as_str().unwrap().contains("pool team-a's"), "{s} {v}");
    lab.api.ok(Method::PATCH, &format!("/machines/{theirs}"), pin("shared")).await.unwrap();
    // Each team's users list the shared profiles and their own pool's.
    let names = |v: Value| -> Vec<String> {
        v["profiles"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
    };
    let mut seen = Vec::new();
    for (user, pool) in [("ann", "team-a"), ("bert", "team-b")] {
        let body = json!({"name": user, "role": "viewer", "password": format!("{user}-password-123"), "pools": {pool: "viewer"}});
        lab.api.ok(Method::POST, "/users", Some(body)).await.unwrap();
        let (s, v) = crate::api::directory::login(&lab, user, &format!("{user}-password-123")).await;
        assert_eq!(s, 200, "{v}");
        let c = client(&lab, v["token"].as_str().unwrap());
        seen.push(names(c.ok(Method::GET, "/profiles", None).await.unwrap()));
    }
    assert!(seen[0].contains(&"a-only".to_string()) && seen[0].contains(&"shared".to_string()), "{seen:?}");
    assert!(!seen[1].contains(&"a-only".to_string()) && seen[1].contains(&"shared".to_string()), "{seen:?}");
    let all = lab.api.ok(Method::GET, "/profiles", None).await.unwrap();
    let a = all["profiles"].as_array().unwrap().iter().find(|p| p["name"] == "a-only").cloned().unwrap();
    assert_eq!(a["pool"], "team-a", "{a}");
}
