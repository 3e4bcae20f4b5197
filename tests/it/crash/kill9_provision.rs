//! kill -9 in the middle of provisioning: the appliance (the real binary) drives three machines
//! (real agents, the `rackboot-agent` library) through a task (hardware-profile script, image
//! deploy onto a file standing in for the disk, identity, reboot, the installed agent checking
//! in, post-install) while it is killed with SIGKILL every couple of seconds, and an operator
//! registers machines through the API meanwhile. Every run still ends installed (it resumes
//! where it was), no step got another job after one of its jobs succeeded (a recorded result
//! and the engine's decision on it survive together), every image is on its disk, and every
//! registration the API acknowledged is there.
//! On loopback, no root needed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::common::process::start;
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot_agent::run::{Agent, Options};
use rackboot_agent::tls::Trust;
use rackboot_agent::wire::AgentMode;
use serde_json::{json, Value};

const MACS: [&str; 3] = ["52:54:00:c9:00:01", "52:54:00:c9:00:02", "52:54:00:c9:00:03"];

fn agent(
    url: &str,
    ca: &[u8],
    mac: &str,
    work: &std::path::Path,
    state: Option<&std::path::Path>,
) -> tokio::task::JoinHandle<()> {
    let opts = Options {
        url: url.into(),
        trust: Trust::CaPem(ca.to_vec()),
        mode: if state.is_some() { AgentMode::Installed } else { AgentMode::Bootos },
        state_dir: state.map(std::path::Path::to_path_buf),
        boot_mac: Some(mac.into()),
        nonce: None,
        root: "/".into(),
        workdir: work.into(),
        macs: Some(vec![mac.into()]),
        lldp: false,
        machine_actions: false,
        ipmitool: "ipmitool".into(),
    };
    tokio::spawn(async move {
        let _ = Agent::new(opts).unwrap().run().await;
    })
}

