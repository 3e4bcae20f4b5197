//! Day two in-process, with a real agent on loopback: release (the run's steps, the machine back
//! in the pool, its reservation dropped or kept), an erase the agent refuses (failed, never
//! delivered twice), retire and bring back, rescue and return, a release from rescue, and the
//! refusals (a busy or retired machine, a bad body, a viewer, an erase through `/jobs` or
//! `/tasks`). The agent is a simulation (it never acts on the host): real erases are the lab's
//! (`e2e::vm::provision`). No root needed.

use hyper::Method;
use serde_json::{json, Value};

use crate::common::appliance::Appliance;
use crate::common::provision::{config, run_where};

async fn post(a: &Appliance, path: &str, body: Option<Value>) -> (u16, Value) {
    a.api.call(Method::POST, path, body).await.unwrap()
}

async fn state(a: &Appliance, mac: &str) -> String {
    a.get(&format!("/machines/{mac}")).await["state"].as_str().unwrap().to_string()
}

/// Waits until the machine's BootOS agent has enrolled with its inventory.
async fn ready(a: &Appliance, mac: &str) {
    crate::common::eventually(|| async {
        let m = a.api.ok(Method::GET, &format!("/machines/{mac}"), None).await?;
        anyhow::ensure!(m["inventory"].is_object(), "no inventory yet: {m}");
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn release_rescue_and_retire_walk_their_steps_and_refuse_what_they_must() {
    let post_dir = tempfile::tempdir().unwrap();
    let profile = "[[provision.test_profiles]]\nname = \"quick\"\ncpu_secs = 1\n";
    let a = Appliance::start(&format!("{}{profile}", config(post_dir.path()))).await;
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:b1:00:01";
    let agent = a.agent(mac, work.path());
    ready(&a, mac).await;
    let id = a.get(&format!("/machines/{mac}")).await["id"].as_u64().unwrap();
    let base = format!("/machines/{id}");
    a.api.ok(Method::PATCH, &base, Some(json!({"reserved_ip": "127.0.9.30"}))).await.unwrap();

    // Bad bodies: the erase must be said, and be one of the four.
    for body in [json!({}), json!({"erase": "shred"}), json!({"erase": "quick", "extra": 1})] {
        let (st, v) = post(&a, &format!("{base}/release"), Some(body.clone())).await;
        assert_eq!(st, 400, "{body}: {v}");
    }
    // An erase goes through a release only.
    let job = json!({"machine": mac, "action": {"kind": "erase", "disks": ["/dev/sda"], "mode": "zero"}});
    let (st, v) = post(&a, "/jobs", Some(job)).await;
    assert!(st == 400 && v["detail"].as_str().unwrap().contains("release"), "{v}");
    let task = json!({"select": {"macs": [mac]}, "purpose": {"kind": "release", "erase": "zero"}});
    let (st, v) = post(&a, "/tasks", Some(task)).await;
    assert!(st == 400 && v["detail"].as_str().unwrap().contains("/release"), "{v}");
    // A viewer may not release.
    let viewer = a.api.ok(Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await.unwrap();
    let ca = std::fs::read(a.dir.path().join("tls/ca.pem")).unwrap();
    let ro = rackboot::client::ApiClient::new(&a.url(), viewer["secret"].as_str().unwrap().into(), &ca).unwrap();
    let (st, _) = ro.call(Method::POST, &format!("{base}/release"), Some(json!({"erase": "none"}))).await.unwrap();
    assert_eq!(st, 403);

    // A release without erase: BootOS is live, so straight to done; ready, reservation kept.
    let (st, t) = post(&a, &format!("{base}/release"), Some(json!({"erase": "none", "keep_reservation": true}))).await;
    assert_eq!(st, 201, "{t}");
    assert_eq!(t["spec"]["purpose"], json!({"kind": "release", "erase": "none", "keep_reservation": true}));
    let run = run_where(&a, t["id"].as_u64().unwrap(), 30, "done", |r| r["state"] != "active").await;
    assert_eq!((run["state"].as_str(), run["progress"].as_u64()), (Some("done"), Some(100)), "{run}");
    let m = a.get(&base).await;
    assert_eq!((m["state"].as_str(), m["reserved_ip"].as_str()), (Some("ready"), Some("127.0.9.30")));

    // An erase this agent will not do (it runs on the host): the run fails, the job went once.
    let (_, t) = post(&a, &format!("{base}/release"), Some(json!({"erase": "quick"}))).await;
    let run = run_where(&a, t["id"].as_u64().unwrap(), 30, "failed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "failed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("nothing was erased"), "{run}");
    let jobs = a.get(&format!("/jobs?machine={id}")).await;
    let erase: Vec<&Value> =
        jobs["jobs"].as_array().unwrap().iter().filter(|j| j["action"]["kind"] == "erase").collect();
    assert_eq!(erase.len(), 1, "{jobs}");
    assert_eq!((erase[0]["max_attempts"].as_u64(), erase[0]["action"]["mode"].as_str()), (Some(1), Some("quick")));
    assert_eq!(state(&a, mac).await, "failed");

    // Retire: out of every pool until brought back.
    let (st, m) = post(&a, &format!("{base}/retire"), None).await;
    assert_eq!((st, m["state"].as_str()), (200, Some("retired")), "{m}");
    let (st, v) = post(&a, "/tasks", Some(json!({"select": {"macs": [mac]}, "installer": "x"}))).await;
    assert_eq!(st, 400, "{v}");
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), b"image").unwrap();
    let (st, v) = post(&a, "/tasks", Some(json!({"select": {"macs": [mac]}, "image": "lab.img"}))).await;
    assert!(st == 409 && v["detail"].as_str().unwrap().contains("retired"), "{v}");
    let (st, v) = post(&a, &format!("{base}/release"), Some(json!({"erase": "none"}))).await;
    assert_eq!(st, 409, "{v}");
    let (st, _) = post(&a, &format!("{base}/retire"), None).await;
    assert_eq!(st, 409, "retired already");
    let (st, m) = post(&a, &format!("{base}/unretire"), None).await;
    assert_eq!((st, m["state"].as_str()), (200, Some("ready")));
    let (st, _) = post(&a, &format!("{base}/unretire"), None).await;
    assert_eq!(st, 409, "only a retired machine");

    // Rescue wants an installed or failed machine; return wants a rescue.
    let (st, v) = post(&a, &format!("{base}/rescue"), Some(json!({}))).await;
    assert!(st == 409 && v["detail"].as_str().unwrap().contains("installed or failed"), "{v}");
    let (st, _) = post(&a, &format!("{base}/return"), None).await;
    assert_eq!(st, 409);
    // A failed machine is rescued: BootOS is live, the rescue job lists the disks, then it is held.
    let (_, t) = post(&a, &format!("{base}/release"), Some(json!({"erase": "zero"}))).await;
    run_where(&a, t["id"].as_u64().unwrap(), 30, "failed", |r| r["state"] != "active").await;
    let (st, t) = post(&a, &format!("{base}/rescue"), Some(json!({"mount": false}))).await;
    assert_eq!(st, 201, "{t}");
    let rescue = t["id"].as_u64().unwrap();
    let run = run_where(&a, rescue, 30, "rescued", |r| r["step"]["step"] == "rescued").await;
    assert_eq!(run["state"], "active");
    assert_eq!(state(&a, mac).await, "rescue");
    let jobs = a.get(&format!("/jobs?machine={id}")).await;
    let script = jobs["jobs"].as_array().unwrap().iter().find(|j| j["action"]["kind"] == "script").unwrap().clone();
    assert!(script["action"]["body"].as_str().unwrap().contains("MOUNT=\"\"\n"), "not mounted: {script}");
    assert_eq!(script["state"], "succeeded", "{script}");
    // Busy: no second rescue, no retire.
    assert_eq!(post(&a, &format!("{base}/rescue"), Some(json!({}))).await.0, 409);
    assert_eq!(post(&a, &format!("{base}/retire"), None).await.0, 409);

    // Returned: the run reboots it into its disk (installed) and waits for the installed agent.
    let (st, run) = post(&a, &format!("{base}/return"), None).await;
    assert_eq!((st, run["step"]["step"].as_str()), (200, Some("reboot")), "{run}");
    run_where(&a, rescue, 30, "wait_installed", |r| r["step"]["step"] == "wait_installed").await;
    assert_eq!(state(&a, mac).await, "installed");
    let script = crate::common::http_get(([127, 0, 0, 1], a.port).into(), &format!("/boot/ipxe?mac={mac}")).await;
    assert!(script.contains("sanboot") || script.contains("exit"), "a returned machine boots its disk:\n{script}");
    a.api.ok(Method::POST, &format!("/tasks/{rescue}/cancel"), None).await.unwrap();

    // A release from rescue ends the rescue and erases from there; the reservation goes.
    let (_, t) = post(&a, &format!("{base}/rescue"), Some(json!({}))).await;
    let rescue = t["id"].as_u64().unwrap();
    run_where(&a, rescue, 30, "rescued", |r| r["step"]["step"] == "rescued").await;
    let (st, t) = post(&a, &format!("{base}/release"), Some(json!({"erase": "none"}))).await;
    assert_eq!(st, 201, "{t}");
    let run = run_where(&a, t["id"].as_u64().unwrap(), 30, "done", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "done", "{run}");
    let m = a.get(&base).await;
    assert_eq!((m["state"].as_str(), m["reserved_ip"].as_str()), (Some("ready"), None), "{m}");
    assert_eq!(a.get(&format!("/tasks/{rescue}")).await["task"]["state"], "cancelled");

    // Commissioning: an unknown profile is refused; without the tools overlay the run fails
    // saying how to build it; with one, the script refuses to run outside BootOS (this agent
    // runs on the host), and the judged results say the job failed and the CPU test is missing.
    let (st, v) = post(&a, &format!("{base}/commission"), Some(json!({"profile": "nope"}))).await;
    assert!(st == 404 && v["detail"].as_str().unwrap().contains("quick"), "no such test profile: {v}");
    let (st, t) = post(&a, &format!("{base}/commission"), Some(json!({"profile": "quick"}))).await;
    assert_eq!(st, 201, "{t}");
    let run = run_where(&a, t["id"].as_u64().unwrap(), 30, "failed", |r| r["state"] != "active").await;
    assert!(run["error"].as_str().unwrap().contains("bootos/tools.sh"), "{run}");
    assert_eq!(state(&a, mac).await, "failed");
    std::fs::write(a.dir.path().join("boot/bootos-tools.tar.gz"), b"not really").unwrap();
    let (_, t) = post(&a, &format!("{base}/commission"), Some(json!({"profile": "quick"}))).await;
    let run = run_where(&a, t["id"].as_u64().unwrap(), 30, "failed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "failed", "{run}");
    let tests = a.get(&format!("{base}/tests")).await;
    assert_eq!(tests["runs"].as_array().unwrap().len(), 2, "{tests}");
    let newest = &tests["runs"][0];
    assert_eq!((newest["profile"].as_str(), newest["state"].as_str()), (Some("quick"), Some("failed")), "{tests}");
    let names: Vec<(&str, bool)> = newest["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(names, [("cpu", false), ("job", false)], "{tests}");
    let jobs = a.get(&format!("/jobs?machine={id}")).await;
    let job = &jobs["jobs"][0];
    let out = a.get(&format!("/jobs/{}/output", job["id"])).await;
    assert!(out["text"].as_str().unwrap().contains("this is not BootOS"), "{out}");

    // A provisioning task may commission its machines first: an unknown profile is refused; the
    // tests run after the check and before the install, and a failed one fails the run (the
    // image step never starts), the test named, the machine `failed`.
    // The disk is a file of the test's: this agent runs on the host, and a bug that let the
    // install start must not reach a real disk.
    let scratch = a.dir.path().join("scratch.disk");
    let spec = |profile: &str| json!({"select": {"macs": [mac]}, "image": "lab.img", "disk": scratch.display().to_string(), "commission": profile});
    let (st, v) = post(&a, "/tasks", Some(spec("nope"))).await;
    assert!(st == 400 && v["detail"].as_str().unwrap().contains("test profile"), "{v}");
    std::fs::create_dir_all(a.dir.path().join("boot/images")).unwrap();
    std::fs::write(a.dir.path().join("boot/images/lab.img"), vec![0u8; 4096]).unwrap();
    let (st, t) = post(&a, "/tasks", Some(spec("quick"))).await;
    assert_eq!(st, 201, "{t}");
    let task = t["task"]["id"].as_u64().unwrap();
    let run = run_where(&a, task, 30, "commissioning", |r| r["step"]["step"] == "commission").await;
    assert_eq!(run["state"], "active", "{run}");
    let run = run_where(&a, task, 30, "failed", |r| r["state"] != "active").await;
    assert_eq!((run["state"].as_str(), run["step"]["step"].as_str()), (Some("failed"), Some("commission")), "{run}");
    assert!(run["error"].as_str().unwrap().contains("test cpu: no result"), "{run}");
    assert_eq!(state(&a, mac).await, "failed");
    let tests = a.get(&format!("{base}/tests")).await;
    assert_eq!(tests["runs"].as_array().unwrap().len(), 2, "a task's run is not a commissioning run's: {tests}");

    // The timeline and the audit log say what happened.
    let ev = a.get(&format!("{base}/events")).await;
    let kinds: Vec<&str> = ev["events"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"provision.done") && kinds.contains(&"machine.lifecycle"), "{kinds:?}");
    let audit = a.get("/audit?limit=1000").await;
    let routes: Vec<String> =
        audit["entries"].as_array().unwrap().iter().map(|e| e["route"].as_str().unwrap().to_string()).collect();
    for r in ["/machines/{id}/release", "/machines/{id}/rescue", "/machines/{id}/return", "/machines/{id}/retire"] {
        assert!(routes.iter().any(|x| x == r), "{r} audited: {routes:?}");
    }
    agent.abort();
}
