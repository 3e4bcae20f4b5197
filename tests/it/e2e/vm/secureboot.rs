//! UEFI Secure Boot end to end: an OVMF VM with Secure Boot on and enforcing (Microsoft's keys
//! enrolled, as servers leave the factory) PXE-boots through rackboot's signed chain, with no
//! setting changed on the machine: Microsoft-signed shim -> Debian-signed network GRUB -> the
//! GRUB config rackboot renders from the machine's boot plan -> the Debian-signed BootOS kernel
//! and initrd over TFTP. BootOS's agent enrolls with its one-time nonce and reports Secure Boot
//! on; a provisioning task writes the lab OS image (shim and the signed GRUB on its ESP) and the
//! machine reboots into it, still under Secure Boot, to `installed`. Then the three refusals the
//! chain relies on are each produced on the same firmware, so the check cannot pass by accident: an unsigned boot file (the firmware says "Access Denied"),
//! an unsigned GRUB (shim: "Security Violation") and an unsigned kernel (GRUB: "bad shim
//! signature"). Needs root, qemu, OVMF's secboot build, Debian's signed packages (fetched by
//! vm-lab/signed.sh) and a Debian mirror (the image): `#[ignore]`d like the other end-to-end
//! tests; CI runs it.

use std::path::Path;
use std::time::Instant;

use crate::netns::{full_config, require, vm_lab, wait_for, Net};

const MAC: &str = "52:54:00:e5:00:01";

/// A copy of PE image `from` without its signature: the certificate table's data directory
/// entry (PE32+ optional header, entry 4) zeroed, as `sbattach --remove` does.
fn unsigned_copy(from: &Path, to: &Path) {
    let mut pe = std::fs::read(from).unwrap();
    let at = |pe: &[u8], o: usize| u32::from_le_bytes(pe[o..o + 4].try_into().unwrap()) as usize;
    let opt = at(&pe, 0x3c) + 24;
    assert_eq!(&pe[opt..opt + 2], &[0x0b, 0x02], "{}: a PE32+ image", from.display());
    let cert = opt + 112 + 4 * 8;
    assert_ne!(at(&pe, cert + 4), 0, "{}: signed to begin with", from.display());
    pe[cert..cert + 8].fill(0);
    std::fs::write(to, pe).unwrap();
}

