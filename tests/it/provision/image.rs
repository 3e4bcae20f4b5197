//! Provisioning from an image against the whole appliance in-process, with real agents (the
//! `rackboot-agent` library) on loopback: a task takes a machine through every step:
//! hardware-profile script, image deploy (checked against its SHA-256) onto a file standing in for
//! the disk, the rendered identity script (written under `<disk>.root/`, since the target is not a
//! block device), reboot, the installed system's agent checking in with the credential the
//! identity step left it, and a post-install script. The appliance is restarted in the middle and
//! the run carries on from its step. A wrong checksum fails the run; reinstall starts over. No root
//! needed.

use std::time::{Duration, Instant};

use crate::common::appliance::Appliance;
use crate::common::provision::{config, reboot_job_succeeds, run_where, sha256};
use hyper::Method;
use rackboot_agent::wire::AgentMode;
use serde_json::json;

#[tokio::test]
async fn a_task_takes_a_machine_from_bootos_to_installed_across_a_restart() {
    let post = tempfile::tempdir().unwrap();
    std::fs::write(
        post.path().join("mark.sh"),
        "echo \"post-install on $RACKBOOT_HOSTNAME\" > \"$RACKBOOT_DISK.post\"\n",
    )
    .unwrap();
    let mut a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    let image: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(images.join("lab.img"), &image).unwrap();

    let work = tempfile::tempdir().unwrap();
    let disk = work.path().join("disk.img");
    let mac = "52:54:00:b0:00:01";
    let bootos = a.agent(mac, work.path());
    let spec = json!({
        "select": {"macs": [mac]}, "image": "lab.img", "hardware_profile": "lab",
        "hostname_pattern": "node-{n:02}", "ip_pool": "127.0.9.10-127.0.9.20", "disk": disk,
        "ssh_keys": ["ssh-ed25519 AAAAC3Nza test@lab"], "post_install": ["mark.sh"], "retries": 0
    });
    let created = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();
    let task = created["task"]["id"].as_u64().unwrap();
    assert_eq!(created["task"]["spec"]["image_sha256"], sha256(&image), "checksum computed from the file");
    let m = a.get(&format!("/machines/{mac}")).await;
    assert_eq!((m["hostname"].as_str(), m["reserved_ip"].as_str()), (Some("node-01"), Some("127.0.9.10")));

    // BootOS: configure, install, identity, reboot; then the appliance waits for the installed agent.
    let run = run_where(&a, task, 30, "wait_installed", |r| r["step"]["step"] == "wait_installed").await;
    assert_eq!(run["state"], "active");
    assert_eq!(std::fs::read(&disk).unwrap(), image, "the image is on the disk, byte for byte");
    let root = work.path().join("disk.img.root");
    assert_eq!(std::fs::read_to_string(root.join("etc/hostname")).unwrap(), "node-01\n");
    assert!(std::fs::read_to_string(root.join("root/.ssh/authorized_keys")).unwrap().contains("test@lab"));
    assert_eq!(std::fs::read_to_string(root.join("etc/machine-id")).unwrap(), "", "a fresh machine-id on first boot");
    // An absolute link, as systemctl enable makes: it resolves inside the installed system.
    assert!(root.join("etc/systemd/system/multi-user.target.wants/rackboot-agent.service").symlink_metadata().is_ok());
    assert_eq!(a.get(&format!("/machines/{mac}")).await["state"], "installed");
    let script = crate::common::http_get(([127, 0, 0, 1], a.port).into(), &format!("/boot/ipxe?mac={mac}")).await;
    assert!(script.contains("sanboot") || script.contains("exit"), "an installed machine boots its disk:\n{script}");

    // The node "reboots": BootOS is gone, the appliance restarts meanwhile.
    bootos.abort();
    a.stop().await;
    a.boot().await;
    // The installed system's agent starts from what the identity step left in its root.
    let state = root.join("var/lib/rackboot-agent");
    assert!(state.join("session.json").exists(), "the identity step handed the credential on");
    let installed = a.agent_with(mac, work.path(), AgentMode::Installed, Some(&state));
    let run = run_where(&a, task, 30, "installed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "installed", "{run}");
    assert_eq!(run["progress"], 100);
    assert_eq!(std::fs::read_to_string(work.path().join("disk.img.post")).unwrap(), "post-install on node-01\n");
    let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap();
    crate::common::eventually(|| async {
        let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await?;
        anyhow::ensure!(t["task"]["state"] == "done", "task {}", t["task"]["state"]);
        Ok(())
    })
    .await;
    assert_eq!(t["runs"][0]["machine_id"], a.get(&format!("/machines/{mac}")).await["id"]);
    let agent = a.get(&format!("/machines/{mac}/agent")).await;
    assert_eq!(agent["mode"], "installed");

    let ev = a.get(&format!("/machines/{mac}/events")).await;
    let steps: Vec<String> = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "provision.step" && e["detail"]["job"].is_u64())
        .map(|e| e["detail"]["step"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(steps, ["configure[0]", "install", "identity", "reboot", "post_install[0]"], "{ev}");
    installed.abort();
}

#[tokio::test]
async fn a_bad_image_checksum_fails_the_run_and_bad_tasks_are_refused() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![7u8; 100_000]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:b0:00:02";
    let agent = a.agent(mac, work.path());
    let disk = work.path().join("disk.img");
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "image_sha256": "0".repeat(64), "disk": disk, "retries": 1});
    let task = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();
    let run = run_where(&a, task, 30, "failed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "failed");
    assert!(run["error"].as_str().unwrap().contains("sha256 mismatch"), "{run}");
    assert_eq!(a.get(&format!("/machines/{mac}")).await["state"], "failed");

    for (spec, want) in [
        (json!({"select": {"next": 1}, "image": "../etc/passwd"}), 400),
        (json!({"select": {"next": 1}, "image": "missing.img"}), 400),
        (json!({"select": {"next": 1}, "image": "lab.img", "hardware_profile": "nope"}), 400),
        (json!({"select": {"next": 1}, "image": "lab.img", "post_install": ["nope.sh"]}), 400),
        (json!({"select": {"next": 2}, "image": "lab.img", "hostname_pattern": "same"}), 400),
        (json!({"select": {"tag": "none"}, "image": "lab.img"}), 404),
        (json!({"select": {"macs": [mac]}, "image": "lab.img", "bogus": 1}), 400),
        // Root-device hints that no disk could meet, or that fight `disk`.
        (json!({"select": {"next": 1}, "image": "lab.img", "root_device": {}}), 400),
        (
            json!({"select": {"next": 1}, "image": "lab.img", "root_device": {"min_size_gib": 9, "max_size_gib": 1}}),
            400,
        ),
        (json!({"select": {"next": 1}, "image": "lab.img", "disk": "/dev/sda", "root_device": {"serial": "S1"}}), 400),
        (json!({"select": {"next": 1}, "image": "lab.img", "root_device": {"size": 4}}), 400),
        // Layouts that cannot be laid down, or on an installer.
        (json!({"select": {"next": 1}, "image": "lab.img", "layout": {"mirror": {}}}), 400),
        (
            json!({"select": {"next": 1}, "image": "lab.img",
                   "layout": {"filesystems": [{"mount": "/srv", "fstype": "ext4", "size_mib": 64}]}}),
            400,
        ),
        (
            json!({"select": {"next": 1}, "image": "lab.img",
                   "layout": {"lvm": true, "filesystems": [{"mount": "/srv;reboot", "fstype": "ext4", "size_mib": 64}]}}),
            400,
        ),
        (json!({"select": {"next": 1}, "installer": "nope", "layout": {"lvm": true}}), 400),
    ] {
        let (status, body) = a.api.call(Method::POST, "/tasks", Some(spec.clone())).await.unwrap();
        assert_eq!(status, want, "{spec} -> {body}");
        if spec.get("layout").is_some() && spec.get("image").is_some() {
            assert_eq!(body["field"], "layout", "{spec} -> {body}");
        }
    }
    assert_eq!(
        a.api.ok(Method::GET, "/tasks", None).await.unwrap()["tasks"].as_array().unwrap().len(),
        1,
        "nothing stored"
    );
    agent.abort();
}

