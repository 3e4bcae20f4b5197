//! An installer task end to end in vm-lab: the VM boots BootOS, which reboots it into Debian's
//! netboot installer, which follows the preseed rackboot renders for it up to its mirror.

use std::time::{Duration, Instant};

use crate::netns::{full_config, require, vm_lab, Net};

/// Debian's netboot installer (from the debian-installer-12-netboot-amd64 package), as a task's
/// installer: the VM boots BootOS, which reboots it into the installer PXE now serves; the
/// installer fetches this machine's preseed from rackboot and goes through it unattended up to
/// the mirror the preseed names (the appliance, which has no mirror: the lab has no route out,
/// so the install itself stops there). Prints the seconds from power-on to each of those.
#[test]
#[ignore = "e2e: needs root, ip netns, qemu and debian-installer-12-netboot-amd64"]
fn a_task_boots_the_debian_installer_which_follows_its_preseed_to_the_mirror() {
    require(&["ip", "curl", "qemu-system-x86_64"]);
    let di = std::path::Path::new("/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64");
    assert!(di.join("linux").exists(), "needs the debian-installer-12-netboot-amd64 package (tools/setup.sh)");
    let mut net = Net::new("di");
    let data = net.path("data");
    vm_lab("assets.sh", &data.join("boot"));
    std::fs::create_dir_all(data.join("boot/d-i")).unwrap();
    for f in ["linux", "initrd.gz"] {
        std::fs::copy(di.join(f), data.join("boot/d-i").join(f)).unwrap();
    }
    // A Release file where the preseed's mirror is, so its fetch shows on the timeline.
    let dists = data.join("boot/debian/dists/bookworm");
    std::fs::create_dir_all(&dists).unwrap();
    std::fs::write(dists.join("Release"), "Origin: Debian\nSuite: stable\nCodename: bookworm\nArchitectures: amd64\n")
        .unwrap();
    // `norandmaps`: the installer's processes under TCG, as the lab's BootOS (`lab_discovery`).
    let config = format!(
        "{}\n[provision]\npreseed_mirror = \"http://198.18.0.1:8080/boot/files/debian\"\n[boot]\n[[boot.profiles]]\nname = \"debian12\"\nkernel = \"d-i/linux\"\ninitrd = \"d-i/initrd.gz\"\nanswer = \"preseed\"\ncmdline = \"auto=true priority=critical url={{{{ answer_url }}}} console=ttyS0 DEBIAN_FRONTEND=text norandmaps\"\n",
        full_config(&data)
    );
    net.start_rackboot(&config);
    let mac = "52:54:00:e6:00:11";
    let task = net.api(
        "POST",
        "/tasks",
        Some(&format!(
            r#"{{"select":{{"macs":["{mac}"]}},"installer":"debian12","disk":"/dev/vda","hostname_pattern":"inst-{{n:02}}","step_timeout_secs":900}}"#
        )),
    );
    let task_id = task["task"]["id"].as_u64().unwrap();
    let srv = net.srv.clone();
    let powered_on = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    net.add_tap("tap-di");
    let mut args = net.qemu_args("di", mac, false, &[4 << 30], false);
    // 512 MiB puts the installer into its low-memory mode, which stops to say so.
    let m = args.iter().position(|a| a == "-m").unwrap();
    args[m + 1] = "1024".into();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    net.spawn(&srv, &args, "di.qemu.log");

    // (kind, what to match in the detail) -> seconds after power-on.
    let wanted = [
        ("agent.enrolled", ""),
        ("provision.step", "install"),
        ("boot.script", "debian12"),
        ("boot.answer", "preseed"),
        ("boot.asset", "debian/dists/bookworm/Release"),
    ];
    let deadline = Instant::now() + Duration::from_secs(360);
    let seen = loop {
        let ev = net.api("GET", &format!("/machines/{mac}/events?limit=1000"), None);
        let seen: Vec<Option<f64>> = wanted
            .iter()
            .map(|(kind, what)| {
                ev["events"].as_array().unwrap().iter().find_map(|e| {
                    (e["kind"] == *kind && e["detail"].to_string().contains(what))
                        .then(|| e["at_ms"].as_u64().unwrap().saturating_sub(powered_on) as f64 / 1000.0)
                })
            })
            .collect();
        if seen.iter().all(Option::is_some) {
            break seen;
        }
        if Instant::now() > deadline {
            let serial: Vec<char> = net.log("di.serial").chars().collect();
            let tail: String = serial[serial.len().saturating_sub(6000)..].iter().collect();
            panic!("the installer did not get to its mirror: {wanted:?} -> {seen:?}\n{ev}\n{tail}");
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    let line: Vec<String> =
        wanted.iter().zip(&seen).map(|((k, w), at)| format!("{k}({w}) {:.1}s", at.unwrap())).collect();
    eprintln!("debian-installer: {}", line.join(", "));
    // The run waits for the installer to report back; the machine boots the installer meanwhile.
    let t = net.api("GET", &format!("/tasks/{task_id}"), None);
    assert_eq!(
        (t["runs"][0]["step"]["step"].as_str(), t["runs"][0]["state"].as_str()),
        (Some("install"), Some("active"))
    );
    let m = net.api("GET", &format!("/machines/{mac}"), None);
    assert_eq!(
        (m["state"].as_str(), m["installer"]["profile"].as_str()),
        (Some("installing"), Some("debian12")),
        "{m}"
    );
}