#[test]
#[ignore = "e2e: needs root, ip netns, qemu, ovmf (secboot), apt-get for the signed shim and GRUB, and bootos/build.sh"]
fn a_secure_boot_vm_boots_bootos_through_the_signed_chain_and_unsigned_links_are_refused() {
    require(&["ip", "curl", "qemu-system-x86_64", "cpio", "zstd", "apt-get", "dpkg-deb"]);
    assert!(Path::new("/usr/share/OVMF/OVMF_CODE_4M.secboot.fd").exists(), "needs the ovmf package");
    let mut net = Net::new("sb");
    let data = net.path("data");
    let boot = data.join("boot");
    vm_lab("assets.sh", &boot);
    // The lab OS image a provisioning run writes (shim and the signed GRUB on its ESP).
    let image = crate::netns::lab_image(&boot.join("images"));
    net.start_rackboot(&format!("{}\n[boot]\nuefi_loader = \"shim\"\n", full_config(&data)));
    let dir = net.dir.path().to_path_buf();
    // Lossy: shim's error box is drawn with bytes that are not UTF-8.
    let serial = move |name: &str| {
        String::from_utf8_lossy(&std::fs::read(dir.join(format!("{name}.serial"))).unwrap_or_default()).into_owned()
    };
    let srv = net.srv.clone();

    // 1. The signed chain to BootOS, Secure Boot enforcing throughout.
    net.add_tap("tap-sb");
    // It reboots from its disk after the install: no -no-reboot.
    let args = net.qemu_args_secure_boot("sb", MAC, &[2 << 30], false);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let vm = net.spawn(&srv, &args, "sb.qemu.log");
    let m = wait_for(
        600,
        || format!("no inventory from the Secure Boot VM's agent:\n{}", serial("sb")),
        || {
            let m = net.try_api("GET", &format!("/machines/{MAC}"))?;
            (!m["inventory"].is_null()).then_some(m)
        },
    );
    eprintln!("secure boot VM: power-on to inventory in {} s", started.elapsed().as_secs());
    let s = serial("sb");
    assert!(s.contains(&format!("rackboot-bootos: up mac={MAC}")), "BootOS banner:\n{s}");
    assert!(s.contains("rackboot: booting discovery on"), "the rendered GRUB config ran:\n{s}");
    assert_eq!(m["inventory"]["firmware"]["uefi"], true, "{}", m["inventory"]);
    assert_eq!(m["inventory"]["firmware"]["secure_boot"], true, "Secure Boot was enforcing: {}", m["inventory"]);
    assert_eq!(m["state"], "ready");

    let ev = net.api("GET", &format!("/machines/{MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let steps: Vec<String> = ev
        .iter()
        .map(|e| match e["kind"].as_str().unwrap() {
            "tftp.transfer" if e["detail"]["outcome"] == "complete" => {
                format!("tftp {}", e["detail"]["file"].as_str().unwrap())
            }
            "boot.script" => format!("script {}", e["detail"]["loader"].as_str().unwrap_or("?")),
            k => k.to_string(),
        })
        .collect();
    let want = [
        "dhcp.ack",
        "tftp shimx64.efi",
        "tftp grubx64.efi",
        "script grub",
        "tftp bootos/vmlinuz",
        "tftp bootos/initrd.img",
        "agent.enrolled",
        "agent.inventory",
    ];
    let mut at = 0;
    for step in &steps {
        if at < want.len() && step == want[at] {
            at += 1;
        }
    }
    assert_eq!(at, want.len(), "timeline {steps:?} lacks (in order) {:?}", &want[at..]);
    let offer = ev.iter().find(|e| e["kind"] == "dhcp.offer").unwrap();
    assert_eq!(offer["detail"]["boot_file"], "shimx64.efi", "{offer}");
    let script = ev.iter().find(|e| e["kind"] == "boot.script").unwrap();
    assert_eq!(script["detail"]["nonce"], true, "the GRUB config went to the VM's own address: {script}");
    let enrolled = ev.iter().find(|e| e["kind"] == "agent.enrolled").unwrap();
    assert_eq!(enrolled["detail"]["nonce"], "valid", "{enrolled}");
    for e in ev.iter().filter(|e| e["kind"] == "tftp.transfer" && e["detail"]["file"] == "bootos/initrd.img") {
        let (bytes, ms) = (e["detail"]["bytes"].as_u64().unwrap(), e["detail"]["ms"].as_u64().unwrap().max(1));
        eprintln!(
            "GRUB's TFTP: initrd {bytes} bytes in {ms} ms ({} KB/s), blksize {}",
            bytes / ms,
            e["detail"]["blksize"]
        );
    }

    // 2. Provisioned to installed, Secure Boot on throughout: the image is written, the machine
    //    reboots, and the installed system (shim and the signed GRUB on its ESP, a Debian-signed
    //    kernel) checks in.
    let run = super::install(&net, MAC, image, "sb-{n:02}", || serial("sb"));
    assert_eq!(run["state"], "installed", "{run}\n{}", serial("sb"));
    eprintln!("secure boot VM: power-on to installed in {} s", started.elapsed().as_secs());
    let job = net.api(
        "POST",
        "/jobs",
        Some(&format!(
            r#"{{"machine":"{MAC}","action":{{"kind":"script","body":"dmesg | grep -o Secure.boot.enabled; cat /proc/cmdline"}}}}"#
        )),
    );
    let id = job["jobs"][0]["id"].as_u64().unwrap();
    wait_for(
        120,
        || format!("job {id} on the installed system did not finish"),
        || {
            let j = net.api("GET", &format!("/jobs/{id}"), None);
            j["state"].as_str().is_some_and(|s| s != "queued" && s != "running").then_some(())
        },
    );
    let out = net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap().to_string();
    assert!(out.contains("Secure boot enabled"), "the installed kernel runs with Secure Boot on: {out}");
    assert!(out.contains("root=UUID=") && !out.contains("rackboot.url="), "the installed system, not BootOS: {out}");
    net.stop(vm);

    // 3. Each link unsigned in turn, on the same firmware: each is refused where it should be.
    let original = |name: &str| boot.join(format!("{name}.signed-original"));
    let cases = [
        ("shimx64.efi", "the firmware refuses an unsigned boot file", "Access Denied"),
        ("grubx64.efi", "shim refuses an unsigned GRUB", "Security Violation"),
        ("bootos/vmlinuz", "GRUB refuses an unsigned kernel", "bad shim signature"),
    ];
    for (i, (file, what, message)) in cases.iter().enumerate() {
        let path = boot.join(file);
        std::fs::rename(&path, original(file)).unwrap();
        match *file {
            // Debian's iPXE is not signed: it stands in for any unsigned EFI program.
            "bootos/vmlinuz" => unsigned_copy(&original(file), &path),
            _ => std::fs::copy(boot.join("ipxe.efi"), &path).map(|_| ()).unwrap(),
        }
        let name = format!("no{i}");
        let mac = format!("52:54:00:e5:01:0{i}");
        net.add_tap(&format!("tap-{name}"));
        let args = net.qemu_args_secure_boot(&name, &mac, &[], true);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let vm = net.spawn(&srv, &args, &format!("{name}.qemu.log"));
        wait_for(
            300,
            || format!("{what}: no {message:?} on the console:\n{}", serial(&name)),
            || serial(&name).contains(message).then_some(()),
        );
        assert!(!serial(&name).contains("rackboot-bootos: up"), "{what}: yet BootOS came up");
        net.stop(vm);
        std::fs::rename(original(file), &path).unwrap();
        eprintln!("{what}: {message:?}");
    }
}

#[test]
#[ignore = "e2e: needs root, ip netns, qemu, ovmf (secboot), dnsmasq, apt-get for the signed shim and GRUB, and bootos/build.sh"]
fn in_proxy_mode_beside_another_dhcp_server_the_signed_chain_boots_bootos() {
    require(&["ip", "curl", "qemu-system-x86_64", "cpio", "zstd", "apt-get", "dpkg-deb", "dnsmasq"]);
    let mut net = Net::new("sp");
    let data = net.path("data");
    vm_lab("assets.sh", &data.join("boot"));
    // The VLAN's own DHCP server, on another address: addresses only, no boot file. Its next
    // server (siaddr) must be rackboot's address: Debian 12's GRUB takes its TFTP server from the
    // DHCP ACK and ignores the proxy offer (with dnsmasq's default, its own address, GRUB stopped
    // at "Welcome to GRUB!" asking 198.18.0.2 for its config). docs/secure-boot.md.
    let dhcp = net.add_client("dhcp", "52:54:00:e5:02:fe");
    net.run(&dhcp, "ip addr add 198.18.0.2/24 dev eth0");
    let leases = net.path("dnsmasq.leases");
    net.spawn(
        &dhcp,
        &[
            "dnsmasq",
            "--keep-in-foreground",
            "--no-daemon",
            "--port=0",
            "--bind-interfaces",
            "--interface=eth0",
            "--dhcp-range=198.18.0.150,198.18.0.199,600",
            "--dhcp-option=3,198.18.0.1",
            "--dhcp-boot=,,198.18.0.1",
            "--no-ping",
            "--log-dhcp",
            "--conf-file=/dev/null",
            &format!("--pid-file={}", net.path("dnsmasq.pid").display()),
            &format!("--dhcp-leasefile={}", leases.display()),
        ],
        "dnsmasq.log",
    );
    let cfg = format!(
        "[server]\ndata_dir = \"{}\"\ninterface = \"br0\"\n[http]\nlisten = \"198.18.0.1:8080\"\n[dhcp]\nmode = \"proxy\"\n[boot]\nuefi_loader = \"shim\"\n",
        data.display()
    );
    net.start_rackboot(&cfg);
    let dir = net.dir.path().to_path_buf();
    let serial =
        move || String::from_utf8_lossy(&std::fs::read(dir.join("px.serial")).unwrap_or_default()).into_owned();
    let srv = net.srv.clone();
    net.add_tap("tap-px");
    let mac = "52:54:00:e5:02:01";
    let args = net.qemu_args_secure_boot("px", mac, &[], true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    net.spawn(&srv, &args, "px.qemu.log");
    let m = wait_for(
        400,
        || format!("no inventory in proxy mode:\n{}\ndnsmasq:\n{}", serial(), net.log("dnsmasq.log")),
        || {
            let m = net.try_api("GET", &format!("/machines/{mac}"))?;
            (!m["inventory"].is_null()).then_some(m)
        },
    );
    eprintln!("secure boot VM, proxy mode: power-on to inventory in {} s", started.elapsed().as_secs());
    assert_eq!(m["inventory"]["firmware"]["secure_boot"], true, "{}", m["inventory"]);
    assert_eq!(m["inventory"]["nics"][0]["mac"], mac);
    let leased = std::fs::read_to_string(&leases).unwrap();
    assert!(leased.contains(mac), "the address came from dnsmasq: {leased}");
}