/// A layout's mirror hints that pick the root disk itself (or nothing) fail the run the same
/// way, before anything is written.
#[tokio::test]
async fn a_mirror_that_is_the_root_disk_fails_the_run_before_anything_is_written() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![3u8; 100_000]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:b0:00:0e";
    let agent = a.agent(mac, work.path());
    let deadline = Instant::now() + Duration::from_secs(20);
    let m = loop {
        let (status, m) = a.api.call(Method::GET, &format!("/machines/{mac}"), None).await.unwrap();
        if status == 200 && m["inventory"]["disks"].as_array().is_some_and(|d| !d.is_empty()) {
            break m;
        }
        assert!(Instant::now() < deadline, "no disk in the inventory: {m}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let root = m["inventory"]["disks"][0]["name"].as_str().unwrap().to_string();
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "hardware_profile": "lab", "retries": 0,
        "root_device": {"name": root}, "layout": {"mirror": {"name": root}, "lvm": true}});
    let task = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();
    let run = run_where(&a, task, 30, "failed", |r| r["state"] != "active").await;
    assert!(run["error"].as_str().unwrap().contains("the root disk itself"), "{run}");
    let jobs = a.api.ok(Method::GET, &format!("/jobs?machine={mac}"), None).await.unwrap();
    assert!(jobs["jobs"].as_array().is_none_or(|j| j.is_empty()), "{jobs}");
    agent.abort();
}

