//! The layout's encrypted file system on the provisioned VMs of `provision`: LUKS2 bound with
//! Clevis to the appliance's Tang server and to nothing else, mounted after boot. A key
//! rotation re-binds both machines through jobs and the older key is deleted; the SeaBIOS VM
//! then reboots with the appliance stopped: its console asks for the passphrase and nothing
//! unlocks the volume for the minute it is left so, and it unlocks unattended, with the new
//! key, once the appliance is back.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::provision::{job_output, job_output_within};
use crate::netns::{wait_for, Net};

/// The encrypted file system of [`super::layout::LAYOUT`].
pub(super) const MOUNT: &str = "/srv/secret";
const DEVICE: &str = "/dev/rackboot/srv_secret";
const MAPPED: &str = "crypt-srv_secret";

/// On an installed machine: the volume is LUKS2 with one key slot, Clevis's, bound to the Tang
/// URL, and its file system is mounted from the mapping.
pub(super) fn check_bound(net: &Net, name: &str, mac: &str) {
    let out = job_output_within(
        net,
        mac,
        &format!(
            "for i in $(seq 60); do findmnt -n {MOUNT} >/dev/null && break; sleep 1; done; \
             echo secret: $(findmnt -n -o SOURCE,FSTYPE {MOUNT}); cryptsetup luksDump {DEVICE}; clevis luks list -d {DEVICE}"
        ),
        180,
    );
    eprintln!("{name}: the encrypted file system:\n{out}");
    // What the layout step said while it made it, and the identity step after it.
    let jobs = net.api("GET", &format!("/jobs?machine={mac}&limit=1000"), None);
    for j in jobs["jobs"].as_array().unwrap() {
        if j["action"]["body"].as_str().is_some_and(|b| b.contains("rackboot layout step")) {
            let text = net.api("GET", &format!("/jobs/{}/output", j["id"]), None)["text"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let said: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("layout") || l.contains("crypt") || l.starts_with("identity: "))
                .collect();
            eprintln!("{name}: layout job {} ({}):\n{}", j["id"], j["state"], said.join("\n"));
        }
    }
    assert!(out.contains(&format!("secret: /dev/mapper/{MAPPED} ext4")), "{name}: {out}");
    assert!(out.contains("Version:       \t2") || out.contains("Version:"), "{name}: LUKS2: {out}");
    let slots = out
        .lines()
        .filter(|l| l.trim_start().split_once(": luks2").is_some_and(|(n, _)| n.trim().parse::<u32>().is_ok()))
        .count();
    assert_eq!(slots, 1, "{name}: one key slot (Clevis's), the make-key wiped: {out}");
    assert!(
        out.contains(": tang '{\"url\":\"http://198.18.0.1:8080/tang\"}'"),
        "{name}: bound to the appliance: {out}"
    );
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Rotation and re-bind, then the reboot with the appliance away. `rackboot`: the appliance's
/// process in `net`; `serial`: the SeaBIOS VM's console so far. Answers the appliance's process
/// running afterwards.
pub(super) fn check_rotation_and_absence(
    net: &mut Net,
    rackboot: usize,
    config: &str,
    macs: [&str; 2],
    serial: &dyn Fn() -> String,
) -> usize {
    let keys = net.api("GET", "/tang/keys", None);
    let old = keys["keys"][0]["id"].as_u64().unwrap();
    assert_eq!(keys["keys"][0]["bound_machines"], 2, "both machines are bound: {keys}");
    let rotated = net.api("POST", "/tang/rotate", None);
    let new = rotated["key"]["id"].as_u64().unwrap();
    assert_eq!(rotated["jobs"].as_array().unwrap().len(), 2, "a re-bind job per machine: {rotated}");
    // Both re-bound; the older key deleted once nobody is bound to it.
    wait_for(
        300,
        || format!("re-binds to key {new}: {}", net.api("GET", "/tang/bindings", None)),
        || {
            let keys = net.api("GET", "/tang/keys", None);
            let ids: Vec<u64> = keys["keys"].as_array().unwrap().iter().filter_map(|k| k["id"].as_u64()).collect();
            (ids == [new]).then_some(())
        },
    );
    let bindings = net.api("GET", "/tang/bindings", None);
    for b in bindings["bindings"].as_array().unwrap() {
        assert_eq!(b["key"], new, "{bindings}");
    }
    for mac in macs {
        let ev = net.api("GET", &format!("/machines/{mac}/events?limit=1000"), None);
        let rebound = ev["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "disk.rebound" && e["detail"]["from_key"] == old);
        assert!(rebound, "{mac}: no disk.rebound event: {ev}");
    }

    super::mark("disk crypt: both re-bound after the key rotation");
    // The SeaBIOS VM reboots; the appliance stops at once. Once the console asks for the
    // volume's passphrase, 20 s more with nobody answering (Clevis tried and failed by then).
    let mac = macs[0];
    let prompt = "Please enter passphrase for disk";
    // systemd's status line for the volume's setup, however it names the unit.
    let unlocked = |text: &str| text.lines().filter(|l| l.contains("Finished") && l.contains("srv_secret")).count();
    let before = (serial().matches(prompt).count(), unlocked(&serial()));
    job_output(net, mac, "(sleep 2; systemctl reboot) >/dev/null 2>&1 &");
    let stopped = now();
    net.stop(rackboot);
    let asked = Instant::now();
    while serial().matches(prompt).count() <= before.0 {
        let tail: String = serial().chars().rev().take(3000).collect::<Vec<_>>().into_iter().rev().collect();
        assert!(asked.elapsed() < Duration::from_secs(300), "no passphrase prompt on the console:\n{tail}");
        std::thread::sleep(Duration::from_secs(1));
    }
    eprintln!("bios: the console asks for {MAPPED}'s passphrase {:.0} s after the appliance stopped", now() - stopped);
    super::mark("disk crypt: the passphrase prompt");
    std::thread::sleep(Duration::from_secs(20));
    let console = serial();
    assert_eq!(unlocked(&console), before.1, "unlocked with the appliance away");
    let back = now();
    let rackboot = net.start_rackboot(config);
    let t0 = Instant::now();
    // Once its agent is back: when the volume was unlocked, in seconds since this boot.
    let out = job_output_within(
        net,
        mac,
        &format!(
            "for i in $(seq 120); do findmnt -n {MOUNT} >/dev/null && break; sleep 1; done; \
             read -r up rest < /proc/uptime; echo now: $(date +%s.%N) up: $up; \
             systemctl show -p ActiveEnterTimestampMonotonic \"systemd-cryptsetup@$(systemd-escape {MAPPED}).service\"; \
             findmnt -n -o SOURCE {MOUNT}"
        ),
        420,
    );
    super::mark("disk crypt: unlocked after the appliance came back");
    eprintln!(
        "bios: after a reboot with the appliance away {:.0} s (agent back {} s after it):\n{out}",
        back - stopped,
        t0.elapsed().as_secs()
    );
    let field = |key: &str| -> f64 {
        out.split_whitespace()
            .skip_while(|w| *w != key)
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {out}"))
    };
    let (vm_now, up) = (field("now:"), field("up:"));
    let unlocked_mono: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("ActiveEnterTimestampMonotonic="))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no unlock time: {out}"))
        / 1e6;
    assert!(out.contains(&format!("/dev/mapper/{MAPPED}")), "unlocked and mounted once the appliance is back: {out}");
    let booted = vm_now - up;
    let opened = booted + unlocked_mono;
    assert!(
        booted > stopped - 5.0,
        "the VM rebooted after the appliance stopped: booted {booted:.0}, stopped {stopped:.0}"
    );
    assert!(
        unlocked_mono > 0.0 && opened > back - 5.0,
        "unlocked at {opened:.0}, before the appliance was back at {back:.0}: {out}"
    );
    assert!(back - booted >= 20.0, "up at least 20 s without the appliance: booted {booted:.0}, back {back:.0}");
    eprintln!(
        "bios: booted {:.0} s after the stop, unlocked {:.0} s after boot ({:.0} s after the appliance was back)",
        booted - stopped,
        opened - booted,
        opened - back
    );
    rackboot
}
