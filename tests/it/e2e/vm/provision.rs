//! Provisioning end to end in vm-lab: a task each for two fresh VMs (one SeaBIOS, one OVMF).
//! Each PXE-boots BootOS (the OVMF VM's profile first sets two BIOS attributes through its
//! Redfish BMC, restarts it into BootOS and reads them back), runs the hardware profile's
//! script, gets the lab OS image (vm-lab/os-image.sh: Debian 12 with GRUB for BIOS and UEFI)
//! streamed onto the disk a root-device hint names (by serial, as BootOS's inventory reads it)
//! and checked, laid out as the task declares (RAID 1 with a second disk named by serial, LVM,
//! an XFS file system: see `layout`), gets its identity and the agent written in, reboots from
//! its own disks, and its installed agent checks in; the post-install script
//! runs there. Then the machine is `installed`, its hostname resolves through rackboot's DNS and
//! a job runs on the installed system. Prints the seconds from power-on to each step. Then day
//! two (`day_two`): a rescue and its return, and a release with each erase.
//!
//! Both VMs have network specs. The UEFI VM has two NICs: it comes up with both in an
//! active-backup bond (DHCP, untagged) and VLAN 10 on top at its static address; the SeaBIOS VM
//! has VLAN 10 on its one NIC and pings the UEFI VM over it, also after one of the UEFI VM's
//! NICs loses its link (libvirt).
//!
//! Where libvirt and the BMC emulators are installed (CI), the VMs are libvirt domains that
//! nothing but rackboot powers on: the SeaBIOS one through VirtualBMC (IPMI, legacy PXE once),
//! the OVMF one through sushy-emulator's libvirt driver (Redfish, pinned certificate, UEFI PXE
//! once); at the end rackboot powers both off through them. Elsewhere the VMs are started
//! directly. Needs root, qemu, OVMF, loop devices and a Debian mirror (debootstrap): `#[ignore]`d
//! like the other end-to-end tests; CI runs it.

use std::time::{Duration, Instant};

use crate::netns::libvirt::{self, Libvirt};
use crate::netns::{full_config, require, vm_lab, wait_for, Net};

struct Vm {
    name: &'static str,
    mac: &'static str,
    /// A second NIC: the VM installs with both bonded and the tenant VLAN on top.
    nic2: Option<&'static str>,
    uefi: bool,
}

/// The network the UEFI VM installs with: its two NICs in an active-backup bond (DHCP on the
/// provisioning network, untagged), and VLAN 10 on the bond at its static address in `prod`.
const BONDED: &str = r#"{"ethernets":[{"name":"nic0","mac":"52:54:00:e6:00:02"},{"name":"nic1","mac":"52:54:00:e6:00:12"}],"bonds":[{"name":"bond0","members":["nic0","nic1"],"mode":"active-backup","miimon":100,"dhcp":true}],"vlans":[{"id":10,"link":"bond0","network":"prod","address":"198.19.10.21"}]}"#;
/// The SeaBIOS VM's: DHCP on its one NIC, and VLAN 10 on it at its own address in `prod`.
const ON_VLAN: &str = r#"{"ethernets":[{"name":"nic0","mac":"52:54:00:e6:00:01","dhcp":true}],"vlans":[{"id":10,"link":"nic0","network":"prod","address":"198.19.10.22"}]}"#;
/// `prod`: VLAN 10 (its gateway is nobody: the route is written, not used).
const PROD: &str = "[[provision.networks]]\nname = \"prod\"\ncidr = \"198.19.10.0/24\"\ngateway = \"198.19.10.1\"\nvlan = 10\nrange = \"198.19.10.20-198.19.10.29\"\n";

/// The OVMF VM's profile: the lab's firmware baseline, and BIOS attributes (sushy's libvirt
/// driver has them as Enabled and Raid).
const BIOS: &str = "firmware_baseline = \"lab\"\n[provision.hardware_profiles.bios]\nProcTurboMode = \"Disabled\"\nEmbeddedSata = \"Ahci\"\n";
/// The lab's image for it (sushy-tools' SimpleUpdate does not fetch it).
const LAB_FIRMWARE: &[u8] = b"lab BIOS 1.1.0";

