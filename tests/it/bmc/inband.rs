//! In-band BMC accounts, the appliance's side, with a node speaking the agent protocol by hand:
//! a BootOS inventory that found a BMC on a machine with none on record queues one
//! `bmc_account` job (not two); the account report is taken only from the machine whose job it
//! is, while the job runs, for the account the job asked for, within bounds; taken, the
//! password is sealed and the machine's BMC is that account (`bmc.inband`), shown nowhere; an
//! operator asks for a new password through the same job; a job cannot be submitted by hand.
//! And the agent's side: its job runs the real ipmitool against OpenIPMI's `ipmi_sim` (over the
//! simulator's LAN instead of `/dev/ipmi0`, which no lab VM has: the lab's BootOS kernel has no
//! IPMI driver), sets the user up, and a rotation reuses its slot.

use hyper::Method;
use rackboot_agent::wire::{Bmc, Inventory};
use serde_json::{json, Value};

use crate::common::appliance::Appliance;

const MAC: &str = "52:54:00:ee:00:31";
const OTHER: &str = "52:54:00:ee:00:32";
const PASSWORD: &str = "Zq7Rk2Lm9Wx4Tb6N";

async fn call(a: &Appliance, method: &str, path: &str, credential: Option<&str>, body: &str) -> (u16, Value) {
    let auth = credential.map(|c| format!("Bearer {c}"));
    let mut headers = vec![("content-type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("authorization", auth.as_str()));
    }
    let (status, text) = crate::raw::raw(a, method, path, &headers, body).await;
    (status, serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap_or_default()).unwrap_or(Value::Null))
}

async fn enroll(a: &Appliance, mac: &str) -> String {
    let body = json!({"macs": [mac], "mode": "bootos", "version": "test", "nonce": a.boot_nonce(mac).await});
    let (status, v) = call(a, "POST", "/agent/v1/enroll", None, &body.to_string()).await;
    assert_eq!(status, 200, "{v}");
    v["credential"].as_str().unwrap().to_string()
}

async fn account_jobs(a: &Appliance, mac: &str) -> Vec<Value> {
    let v = a.get(&format!("/jobs?machine={mac}&limit=100")).await;
    v["jobs"].as_array().unwrap().iter().filter(|j| j["action"]["kind"] == "bmc_account").cloned().collect()
}