/// The API answer, or `None` while the appliance is down.
async fn get(api: &ApiClient, path: &str) -> Option<Value> {
    api.call(Method::GET, path, None).await.ok().filter(|(s, _)| *s == 200).map(|(_, v)| v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_the_middle_of_provisioning_loses_no_step_and_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let post = dir.path().join("post");
    std::fs::create_dir_all(data.join("boot/images")).unwrap();
    std::fs::create_dir_all(&post).unwrap();
    std::fs::write(post.join("mark.sh"), "echo \"post-install on $RACKBOOT_HOSTNAME\" > \"$RACKBOOT_DISK.post\"\n")
        .unwrap();
    let image: Vec<u8> = (0..8_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(data.join("boot/images/lab.img"), &image).unwrap();
    let extra = format!(
        "[agent]\nenroll = \"approve\"\npoll_secs = 2\nlease_secs = 3\nstats_secs = 5\n{}",
        crate::common::provision::config(&post)
    );
    // DHCP replies go to a relay port this test holds (no DHCP here); the first start binds the
    // API on port 0, and restarts keep the port it got, since the agents keep their URL.
    let relay = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let text = crate::common::config_text(&data, relay.local_addr().unwrap().port(), &extra);
    let config = dir.path().join("rackboot.toml");
    std::fs::write(&config, &text).unwrap();

    let (mut app, mut api, at) = start(&config, &data).await;
    let https = at.https.port();
    let pinned = text.replace("[https]\nlisten = \"127.0.0.1:0\"", &format!("[https]\nlisten = \"127.0.0.1:{https}\""));
    std::fs::write(&config, pinned).unwrap();
    let (url, ca) = (format!("https://127.0.0.1:{https}"), std::fs::read(data.join("tls/ca.pem")).unwrap());
    let work = tempfile::tempdir().unwrap();
    let disks: Vec<_> = (0..MACS.len()).map(|i| work.path().join(format!("disk{i}.img"))).collect();
    // Each stands in for a disk, which has its size from the start: the agent stops a write at
    // the target's size, so an empty file that a killed deploy left half-written would look
    // like a disk smaller than the image on the retry.
    for disk in &disks {
        std::fs::File::create(disk).unwrap().set_len(image.len() as u64).unwrap();
    }
    // Each node has a work dir of its own (a script's session file is written there).
    let workdirs: Vec<_> = (0..MACS.len()).map(|i| work.path().join(format!("node{i}"))).collect();
    for w in &workdirs {
        std::fs::create_dir_all(w).unwrap();
    }
    let mut agents: Vec<_> = MACS.iter().zip(&workdirs).map(|(m, w)| Some(agent(&url, &ca, m, w, None))).collect();
    for mac in MACS {
        crate::common::eventually(|| async {
            let (s, body) = api.call(Method::POST, &format!("/machines/{mac}/approve"), None).await?;
            anyhow::ensure!(s == 200, "approve {mac}: {s} {body}");
            Ok(())
        })
        .await;
    }
    let mut task_ids = Vec::new();
    for (mac, disk) in MACS.iter().zip(&disks) {
        // Each kill may cut a download, a failure of its step; the kills come on a wall clock,
        // so a slower machine (PostgreSQL beside the VM tests) sees more of them cut: 3 retries
        // ran out once. What is asserted is that no step is lost or run again after it succeeded.
        let spec = json!({
            "select": {"macs": [mac]}, "image": "lab.img", "hardware_profile": "lab", "disk": disk,
            "hostname_pattern": format!("kill-{}", &mac[15..]), "post_install": ["mark.sh"], "retries": 10
        });
        task_ids.push(api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap());
    }

    // Kill every 0.3-1.2 s until every run is installed (or two minutes pass); meanwhile register
    // machines through the API and remember those acknowledged.
    let (mut kills, mut registered, mut n) = (0, Vec::new(), 0u32);
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut rebooted = vec![false; MACS.len()];
    loop {
        let until = Instant::now() + Duration::from_millis(300 + 300 * (kills % 4));
        while Instant::now() < until {
            n += 1;
            let mac = format!("52:54:00:ca:{:02x}:{:02x}", n >> 8, n & 0xff);
            if let Ok((201, _)) = api.call(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await {
                registered.push(mac);
            }
            // A run waiting for its reboot: the node boots its disk, where the installed agent
            // starts from what the identity step left.
            for (i, task) in task_ids.iter().enumerate() {
                let Some(t) = get(&api, &format!("/tasks/{task}")).await else { continue };
                if !rebooted[i] && t["runs"][0]["step"]["step"] == "wait_installed" {
                    agents[i].take().unwrap().abort();
                    let state = work.path().join(format!("disk{i}.img.root/var/lib/rackboot-agent"));
                    agents[i] = Some(agent(&url, &ca, MACS[i], &workdirs[i], Some(&state)));
                    rebooted[i] = true;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut states = Vec::new();
        for task in &task_ids {
            states.push(get(&api, &format!("/tasks/{task}")).await.map(|t| t["runs"][0].clone()));
        }
        if states.iter().all(|s| s.as_ref().is_some_and(|s| s["state"] != "active")) {
            break;
        }
        if Instant::now() > deadline {
            for mac in MACS {
                let events = get(&api, &format!("/machines/{mac}/events?limit=1000")).await;
                let jobs = get(&api, &format!("/jobs?machine={mac}&limit=100")).await;
                eprintln!("{mac}:\n  events: {events:?}\n  jobs: {jobs:?}");
            }
            panic!("runs did not finish across {kills} kills: {states:?}");
        }
        drop(app); // SIGKILL, wherever provisioning is
        kills += 1;
        (app, api, _) = start(&config, &data).await;
    }

    let mut report = BTreeMap::new();
    for ((mac, task), disk) in MACS.iter().zip(&task_ids).zip(&disks) {
        let run = get(&api, &format!("/tasks/{task}")).await.unwrap()["runs"][0].clone();
        assert_eq!(run["state"], "installed", "{mac}: {run}");
        assert_eq!(std::fs::read(disk).unwrap(), image, "{mac}: the image is on its disk");
        let post = std::fs::read_to_string(format!("{}.post", disk.display())).unwrap();
        assert_eq!(post, format!("post-install on kill-{}\n", &mac[15..]));
        let events = get(&api, &format!("/machines/{mac}/events?limit=1000")).await.unwrap();
        let mut jobs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for e in events["events"].as_array().unwrap() {
            if let (Some(step), Some(job)) = (e["detail"]["step"].as_str(), e["detail"]["job"].as_u64()) {
                if e["kind"] == "provision.step" {
                    jobs.entry(step.to_string()).or_default().push(job);
                }
            }
        }
        let steps: Vec<&String> = jobs.keys().collect();
        assert_eq!(steps, ["configure[0]", "identity", "install", "post_install[0]", "reboot"], "{mac}: {events}");
        // A step may run again after a job that failed (its download cut by the kill) but never
        // after one that succeeded: that would be an acknowledged result lost.
        for (step, ids) in &jobs {
            let mut succeeded = 0;
            for id in ids {
                let job = get(&api, &format!("/jobs/{id}")).await.unwrap();
                succeeded += usize::from(job["state"] == "succeeded");
            }
            assert_eq!(succeeded, 1, "{mac}: step {step} ran jobs {ids:?}, {succeeded} succeeded");
        }
        report.insert(*mac, jobs.len());
    }
    let mut lost = Vec::new();
    for mac in &registered {
        if get(&api, &format!("/machines/{mac}")).await.is_none() {
            lost.push(mac.clone());
        }
    }
    println!(
        "{kills} kills during provisioning: {} runs installed, no step run again after it succeeded; {} registrations acknowledged, {} lost",
        report.len(),
        registered.len(),
        lost.len()
    );
    assert!(kills >= 3, "the appliance was killed often enough to mean something ({kills})");
    assert!(lost.is_empty(), "acknowledged registrations lost after kill -9: {lost:?}");
    for a in agents.into_iter().flatten() {
        a.abort();
    }
}