/// The lab's baseline: sushy-tools' libvirt driver reports BIOS 1.0.0 and its SimpleUpdate
/// raises the minor version, so the step brings the VM to 1.1.0. The image is put where an
/// upload keeps it (`<tftp root>/firmware/<sha256>`; uploads are tested in `bmc::firmware`).
fn lab_firmware(boot: &std::path::Path) -> String {
    use sha2::Digest;
    let sha: String = sha2::Sha256::digest(LAB_FIRMWARE).iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(boot.join("firmware")).unwrap();
    std::fs::write(boot.join("firmware").join(&sha), LAB_FIRMWARE).unwrap();
    format!("[firmware]\n[[firmware.baselines]]\nname = \"lab\"\ncomponents = [{{ component = \"bios\", version = \"1.1.0\", image = \"{sha}\" }}]\n")
}

/// The lab's hardware profile `name`: a check of the target disk and a RAID 1 over the two
/// small disks, with `extra` (its BIOS table).
fn lab_profile(name: &str, extra: &str) -> String {
    format!(
        "[[provision.hardware_profiles]]\nname = \"{name}\"\nvendors = [\"QEMU\", \"rackboot-lab\"]\nscripts = [\n  \"test -b \\\"$RACKBOOT_DISK\\\" && echo \\\"target $RACKBOOT_DISK is a block device\\\"\",\n  \"mdadm --zero-superblock /dev/vdb /dev/vdc 2>/dev/null; mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 /dev/vdb /dev/vdc && cat /proc/mdstat\",\n]\n{extra}"
    )
}

