//! Virtual-media boot end to end: an OVMF libvirt domain behind sushy-emulator's libvirt driver
//! on a segment where no DHCP server answers (rackboot's DHCP is off). A task powers it up
//! through Redfish: rackboot makes the BootOS ISO with the machine's static address (its
//! network spec) and a one-time nonce, sushy fetches it from rackboot over HTTPS with the
//! credentials it was given and attaches it as the domain's CD, and the domain boots it once.
//! BootOS comes up at that address and enrolls with the nonce; the CD is ejected. The image is
//! written; at the reboot step the OS powers off and the BMC starts the disk once. The installed
//! system checks in from its static address: `installed`. Needs root, libvirt, sushy-tools,
//! qemu, OVMF, grub-mkrescue, xorriso, mtools and a Debian mirror (the lab image):
//! `#[ignore]`d like the other end-to-end tests; CI runs it.

use std::time::{Duration, Instant};

use crate::netns::libvirt::{self, Libvirt};
use crate::netns::{require, vm_lab, Net};

const MAC: &str = "52:54:00:e7:00:01";
const ADDRESS: &str = "198.18.0.80";

#[test]
#[ignore = "e2e: needs root, libvirt, sushy-emulator, qemu, OVMF, grub-mkrescue and a Debian mirror"]
fn a_machine_without_dhcp_boots_bootos_from_virtual_media_and_is_installed() {
    require(&["ip", "curl", "qemu-system-x86_64", "grub-mkrescue", "xorriso", "mformat"]);
    if let Some(what) = libvirt::missing() {
        eprintln!("SKIPPED: no {what}: virtual media needs sushy-emulator's libvirt driver");
        return;
    }
    let mut net = Net::new("vv");
    let data = net.path("data");
    let boot = data.join("boot");
    vm_lab("assets.sh", &boot);
    let image = crate::netns::lab_image(&boot.join("images"));
    let config = format!(
        "[server]\ndata_dir = \"{}\"\ninterface = \"br0\"\n[http]\nlisten = \"198.18.0.1:8080\"\n[dhcp]\nmode = \"off\"\n\
         [tftp]\nroot = \"{}\"\n[dns]\ndomain = \"lab.rackboot.test\"\n[bmc]\nsoft_off_timeout_secs = 20\n\
         [provision]\n[[provision.networks]]\nname = \"lab\"\ncidr = \"198.18.0.0/24\"\n{}",
        data.display(),
        boot.display(),
        crate::netns::lab_discovery()
    );
    net.start_rackboot(&config);
    let lab = Libvirt::up(&net);
    lab.vm("vm", MAC, None, true, &[2 << 30]);
    let fingerprint = lab.bmcs();
    net.api("POST", "/machines", Some(&format!(r#"{{"macs":["{MAC}"]}}"#)));
    let spec = format!(r#"{{"ethernets":[{{"name":"nic0","mac":"{MAC}","network":"lab","address":"{ADDRESS}"}}]}}"#);
    net.api("PUT", &format!("/machines/{MAC}/network"), Some(&spec));
    let bmc = format!(
        r#"{{"address":"{}:8000","protocol":"redfish","username":"admin","password":"{}","fingerprint":"{fingerprint}","system_id":"{}","boot_via":"virtual-media"}}"#,
        lab.addr,
        lab.password(),
        lab.uuid("vm")
    );
    let v = net.api("PUT", &format!("/machines/{MAC}/bmc"), Some(&bmc));
    assert_eq!(v["boot_via"], "virtual-media", "{v}");
    let task = net.api(
        "POST",
        "/tasks",
        Some(&format!(r#"{{"select":{{"macs":["{MAC}"]}},"image":"{image}","hostname_pattern":"edge-{{n:02}}","step_timeout_secs":600}}"#)),
    );
    let task_id = task["task"]["id"].as_u64().unwrap();
    let started = Instant::now();

    let deadline = started + Duration::from_secs(900);
    let run = loop {
        let run = net.api("GET", &format!("/tasks/{task_id}"), None)["runs"][0].clone();
        if run["state"] != "active" {
            break run;
        }
        assert!(Instant::now() < deadline, "not installed in 900 s: {run}\n{}", net.log("libvirt/vm.serial"));
        std::thread::sleep(Duration::from_secs(2));
    };
    let ev = net.api("GET", &format!("/machines/{MAC}/events?limit=1000"), None);
    let events = ev["events"].as_array().unwrap().clone();
    let t0 = events.first().and_then(|e| e["at_ms"].as_i64()).unwrap_or_default();
    for e in &events {
        let kind = e["kind"].as_str().unwrap_or_default();
        if kind.starts_with("bmc.")
            || kind.starts_with("power.")
            || kind.starts_with("agent.enrolled")
            || kind.starts_with("provision.")
        {
            let at = (e["at_ms"].as_i64().unwrap_or_default() - t0) as f64 / 1000.0;
            println!("{at:7.1}s {kind} {}", e["detail"]);
        }
    }
    let serial =
        String::from_utf8_lossy(&std::fs::read(net.path("libvirt/vm.serial")).unwrap_or_default()).into_owned();
    assert_eq!(run["state"], "installed", "{run}\n{serial}");
    println!("virtual media to installed: {} s", started.elapsed().as_secs());

    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    let at = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or_else(|| panic!("no {k}: {kinds:?}"));
    assert!(at("bmc.vmedia_inserted") < at("agent.enrolled"), "{kinds:?}");
    let enrolled = events.iter().find(|e| e["kind"] == "agent.enrolled").unwrap();
    assert_eq!(enrolled["detail"]["nonce"], "valid", "BootOS enrolled with the ISO's nonce: {enrolled}");
    assert_eq!(enrolled["detail"]["from"], ADDRESS, "at its static address, no DHCP: {enrolled}");
    let ejected = events.iter().find(|e| e["kind"] == "bmc.vmedia_ejected").expect("the CD ejected");
    assert_eq!(ejected["detail"]["why"], "enrolled", "{ejected}");
    assert!(ejected["detail"]["error"].is_null(), "{ejected}");
    assert!(ejected["detail"]["fetches"].as_u64().unwrap() >= 1, "sushy fetched the ISO: {ejected}");
    // The installed system came up from its disk at its static address.
    let installed = events.iter().rev().find(|e| e["kind"] == "agent.enrolled").unwrap();
    assert_eq!(
        (installed["detail"]["mode"].as_str(), installed["detail"]["from"].as_str()),
        (Some("installed"), Some(ADDRESS))
    );
    // sushy says the CD is empty.
    let pw = net.path("libvirt/bmc.password");
    let cd = net.run(
        &net.srv,
        &format!(
            "curl -sk -u admin:$(cat {}) https://{}:8000/redfish/v1/Systems/{}/VirtualMedia/Cd",
            pw.display(),
            lab.addr,
            lab.uuid("vm")
        ),
    );
    let cd: serde_json::Value = serde_json::from_slice(&cd.stdout).unwrap_or_default();
    assert_eq!(cd["Inserted"], false, "{cd}");
    // Nobody leased anything: DHCP is off on this segment.
    let leases = net.api("GET", "/leases", None);
    assert!(leases.to_string().find(MAC).is_none(), "{leases}");
}