fn report(username: &str, password: &str, address: &str) -> String {
    json!({"user_id": 3, "username": username, "password": password, "channel": 1, "address": address,
        "mac": "52:54:00:ee:00:77"})
    .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_in_band_account_is_taken_only_from_its_job_and_its_password_is_never_shown() {
    let a =
        Appliance::start("[bmc]\ninband_accounts = true\ninband_networks = [\"198.18.0.0/24\"]\nrefresh_interval_secs = 0\nrequest_timeout_secs = 1\n").await;
    let cred = enroll(&a, MAC).await;
    let other = enroll(&a, OTHER).await;

    // A BootOS inventory that found a BMC in band: one job, whatever the node sends again.
    let found = Bmc { ip: Some("198.18.0.5".into()), mac: Some("52:54:00:ee:00:77".into()) };
    let inventory = serde_json::to_string(&Inventory { bmc: Some(found), ..Default::default() }).unwrap();
    for _ in 0..2 {
        let (status, v) = call(&a, "PUT", "/agent/v1/inventory", Some(&cred), &inventory).await;
        assert_eq!(status, 204, "{v}");
    }
    let jobs = account_jobs(&a, MAC).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(
        (jobs[0]["action"]["username"].as_str(), jobs[0]["action"]["channel"].as_u64()),
        (Some("rackboot"), Some(1))
    );
    assert_eq!(jobs[0]["max_attempts"], 1, "delivered once: a second delivery would make another password");
    let job = jobs[0]["id"].as_u64().unwrap();
    let path = format!("/agent/v1/jobs/{job}/bmc-account");
    // An inventory without a BMC queues nothing.
    let none = serde_json::to_string(&Inventory::default()).unwrap();
    assert_eq!(call(&a, "PUT", "/agent/v1/inventory", Some(&other), &none).await.0, 204);
    assert!(account_jobs(&a, OTHER).await.is_empty());

    // Not running yet: refused.
    let (status, v) = call(&a, "POST", &path, Some(&cred), &report("rackboot", PASSWORD, "198.18.0.5")).await;
    assert_eq!(status, 409, "{v}");
    let (status, v) = call(&a, "GET", "/agent/v1/jobs/next?wait=1", Some(&cred), "").await;
    assert_eq!((status, v["id"].as_u64()), (200, Some(job)), "{v}");
    // Another machine's agent, another account, bad values: refused, nothing stored.
    let (status, _) = call(&a, "POST", &path, Some(&other), &report("rackboot", PASSWORD, "198.18.0.5")).await;
    assert_eq!(status, 404, "another machine's job does not exist for it");
    // A neighbour's BMC, on record: a node cannot point its own record at it.
    let neighbour = a.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:e9:00:09"]}))).await.unwrap();
    let theirs =
        json!({"address": "198.18.0.9", "protocol": "ipmi", "username": "root", "password": "Neighbour-Bmc-1"});
    a.api.ok(Method::PUT, &format!("/machines/{}/bmc", neighbour["id"]), Some(theirs)).await.unwrap();
    for (body, why) in [
        (report("admin", PASSWORD, "198.18.0.5"), "did not ask for this account"),
        (report("rackboot", "short", "198.18.0.5"), "8 to 20"),
        (report("rackboot", PASSWORD, "127.0.0.1"), "cannot be"),
        (report("rackboot", PASSWORD, "bmc.example"), "not an IP address"),
        (report("rackboot", PASSWORD, "10.9.9.9"), "outside bmc.inband_networks"),
        (report("rackboot", PASSWORD, "198.18.0.9"), "BMC"),
    ] {
        let (status, v) = call(&a, "POST", &path, Some(&cred), &body).await;
        assert_eq!(status, 409, "{body}: {v}");
        assert!(v.to_string().contains(why), "{body}: {v}");
    }
    let (status, _) = call(&a, "POST", &path, Some(&cred), "{\"user_id\": 3}").await;
    assert_eq!(status, 400);
    assert_eq!(
        a.api.call(Method::GET, &format!("/machines/{MAC}/bmc"), None).await.unwrap().0,
        404,
        "nothing stored yet"
    );

    // The job's own report: the machine's BMC is that account, sealed.
    let (status, v) = call(&a, "POST", &path, Some(&cred), &report("rackboot", PASSWORD, "198.18.0.5")).await;
    assert_eq!(status, 204, "{v}");
    let bmc = a.get(&format!("/machines/{MAC}/bmc")).await;
    assert_eq!(
        (bmc["protocol"].as_str(), bmc["address"].as_str(), bmc["username"].as_str()),
        (Some("ipmi"), Some("198.18.0.5"), Some("rackboot"))
    );
    assert_eq!(
        (bmc["password_set"].as_bool(), bmc["inband"]["user_id"].as_u64(), bmc["inband"]["job"].as_u64()),
        (Some(true), Some(3), Some(job))
    );
    let events = a.get(&format!("/machines/{MAC}/events?limit=1000")).await;
    let inband: Vec<&Value> =
        events["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "bmc.inband").collect();
    assert_eq!(inband.len(), 1, "{events}");
    assert_eq!(
        (inband[0]["detail"]["rotated"].as_bool(), inband[0]["detail"]["channel"].as_u64()),
        (Some(false), Some(1))
    );
    // The password is nowhere to be read: not the BMC view, the timeline, the jobs, the audit log.
    for path in [
        format!("/machines/{MAC}/bmc"),
        format!("/machines/{MAC}/events?limit=1000"),
        format!("/jobs?machine={MAC}"),
        "/audit?limit=1000".into(),
        format!("/machines/{MAC}"),
    ] {
        let text = a.get(&path).await.to_string();
        assert!(!text.contains(PASSWORD), "{path} shows the password");
    }

    // Ended, the job takes no more reports.
    let result = json!({"attempt": 1, "outcome": "succeeded", "duration_ms": 5}).to_string();
    call(&a, "POST", &format!("/agent/v1/jobs/{job}/result"), Some(&cred), &result).await;
    let (status, _) = call(&a, "POST", &path, Some(&cred), &report("rackboot", "Another-Pass-123", "198.18.0.5")).await;
    assert_eq!(status, 409);

    // A new password: an operator asks, the same job runs; a hand-made job is refused.
    let r = a.api.ok(Method::POST, &format!("/machines/{MAC}/bmc/inband"), None).await.unwrap();
    assert_eq!(r["action"]["kind"], "bmc_account", "{r}");
    let by_hand = json!({"machine": MAC, "action": {"kind": "bmc_account", "username": "admin", "channel": 1}});
    let e = a.api.ok(Method::POST, "/jobs", Some(by_hand)).await.unwrap_err().to_string();
    assert!(e.contains("/bmc/inband"), "{e}");
    let (status, v) = call(&a, "GET", "/agent/v1/jobs/next?wait=1", Some(&cred), "").await;
    assert_eq!(status, 200, "{v}");
    let rotate = format!("/agent/v1/jobs/{}/bmc-account", v["id"]);
    let (status, _) =
        call(&a, "POST", &rotate, Some(&cred), &report("rackboot", "Another-Pass-123", "198.18.0.5")).await;
    assert_eq!(status, 204);
    let events = a.get(&format!("/machines/{MAC}/events?limit=1000")).await;
    let last = events["events"].as_array().unwrap().iter().rev().find(|e| e["kind"] == "bmc.inband").unwrap().clone();
    assert_eq!(last["detail"]["rotated"], true, "{last}");
}

/// OpenIPMI's `ipmi_sim` on a loopback UDP port, killed on drop.
struct Sim {
    child: std::process::Child,
    dir: tempfile::TempDir,
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sim {
    fn start() -> Option<Sim> {
        if !std::path::Path::new("/usr/bin/ipmi_sim").exists() || !std::path::Path::new("/usr/bin/ipmitool").exists() {
            return None;
        }
        let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let lan = d.join("lancfg.sh");
        std::fs::write(&lan, "#!/bin/sh\n[ \"$1\" = get ] || exit 0\nshift\nfor p in \"$@\"; do\n  case $p in\n    ip_addr_src) echo ip_addr_src:static ;;\n    ip_addr) echo ip_addr:198.18.0.5 ;;\n    mac_addr) echo mac_addr:52:54:00:ee:00:77 ;;\n    subnet_mask) echo subnet_mask:255.255.255.0 ;;\n    *_ip_addr) echo $p:0.0.0.0 ;;\n    *_mac_addr) echo $p:00:00:00:00:00:00 ;;\n    *) exit 1 ;;\n  esac\ndone\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&lan, std::fs::Permissions::from_mode(0o755)).unwrap();
        let auths = "none md2 md5 straight";
        std::fs::write(
            d.join("lan.conf"),
            format!("name \"rbtest\"\nset_working_mc 0x20\n  startlan 1\n    addr 127.0.0.1 {port}\n    priv_limit admin\n    allowed_auths_callback {auths}\n    allowed_auths_user {auths}\n    allowed_auths_operator {auths}\n    allowed_auths_admin {auths}\n    guid a123456789abcdefa123456789abcdef\n    lan_config_program \"{}\"\n  endlan\n  user 1 true \"\" \"\" user 10 {auths}\n  user 2 true \"admin\" \"Sim-Admin-5\" admin 10 {auths}\n", lan.display()),
        )
        .unwrap();
        std::fs::write(
            d.join("sim.emu"),
            "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nmc_enable 0x20\n",
        )
        .unwrap();
        std::fs::write(d.join("admin.pw"), "Sim-Admin-5").unwrap();
        std::fs::create_dir_all(d.join("state")).unwrap();
        // What the agent runs as its ipmitool: the same commands, over the simulator's LAN
        // rather than /dev/ipmi0.
        let wrapper = d.join("ipmitool");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nexec /usr/bin/ipmitool -I lanplus -C 3 -H 127.0.0.1 -p {port} -U admin -f {} \"$@\"\n",
                d.join("admin.pw").display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        let child = std::process::Command::new("/usr/bin/ipmi_sim")
            .args(["-c", &d.join("lan.conf").display().to_string(), "-f", &d.join("sim.emu").display().to_string()])
            .args(["-s", &d.join("state").display().to_string(), "-n"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let sim = Sim { child, dir };
        for _ in 0..50 {
            if sim.admin(&["mc", "info"]).contains("Device ID") {
                return Some(sim);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("ipmi_sim did not answer on port {port}");
    }

    fn admin(&self, args: &[&str]) -> String {
        let out = std::process::Command::new(self.dir.path().join("ipmitool")).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_sets_its_account_up_on_a_bmc_simulator_and_a_rotation_reuses_the_slot() {
    let Some(sim) = Sim::start() else {
        eprintln!("SKIPPED: no ipmi_sim or ipmitool (Debian's openipmi, ipmitool: tools/setup.sh)");
        return;
    };
    let a =
        Appliance::start("[bmc]\ninband_accounts = true\ninband_networks = [\"198.18.0.0/24\"]\nrefresh_interval_secs = 0\nrequest_timeout_secs = 1\n").await;
    let work = tempfile::tempdir().unwrap();
    let opts = rackboot_agent::run::Options {
        url: a.url(),
        trust: a.trust(),
        mode: rackboot_agent::wire::AgentMode::Bootos,
        state_dir: None,
        boot_mac: Some(MAC.into()),
        nonce: Some(a.boot_nonce(MAC).await),
        root: "/".into(),
        workdir: work.path().into(),
        macs: Some(vec![MAC.into()]),
        lldp: false,
        // The account job acts on "its machine's" BMC: here the simulator, over its LAN.
        machine_actions: true,
        ipmitool: sim.dir.path().join("ipmitool"),
    };
    let agent = tokio::spawn(async move {
        let _ = rackboot_agent::run::Agent::new(opts).unwrap().run().await;
    });
    let path = format!("/machines/{MAC}/agent");
    crate::common::eventually(|| async {
        match a.api.call(Method::GET, &path, None).await? {
            (200, v) => Ok(v),
            (s, v) => anyhow::bail!("{s}: {v}"),
        }
    })
    .await;

    let mut outputs = Vec::new();
    for round in 0..2 {
        let job = a.api.ok(Method::POST, &format!("/machines/{MAC}/bmc/inband"), None).await.unwrap();
        let id = job["id"].as_u64().unwrap();
        let done = a.job_in(id, "succeeded", 60).await;
        let out = a.get(&format!("/jobs/{id}/output")).await["text"].as_str().unwrap_or_default().to_string();
        println!("round {round}: {done}\n{out}");
        outputs.push(out);
    }
    agent.abort();
    assert!(outputs[0].contains("user 3 (new) on channel 1"), "{}", outputs[0]);
    assert!(outputs[1].contains("user 3 (reset) on channel 1"), "the rotation reuses the slot: {}", outputs[1]);
    assert!(outputs.iter().all(|o| o.contains("set up on 198.18.0.5, channel 1")), "{outputs:?}");
    // The simulator's own administrator sees it: named, enabled for IPMI, an administrator; and
    // is still there itself.
    let list = sim.admin(&["user", "list", "1"]);
    let row = list.lines().find(|l| l.split_whitespace().take(2).eq(["3", "rackboot"])).unwrap_or_default();
    assert!(row.contains("ADMINISTRATOR") && row.split_whitespace().filter(|w| *w == "true").count() >= 2, "{list}");
    assert!(list.lines().any(|l| l.split_whitespace().take(2).eq(["2", "admin"])), "{list}");
    let bmc = a.get(&format!("/machines/{MAC}/bmc")).await;
    assert_eq!((bmc["address"].as_str(), bmc["inband"]["user_id"].as_u64()), (Some("198.18.0.5"), Some(3)), "{bmc}");
    let events = a.get(&format!("/machines/{MAC}/events?limit=1000")).await;
    let rotated: Vec<bool> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "bmc.inband")
        .filter_map(|e| e["detail"]["rotated"].as_bool())
        .collect();
    assert_eq!(rotated, [false, true]);
}