#[test]
#[ignore = "e2e: needs root, ip netns, qemu, ovmf, loop devices, debootstrap and a Debian mirror"]
fn two_vms_bios_and_uefi_are_provisioned_from_an_image_and_check_in_installed() {
    require(&["ip", "curl", "qemu-system-x86_64", "dig", "losetup", "apt-get", "iperf3"]);
    let mut net = Net::new("pv");
    super::mark("provision: start");
    let data = net.path("data");
    vm_lab("assets.sh", &data.join("boot"));
    let image = crate::netns::lab_image(&data.join("boot/images"));
    vm_lab("../bootos/tools.sh", &data.join("boot/bootos-tools.tar.gz"));
    std::fs::create_dir_all(data.join("postinstall")).unwrap();
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/postinstall/motd.sh"), data.join("postinstall/motd.sh"))
        .unwrap();
    let config = format!(
        "{}\n[bmc]\nsoft_off_timeout_secs = 20\n[provision]\n{}{}{PROD}{}{}",
        full_config(&data),
        lab_profile("lab", ""),
        lab_profile("lab-bios", BIOS),
        super::day_two::TEST_PROFILES,
        lab_firmware(&data.join("boot"))
    );
    let rackboot = net.start_rackboot(&config);
    let vms = [
        Vm { name: "bios", mac: "52:54:00:e6:00:01", nic2: None, uefi: false },
        Vm { name: "uefi", mac: "52:54:00:e6:00:02", nic2: Some("52:54:00:e6:00:12"), uefi: true },
    ];
    // Both VMs known by all their MACs; the UEFI one with its network spec.
    for vm in &vms {
        let macs: Vec<&str> = std::iter::once(vm.mac).chain(vm.nic2).collect();
        net.api("POST", "/machines", Some(&serde_json::json!({"macs": macs}).to_string()));
    }
    net.api("PUT", &format!("/machines/{}/network", vms[0].mac), Some(ON_VLAN));
    let spec = net.api("PUT", &format!("/machines/{}/network", vms[1].mac), Some(BONDED));
    // cloud-init: the task's user-data for both, but the UEFI VM's own wins.
    let own = serde_json::json!({"text": user_data("the machine")}).to_string();
    net.api("PUT", &format!("/machines/{}/user-data", vms[1].mac), Some(&own));
    assert_eq!(spec["devices"][3]["name"], "bond0.10", "{spec}");
    assert_eq!(spec["devices"][3]["address"], "198.19.10.21/24", "{spec}");
    // The VMs: libvirt domains behind BMCs, or qemu started directly where libvirt is missing.
    let lab = match libvirt::missing() {
        Some(what) => {
            eprintln!("NOTE: no {what}: the VMs are started directly, not powered on through BMCs");
            None
        }
        None => Some(Libvirt::up(&net)),
    };
    let disks = super::layout::DISKS;
    if let Some(lab) = &lab {
        for vm in &vms {
            lab.vm(vm.name, vm.mac, vm.nic2, vm.uefi, &disks);
        }
        let fingerprint = lab.bmcs();
        lab.ipmi("bios", 6231);
        let password = lab.password();
        let bmc = |vm: &Vm| match vm.uefi {
            // No boot mode: a machine DHCP never saw is taken to be UEFI.
            true => format!(
                r#"{{"address":"{}:8000","protocol":"redfish","username":"admin","password":"{password}","fingerprint":"{fingerprint}","system_id":"{}"}}"#,
                lab.addr,
                lab.uuid(vm.name)
            ),
            false => format!(
                r#"{{"address":"{}:6231","protocol":"ipmi","username":"admin","password":"{password}","boot_mode":"legacy"}}"#,
                lab.addr
            ),
        };
        for vm in &vms {
            let v = net.api("PUT", &format!("/machines/{}/bmc", vm.mac), Some(&bmc(vm)));
            assert_eq!(v["password_set"], true, "{v}");
            assert!(!v.to_string().contains(&password), "the password is never shown: {v}");
            assert_eq!(lab.state_of(vm.name), "shut off", "{}: nothing powered it on yet", vm.name);
        }
    }
    // One task per VM: the OVMF VM's hardware profile also sets BIOS attributes through its
    // Redfish BMC (sushy's libvirt driver keeps them in the domain); the SeaBIOS VM's BMC is
    // IPMI, which has none.
    let tasks: Vec<u64> = vms
        .iter()
        .enumerate()
        .map(|(i, vm)| {
            let profile = if vm.uefi && lab.is_some() { "lab-bios" } else { "lab" };
            let task = net.api(
                "POST",
                "/tasks",
                Some(&format!(
                    r#"{{"select":{{"macs":["{}"]}},"image":"{image}","hardware_profile":"{profile}","root_device":{{"serial":"RBLAB-VDA","min_size_gib":2}},"layout":{},"hostname_pattern":"node-{:02}","ip_pool":"198.18.0.{}-198.18.0.69","ssh_keys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE2e lab@rackboot"],"post_install":["motd.sh"],"step_timeout_secs":600,"user_data":{}}}"#,
                    vm.mac,
                    super::layout::LAYOUT,
                    i + 1,
                    60 + i,
                    serde_json::to_string(&user_data("the task")).unwrap()
                )),
            );
            task["task"]["id"].as_u64().unwrap()
        })
        .collect();
    let srv = net.srv.clone();
    super::mark("provision: the lab is up, the tasks made: power on");
    let powered_on = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    for vm in lab.is_none().then_some(&vms).into_iter().flatten() {
        net.add_tap(&format!("tap-{}", vm.name));
        let mut args = net.qemu_args(vm.name, vm.mac, vm.uefi, &disks, false);
        if let Some(mac2) = vm.nic2 {
            net.add_tap(&format!("tap-{}b", vm.name));
            args.extend(["-netdev".into(), format!("tap,id=n1,ifname=tap-{}b,script=no,downscript=no", vm.name)]);
            args.extend(["-device".into(), format!("virtio-net-pci,netdev=n1,mac={mac2},romfile=")]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        net.spawn(&srv, &args, &format!("{}.qemu.log", vm.name));
    }
    // The lab bridge carries VLAN 10's tagged frames between the VMs as they are (no VLAN
    // filtering: the lab machines' kernels have neither it nor 8021q, so the appliance's
    // namespace cannot join VLAN 10 itself; the SeaBIOS VM, on VLAN 10 too, checks it).
    let serial = |vm: &Vm| match &lab {
        Some(lab) => lab.serial(vm.name),
        None => net.log(&format!("{}.serial", vm.name)),
    };

    let deadline = Instant::now() + Duration::from_secs(1200);
    let runs = loop {
        let runs: Vec<serde_json::Value> =
            tasks.iter().map(|t| net.api("GET", &format!("/tasks/{t}"), None)["runs"][0].clone()).collect();
        if runs.iter().all(|r| r["state"] != "active") {
            break runs;
        }
        if Instant::now() > deadline {
            let serials: Vec<String> = vms.iter().map(serial).collect();
            panic!("runs not finished: {runs:?}\n{}", serials.join("\n-----\n"));
        }
        std::thread::sleep(Duration::from_secs(2));
    };
    super::mark("provision: both runs ended");
    for (vm, run) in vms.iter().zip(&runs) {
        // Seconds from power-on to each step, from the machine's timeline.
        let ev = net.api("GET", &format!("/machines/{}/events?limit=1000", vm.mac), None);
        let events = ev["events"].as_array().unwrap();
        let mut line = format!("{} ({}):", vm.name, vm.mac);
        let mut powered_on = powered_on;
        if lab.is_some() {
            // Powered up by the task through the BMC: PXE once in the machine's mode, then on.
            let power: Vec<&serde_json::Value> = events.iter().filter(|e| e["kind"] == "power.action").collect();
            assert!(power.len() >= 2, "{}: no power actions: {ev}", vm.name);
            let (pxe, on) = (&power[0]["detail"], &power[1]["detail"]);
            assert_eq!((pxe["action"].as_str(), pxe["by"].as_str()), (Some("pxe-once"), Some("provision")), "{pxe}");
            assert_eq!(pxe["uefi"], vm.uefi, "{}: PXE once in its boot mode: {pxe}", vm.name);
            assert_eq!((on["action"].as_str(), on["state"].as_str()), (Some("cycle"), Some("on")), "{on}");
            powered_on = power[1]["at_ms"].as_u64().unwrap();
            line += &format!(" powered on through {}", if vm.uefi { "Redfish" } else { "IPMI" });
        }
        for e in events {
            let kind = e["kind"].as_str().unwrap();
            let step = e["detail"]["step"].as_str().unwrap_or_default();
            let at = (e["at_ms"].as_i64().unwrap() - powered_on as i64) as f64 / 1000.0;
            match kind {
                "agent.enrolled" => {
                    line += &format!(" enrolled({}) {at:.1}s", e["detail"]["mode"].as_str().unwrap_or("?"))
                }
                "provision.step" if e["detail"]["job"].is_u64() => line += &format!(" {step} {at:.1}s"),
                "provision.step" if e["detail"]["bios"].is_string() => {
                    line += &format!(" bios:{} {at:.1}s", e["detail"]["bios"].as_str().unwrap_or_default())
                }
                "provision.step" if e["detail"]["firmware"].is_string() => {
                    line += &format!(" firmware:{} {at:.1}s", e["detail"]["firmware"].as_str().unwrap_or_default())
                }
                "provision.installed" => line += &format!(" installed {at:.1}s"),
                _ => {}
            }
        }
        eprintln!("{line}");
        if vm.uefi && lab.is_some() {
            // The firmware step brought it to the lab's baseline through sushy's UpdateService
            // (current at once: no restart), before the BIOS step.
            let phases: Vec<&str> = events.iter().filter_map(|e| e["detail"]["firmware"].as_str()).collect();
            assert_eq!(phases, ["update", "updated"], "{}: {line}", vm.name);
            let flashed = events.iter().find(|e| e["kind"] == "firmware.updating").unwrap();
            assert_eq!(
                (flashed["detail"]["component"].as_str(), flashed["detail"]["version"].as_str()),
                (Some("bios"), Some("1.1.0"))
            );
            // The BIOS step wrote both attributes, restarted the VM into BootOS, read them back.
            let phases: Vec<&str> = events.iter().filter_map(|e| e["detail"]["bios"].as_str()).collect();
            assert_eq!(phases, ["apply", "written", "verify", "verified"], "{}: {line}", vm.name);
            let written = events.iter().find(|e| e["detail"]["bios"] == "written").unwrap();
            assert_eq!(written["detail"]["attributes"], serde_json::json!(["EmbeddedSata", "ProcTurboMode"]));
        }
        if vm.uefi {
            let console = lab.is_some().then(|| serial(vm));
            super::installed::booted_its_disk_next(&net, vm.name, events, &line, console);
        }
        // The image write moved the run's progress along (an event each 10% of the image).
        let install_progress: Vec<u64> = ev["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "provision.step" && e["detail"]["step"] == "install")
            .filter_map(|e| e["detail"]["progress"].as_u64())
            .filter(|p| (21..=70).contains(p))
            .collect();
        eprintln!("{}: install progress {install_progress:?}", vm.name);
        assert!(!install_progress.is_empty(), "no progress events while the image was written: {ev}");
        if run["state"] != "installed" {
            let jobs = net.api("GET", &format!("/jobs?machine={}&limit=1000", vm.mac), None);
            for j in jobs["jobs"].as_array().unwrap() {
                let out = net.api("GET", &format!("/jobs/{}/output", j["id"]), None);
                eprintln!("job {} {} {}: {}", j["id"], j["state"], j["action"], out["text"]);
            }
        }
        assert_eq!(run["state"], "installed", "{}: {run}\n{}", vm.name, serial(vm));
    }

    for (i, vm) in vms.iter().enumerate() {
        super::installed::check(&net, &srv, &format!("node-{:02}", i + 1), vm.name, vm.mac);
    }

    // The UEFI VM came up with its network spec: bond0 over both NICs, VLAN 10 at its static
    // address with prod's default route, which the SeaBIOS VM reaches over VLAN 10; with one
    // NIC's cable pulled, the bond fails over and the address still answers.
    let (bios, uefi) = (&vms[0], &vms[1]);
    super::mark("provision: RAID, DNS, jobs and layouts checked");
    let ping = |what: &str| {
        let out = job_output(&net, bios.mac, "for i in $(seq 60); do ping -c 1 -W 1 198.19.10.21 >/dev/null && break; sleep 1; done; ip -4 -o addr show dev nic0.10; ping -c 3 -W 2 198.19.10.21");
        eprintln!("bios: ping 198.19.10.21 on VLAN 10 ({what}):\n{out}");
        assert!(out.contains("inet 198.19.10.22/24"), "{out}");
        assert!(out.contains("3 packets transmitted, 3 received"), "{what}: {out}");
    };
    ping("both NICs up");
    let bonding = job_output(
        &net,
        uefi.mac,
        "cat /proc/net/bonding/bond0; ip -d -o link show bond0.10; ip -4 -o addr show dev bond0.10; ip -4 route show default",
    );
    eprintln!("uefi: /proc/net/bonding/bond0 and bond0.10:\n{bonding}");
    assert!(bonding.contains("Bonding Mode: fault-tolerance (active-backup)"), "{bonding}");
    assert_eq!(bonding.matches("Slave Interface:").count(), 2, "both NICs are in the bond: {bonding}");
    assert!(bonding.contains("vlan protocol 802.1Q id 10"), "{bonding}");
    assert!(bonding.contains("inet 198.19.10.21/24"), "{bonding}");
    assert!(bonding.contains("default via 198.19.10.1 dev bond0.10"), "{bonding}");
    // Its installed agent's inventory (sent again now) matches the spec: no problems, and a
    // network.matched event.
    for vm in &vms {
        let job = net.api(
            "POST",
            "/jobs",
            Some(&format!(r#"{{"machine":"{}","action":{{"kind":"refresh_inventory"}}}}"#, vm.mac)),
        );
        let id = job["jobs"][0]["id"].as_u64().unwrap();
        wait_for(
            120,
            || format!("inventory of {}", vm.name),
            || (net.api("GET", &format!("/jobs/{id}"), None)["state"] == "succeeded").then_some(()),
        );
        let m = net.api("GET", &format!("/machines/{}", vm.mac), None);
        assert_eq!(m["network_problems"], serde_json::json!([]), "{}: {}", vm.name, m["network_problems"]);
        let ev = net.api("GET", &format!("/machines/{}/events?limit=1000", vm.mac), None);
        let kinds: Vec<&str> = ev["events"].as_array().unwrap().iter().filter_map(|e| e["kind"].as_str()).collect();
        assert!(kinds.contains(&"network.matched"), "{}: {kinds:?}", vm.name);
    }
    match &lab {
        Some(lab) => {
            let active = |text: &str| {
                text.lines().find_map(|l| l.strip_prefix("Currently Active Slave: ")).unwrap_or_default().to_string()
            };
            // The cable of the port that carries the bond now: found by its permanent MAC.
            let before = active(&bonding);
            let section =
                bonding.split("Slave Interface: ").find(|s| s.starts_with(&format!("{before}\n"))).unwrap_or("");
            let mac =
                section.lines().find_map(|l| l.strip_prefix("Permanent HW addr: ")).expect("the active port's MAC");
            lab.set_link(uefi.name, mac, false);
            ping("the active NIC's link down");
            let after = job_output(&net, uefi.mac, "cat /proc/net/bonding/bond0");
            eprintln!("uefi: after {before}'s link went down:\n{after}");
            assert!(after.contains("MII Status: down"), "{after}");
            assert_ne!(active(&after), before, "the bond failed over: {after}");
            lab.set_link(uefi.name, mac, true);
        }
        None => eprintln!("NOTE: VMs started directly: the failover half needs libvirt (domif-setlink)"),
    }

    // The encrypted file system: re-bound on a key rotation, locked while the appliance is away.
    super::mark("provision: network spec, bond failover and inventory checked");
    let macs = [vms[0].mac, vms[1].mac];
    let console = net.path(&format!("{}.serial", vms[0].name));
    let bios_serial = || match &lab {
        Some(lab) => lab.serial(vms[0].name),
        None => std::fs::read_to_string(&console).unwrap_or_default(),
    };
    let _rackboot = super::disk_crypt::check_rotation_and_absence(&mut net, rackboot, &config, macs, &bios_serial);

    super::mark("provision: key rotation and the appliance's absence checked");
    // cloud-init ran once per install with the user-data that applies to each VM, and its schema
    // found nothing wrong with the config it merged (the image's, the identity step's, the
    // user-data); a reboot does not run it again.
    let cloud = "cloud-init status --wait --long; cat /etc/rackboot-cloud-init; echo runs=$(wc -l < /var/log/rackboot-runcmd); echo boot=$(cat /proc/sys/kernel/random/boot_id); grep -e WARNING -e ERROR -e Traceback /var/log/cloud-init.log | tail -25";
    let mut first_boot = String::new();
    for (vm, from) in vms.iter().zip(["the task", "the machine"]) {
        let out = job_output(&net, vm.mac, cloud);
        eprintln!("{}: cloud-init:\n{out}", vm.name);
        assert!(out.contains("status: done"), "{}: {out}", vm.name);
        assert!(out.contains(&format!("written from {from}")), "{}: {out}", vm.name);
        assert!(out.contains("runs=1"), "{}: {out}", vm.name);
        assert!(!out.contains("Invalid cloud-config"), "{}: cloud-init's schema refused its config: {out}", vm.name);
        if first_boot.is_empty() {
            first_boot = out;
        }
    }
    // Day two: a rescue and its return (a later boot: cloud-init does not run again), then both
    super::mark("provision: cloud-init checked");
    // released, one with each erase.
    let day_two = |vm: &Vm| super::day_two::Vm { name: vm.name, mac: vm.mac };
    super::day_two::check(&net, lab.as_ref(), day_two(&vms[0]), day_two(&vms[1]), cloud, &first_boot);

    // Firmware through sushy-emulator's libvirt driver: BIOS attributes it keeps per domain.
    super::mark("provision: day two checked");
    if lab.is_some() {
        let fw = net.api("POST", &format!("/machines/{}/firmware", vms[1].mac), None);
        eprintln!("uefi: firmware through Redfish: {fw}");
        assert!(fw["bios"]["BootMode"].is_string(), "BIOS attributes through sushy's libvirt driver: {fw}");
        // The hardware profile's two attributes, set before the install and still so.
        assert_eq!(
            (fw["bios"]["ProcTurboMode"].as_str(), fw["bios"]["EmbeddedSata"].as_str()),
            (Some("Disabled"), Some("Ahci")),
            "{fw}"
        );
        assert_eq!(net.api("GET", &format!("/machines/{}/firmware", vms[1].mac), None), fw);
        // Still on the baseline after the install and day two.
        assert_eq!(fw["bios_version"], "1.1.0", "{fw}");
        let drift = net.api("GET", &format!("/machines/{}/firmware/drift", vms[1].mac), None);
        assert_eq!(drift["standing"], "current", "{drift}");
    }

    // Powered off through the BMCs, read back and seen by libvirt: gracefully (BootOS answers
    // the ACPI power button), not forced after the 20 s soft-off timeout.
    if let Some(lab) = &lab {
        for vm in &vms {
            let out = net.api("POST", &format!("/machines/{}/power", vm.mac), Some(r#"{"action":"off"}"#));
            assert_eq!(out["state"], "off", "{}: {out}", vm.name);
            assert!(out.get("fallback").is_none(), "{}: BootOS ignored the power button: {out}", vm.name);
            assert_eq!(lab.state_of(vm.name), "shut off", "{}: {out}", vm.name);
            let bmc = net.api("GET", &format!("/machines/{}/bmc", vm.mac), None);
            assert_eq!(bmc["power"]["state"], "off", "{bmc}");
        }
    }
}

/// User-data that writes a file naming where it came from and runs a command (counted).
fn user_data(from: &str) -> String {
    format!(
        "#cloud-config\nwrite_files:\n  - path: /etc/rackboot-cloud-init\n    content: |\n      written from {from}\nruncmd:\n  - [sh, -c, \"echo ran >> /var/log/rackboot-runcmd\"]\n"
    )
}

/// Runs `body` on the installed machine `mac` through its agent; its output once it succeeded.
pub(super) fn job_output(net: &Net, mac: &str, body: &str) -> String {
    job_output_within(net, mac, body, 120)
}

/// [`job_output`], waiting up to `secs` for the job (a machine still rebooting picks it up when
/// its agent is back).
pub(super) fn job_output_within(net: &Net, mac: &str, body: &str, secs: u64) -> String {
    let job = net.api(
        "POST",
        "/jobs",
        Some(&serde_json::json!({"machine": mac, "action": {"kind": "script", "body": body}}).to_string()),
    );
    let id = job["jobs"][0]["id"].as_u64().unwrap();
    let done = wait_for(
        secs,
        || format!("job {id} on {mac}"),
        || {
            let j = net.api("GET", &format!("/jobs/{id}"), None);
            (j["state"] != "queued" && j["state"] != "running").then_some(j)
        },
    );
    let text = net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap_or_default().to_string();
    assert_eq!(done["state"], "succeeded", "{done}: {text}");
    text
}