/// Hints no disk of the inventory meets fail the run at its first step, naming the hints and the
/// disks there are, before anything is written.
#[tokio::test]
async fn root_device_hints_that_match_no_disk_fail_the_run_before_anything_is_written() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![3u8; 100_000]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let mac = "52:54:00:b0:00:0a";
    let agent = a.agent(mac, work.path());
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "hardware_profile": "lab",
        "root_device": {"serial": "NO-SUCH-SERIAL", "min_size_gib": 1}, "retries": 0});
    let created = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();
    assert_eq!(created["task"]["spec"]["root_device"]["serial"], "NO-SUCH-SERIAL", "stored as given");
    let task = created["task"]["id"].as_u64().unwrap();
    let run = run_where(&a, task, 30, "failed", |r| r["state"] != "active").await;
    assert_eq!(run["state"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(error.contains("no disk matches the root-device hints"), "{run}");
    assert!(error.contains("serial=NO-SUCH-SERIAL"), "{run}");
    // The hardware profile's script never ran: the disk is chosen before the first step's job.
    let jobs = a.api.ok(Method::GET, &format!("/jobs?machine={mac}"), None).await.unwrap();
    assert!(jobs["jobs"].as_array().is_none_or(|j| j.is_empty()), "{jobs}");
    agent.abort();
}

#[tokio::test]
async fn next_n_binds_distinct_machines_concurrency_holds_and_cancel_stops_a_task() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![1u8; 200_000]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let disk = work.path().join("disk.img");
    let agents: Vec<_> = ["52:54:00:b0:00:03", "52:54:00:b0:00:04"].iter().map(|m| a.agent(m, work.path())).collect();
    for m in ["52:54:00:b0:00:03", "52:54:00:b0:00:04"] {
        crate::common::eventually(|| async {
            let v = a.api.ok(Method::GET, &format!("/machines/{m}"), None).await?;
            anyhow::ensure!(v["state"] == "ready", "not ready yet");
            Ok(())
        })
        .await;
    }
    let spec =
        json!({"select": {"next": 2}, "image": "lab.img", "disk": disk, "concurrency": 1, "hostname_pattern": "n{n}"});
    let created = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();
    let task = created["task"]["id"].as_u64().unwrap();
    assert!(created["runs"].as_array().unwrap().iter().all(|r| r["machine_id"].is_null()), "bound when agents call in");

    // One run goes all the way to waiting for its installed agent; the other keeps waiting for
    // the slot (concurrency 1), bound to the other machine.
    let deadline = Instant::now() + Duration::from_secs(30);
    let runs = loop {
        let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap();
        let runs = t["runs"].as_array().unwrap().clone();
        if runs.iter().any(|r| r["step"]["step"] == "wait_installed") && runs.iter().all(|r| r["machine_id"].is_u64()) {
            break runs;
        }
        assert!(Instant::now() < deadline, "{runs:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_ne!(runs[0]["machine_id"], runs[1]["machine_id"], "two runs, two machines");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap();
    let steps: Vec<&str> = t["runs"].as_array().unwrap().iter().map(|r| r["step"]["step"].as_str().unwrap()).collect();
    assert_eq!(steps.iter().filter(|s| **s == "wait_agent").count(), 1, "the concurrency limit holds: {steps:?}");

    // A machine held by an active run cannot be put in another task.
    let busy =
        t["runs"].as_array().unwrap().iter().find(|r| r["step"]["step"] == "wait_agent").unwrap()["machine_id"].clone();
    let mac = a.get(&format!("/machines/{busy}")).await["macs"][0].as_str().unwrap().to_string();
    let (status, err) = a
        .api
        .call(Method::POST, "/tasks", Some(json!({"select": {"macs": [mac]}, "image": "lab.img", "disk": disk})))
        .await
        .unwrap();
    assert_eq!(status, 409, "{err}");

    let cancelled = a.api.ok(Method::POST, &format!("/tasks/{task}/cancel"), None).await.unwrap();
    assert_eq!(cancelled["task"]["state"], "cancelled");
    assert!(cancelled["runs"].as_array().unwrap().iter().all(|r| r["state"] == "cancelled"));
    assert_eq!(
        a.get(&format!("/machines/{busy}")).await["state"],
        "ready",
        "a machine not installed goes back to ready"
    );
    let (status, _) = a.api.call(Method::POST, &format!("/tasks/{task}/cancel"), None).await.unwrap();
    assert_eq!(status, 409);
    // Nothing moves after the cancel.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap();
    assert!(t["runs"].as_array().unwrap().iter().all(|r| r["state"] == "cancelled"));
    for h in agents {
        h.abort();
    }
}

#[tokio::test]
async fn a_gzip_image_is_inflated_onto_the_disk() {
    use std::io::Write;
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    let raw: Vec<u8> = (0..2_000_000u32).map(|i| (i / 7) as u8).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&raw).unwrap();
    std::fs::write(images.join("small.img.gz"), gz.finish().unwrap()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let disk = work.path().join("disk.img");
    let mac = "52:54:00:b0:00:0a";
    let agent = a.agent(mac, work.path());
    let spec = json!({"select": {"macs": [mac]}, "image": "small.img.gz", "disk": disk});
    let task = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();
    run_where(&a, task, 30, "wait_installed", |r| r["step"]["step"] == "wait_installed").await;
    assert_eq!(std::fs::read(&disk).unwrap(), raw, "the disk holds the inflated image");
    a.api.ok(Method::POST, &format!("/tasks/{task}/cancel"), None).await.unwrap();
    agent.abort();
}

#[tokio::test]
async fn reinstall_reboots_an_installed_node_into_bootos_and_installs_it_again() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("one.img"), vec![1u8; 300_000]).unwrap();
    std::fs::write(images.join("two.img"), vec![2u8; 300_000]).unwrap();
    let work = tempfile::tempdir().unwrap();
    let disk = work.path().join("disk.img");
    let mac = "52:54:00:b0:00:0c";
    let state = work.path().join("disk.img.root/var/lib/rackboot-agent");

    // First install, up to the installed agent's check-in.
    let bootos = a.agent(mac, work.path());
    let spec = json!({"select": {"macs": [mac]}, "image": "one.img", "disk": disk});
    let first = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();
    run_where(&a, first, 30, "wait_installed", |r| r["step"]["step"] == "wait_installed").await;
    bootos.abort();
    let installed = a.agent_with(mac, work.path(), AgentMode::Installed, Some(&state));
    assert_eq!(run_where(&a, first, 30, "installed", |r| r["state"] != "active").await["state"], "installed");

    // An installed machine is only taken with reinstall.
    let again = json!({"select": {"macs": [mac]}, "image": "two.img", "disk": disk});
    let (status, body) = a.api.call(Method::POST, "/tasks", Some(again.clone())).await.unwrap();
    assert_eq!(status, 409, "{body}");
    let mut again = again;
    again["reinstall"] = json!(true);
    let second = a.api.ok(Method::POST, "/tasks", Some(again)).await.unwrap()["task"]["id"].as_u64().unwrap();

    // The installed agent gets the reboot into BootOS; PXE serves discovery again.
    let run = run_where(&a, second, 30, "a reboot job", |r| r["job"].is_u64()).await;
    assert_eq!(run["step"]["step"], "wait_agent");
    reboot_job_succeeds(&a, &run["job"]).await;
    installed.abort();
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], a.port).into();
    let script = crate::common::http_get(addr, &format!("/boot/ipxe?mac={mac}")).await;
    assert!(script.contains("bootos/vmlinuz"), "a machine being reinstalled boots BootOS:\n{script}");
    // The run waits for a BootOS agent that enrolled after the reboot, then installs again.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let t = a.api.ok(Method::GET, &format!("/tasks/{second}"), None).await.unwrap();
    assert_eq!(t["runs"][0]["step"]["step"], "wait_agent", "the installed agent's old enrollment does not count");
    let bootos = a.agent(mac, work.path());
    run_where(&a, second, 30, "wait_installed", |r| r["step"]["step"] == "wait_installed").await;
    assert_eq!(std::fs::read(&disk).unwrap(), vec![2u8; 300_000], "the second image is on the disk");
    bootos.abort();
    let installed = a.agent_with(mac, work.path(), AgentMode::Installed, Some(&state));
    assert_eq!(run_where(&a, second, 30, "installed", |r| r["state"] != "active").await["state"], "installed");
    installed.abort();
}
