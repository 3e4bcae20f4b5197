//! What `provision` checks on each VM once it is `installed`: the hardware profile's RAID
//! script ran, the root-device hint found the disk by serial, the machine's name resolves through
//! rackboot's DNS to its reserved address, a job runs on the installed system (not in BootOS), the
//! disk layout is as declared (`layout`), and where the time of its boot went; and, on UEFI, that
//! the install's reboot went straight to the new disk.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::provision::job_output;
use crate::netns::Net;

/// Checks the installed VM `name` (`mac`), which must be named `host`; `srv` is the appliance's
/// namespace.
pub(super) fn check(net: &Net, srv: &str, host: &str, name: &str, mac: &str) {
    // The hardware profile's second script built a RAID 1 over the two small disks.
    let jobs = net.api("GET", &format!("/jobs?machine={mac}&limit=1000"), None);
    let raid = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["action"]["body"].as_str().is_some_and(|b| b.contains("mdadm --create /dev/md0")))
        .expect("the RAID script ran")["id"]
        .as_u64()
        .unwrap();
    let out = net.api("GET", &format!("/jobs/{raid}/output"), None)["text"].as_str().unwrap().to_string();
    assert!(out.contains("md0 : active raid1"), "{name}: {out}");
    let m = net.api("GET", &format!("/machines/{mac}"), None);
    // The root-device hint (vda's serial) found the disk: the inventory reports serials.
    let disks = m["inventory"]["disks"].as_array().unwrap();
    let serial_of = |disk: &str| disks.iter().find(|d| d["name"] == disk).map(|d| d["serial"].clone());
    assert_eq!(serial_of("vda"), Some("RBLAB-VDA".into()), "{name}: {disks:?}");
    assert_eq!(serial_of("vdc"), Some("RBLAB-VDC".into()), "{name}: {disks:?}");
    assert_eq!((m["state"].as_str(), m["hostname"].as_str()), (Some("installed"), Some(host)));
    let ip = m["reserved_ip"].as_str().unwrap().to_string();
    // The installed system's name resolves through rackboot's DNS.
    // (The UEFI VM's firmware also PXE-boots its second NIC, whose lease names it too while
    // it lasts.)
    let dig = net.run(srv, &format!("dig +short @198.18.0.1 {host}.lab.rackboot.test"));
    let answers = String::from_utf8_lossy(&dig.stdout).to_string();
    assert!(answers.lines().any(|a| a == ip), "{host}: {answers}");
    let agent = net.api("GET", &format!("/machines/{mac}/agent"), None);
    assert_eq!(agent["mode"], "installed");
    // A job on the installed system.
    let job = net.api(
        "POST",
        "/jobs",
        Some(&format!(
            r#"{{"machine":"{mac}","action":{{"kind":"script","body":"hostname; cat /etc/motd.rackboot; . /etc/os-release; echo $PRETTY_NAME; ip -4 -o addr show scope global"}}}}"#
        )),
    );
    let id = job["jobs"][0]["id"].as_u64().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let j = net.api("GET", &format!("/jobs/{id}"), None);
        if j["state"] != "queued" && j["state"] != "running" {
            break j;
        }
        assert!(Instant::now() < deadline, "job on {host} did not finish");
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(done["state"], "succeeded", "{done}");
    let text = net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap().to_string();
    assert!(text.starts_with(&format!("{host}\n")), "{text}");
    assert!(text.contains("Provisioned by rackboot") && text.contains("Debian GNU/Linux 12"), "{text}");
    assert!(text.contains(&format!("inet {ip}/")), "the installed system has its reserved address: {text}");
    // The job's answers (its own hostname, Debian 12, the motd post-install wrote) come from
    // the system on the disk, not from BootOS (whose hostname is "bootos", on a busybox root).
    super::layout::check(net, name, mac);
    // Where the time from its reboot to its agent went, once in its own system.
    let boot = job_output(
        net,
        mac,
        "systemd-analyze 2>&1 | head -2; systemd-analyze critical-chain rackboot-agent.service 2>&1 | tail -n +3; systemd-analyze blame 2>&1 | head -8; grep -m2 Up /var/log/cloud-init-output.log; cat /proc/mdstat; dmesg | grep -E 'md100|resync|recovery' | tail -5; true",
    );
    eprintln!("{name}: the installed system's boot:\n{boot}");
}

/// After an install on UEFI: the agent in BootOS set `BootNext` to the new disk's EFI system
/// partition before the reboot, so the firmware (network first) started the installed system at
/// once: no iPXE script was fetched between the reboot and the installed agent's enrollment.
/// `events` is the machine `name`'s timeline, `line` its summary for messages. `console`, the
/// firmware's console where the VM is a libvirt domain (whose NIC's boot order is 1, so only
/// `BootNext` takes it to the disk), must say it loaded that entry.
pub(super) fn booted_its_disk_next(net: &Net, name: &str, events: &[Value], line: &str, console: Option<String>) {
    let reboot = events
        .iter()
        .find(|e| e["kind"] == "provision.step" && e["detail"]["step"] == "reboot" && e["detail"]["job"].is_u64())
        .unwrap_or_else(|| panic!("{name}: no reboot step: {line}"));
    let out = net.api("GET", &format!("/jobs/{}/output", reboot["detail"]["job"]), None);
    let text = out["text"].as_str().unwrap_or_default();
    eprintln!("{name}: the reboot job: {text}");
    assert!(text.contains("reboot: BootNext = Boot"), "{text}");
    let from = reboot["at_ms"].as_u64().unwrap();
    let back = events
        .iter()
        .find(|e| e["kind"] == "agent.enrolled" && e["detail"]["mode"] == "installed")
        .and_then(|e| e["at_ms"].as_u64())
        .unwrap_or(u64::MAX);
    let scripts: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "boot.script")
        .filter(|e| (from..back).contains(&e["at_ms"].as_u64().unwrap_or_default()))
        .collect();
    assert!(scripts.is_empty(), "{name}: network boot after the reboot: {scripts:?}");
    if let Some(console) = console {
        let entry = text.split("BootNext = ").nth(1).and_then(|t| t.get(..8)).unwrap_or_default();
        assert!(console.contains(&format!("BdsDxe: loading {entry} ")), "{name}: {entry} not loaded:\n{console}");
    }
}
