//! vm-lab end to end: real firmware boots BootOS through rackboot, and BootOS's agent takes
//! over, with no TFTP server at all (nothing listens on port 69). One SeaBIOS VM and one OVMF
//! (UEFI) VM, each with qemu's iPXE option ROM on virtio-net, and a third OVMF VM whose firmware
//! may only boot over HTTP (UEFI HTTP Boot: no option ROM, its PXE switched off through fw_cfg),
//! all with 512 MiB and a 2 GiB virtio disk, boot the BootOS kernel and initramfs
//! (bootos/build.sh); the agent enrolls, the API shows the VM's MAC, memory and disk as qemu set
//! them, an operator job `uname -a` runs and its output and exit code come back, the timeline
//! holds every step in order, and a power-off job ends the VM. The HTTP-boot VM asks DHCP as an
//! HTTP client (arch 16, vendor class "HTTPClient"), gets iPXE's URL, fetches iPXE over HTTP and
//! iPXE its per-MAC script. Two more OVMF VMs, set to `uefi_loader = "https"` and given the
//! boot CA through fw_cfg (`rackboot ca efi`), fetch BootOS's one UEFI image
//! (`bootos/bootos.efi`, which the appliance built at start on systemd's EFI stub and signed
//! with its Secure Boot key) with their firmware's HTTPS boot from the boot listener (RSA, DHE:
//! EDK2's TLS): nothing in the clear. The image's command line names the appliance and no
//! machine; the agent asks for its nonce over pinned TLS, which enrolls it approved. One of the
//! two has Secure Boot off; the other enforcing, with the appliance's certificate enrolled in
//! its db (virt-fw-vars): the signature checked. Then the image is
//! swapped for one whose initrd was changed (as a server answering for the appliance with the
//! boot CA's key would hand it): a sixth such VM refuses it, and boots once the genuine one is back. Needs root, qemu, OVMF, systemd-boot-efi
//! and the lab assets, so it is `#[ignore]`d like the other end-to-end tests; CI runs it.

use std::process::Command;

use crate::netns::{full_config, require, wait_for, Net};

struct Vm {
    name: &'static str,
    mac: &'static str,
    uefi: bool,
    /// UEFI HTTP Boot by the firmware itself, iPXE fetched over HTTP.
    http: bool,
    /// The firmware's HTTPS boot fetches BootOS's one image (`uefi_loader = "https"`).
    https: bool,
    /// Secure Boot enforcing, the appliance's certificate in db.
    secure: bool,
}

const DISK_BYTES: u64 = 2 << 30;

#[test]
#[ignore = "e2e: needs root, ip netns, qemu-system-x86, ipxe-qemu, ovmf, curl and bootos/build.sh"]
fn seabios_and_ovmf_vms_boot_bootos_and_its_agent_runs_jobs() {
    require(&["ip", "curl", "qemu-system-x86_64", "cpio", "zstd", "apt-get"]);
    assert!(std::path::Path::new("/usr/share/OVMF/OVMF_CODE_4M.fd").exists(), "needs the ovmf package");
    let mut net = Net::new("vm");
    let data = net.path("data");
    let assets =
        Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/vm-lab/assets.sh")).arg(data.join("boot")).output().unwrap();
    assert!(assets.status.success(), "assets: {}", String::from_utf8_lossy(&assets.stderr));
    net.start_rackboot(&format!("{}\n[tftp]\nenabled = false\n[https]\nboot_port = 4433\n", full_config(&data)));
    let port69 = net.run(&net.srv, "ss -uln 'sport = :69' | tail -n +2");
    assert!(String::from_utf8_lossy(&port69.stdout).trim().is_empty(), "nothing may listen on port 69");
    let vms = [
        Vm { name: "bios", mac: "52:54:00:e4:00:01", uefi: false, http: false, https: false, secure: false },
        Vm { name: "uefi", mac: "52:54:00:e4:00:02", uefi: true, http: false, https: false, secure: false },
        Vm { name: "http", mac: "52:54:00:e4:00:03", uefi: true, http: true, https: false, secure: false },
        Vm { name: "tls", mac: "52:54:00:e4:00:04", uefi: true, http: true, https: true, secure: false },
        Vm { name: "https", mac: "52:54:00:e4:00:05", uefi: true, http: true, https: true, secure: true },
    ];
    let image = data.join("boot/bootos/bootos.efi");
    assert!(image.is_file(), "BootOS's image:\n{}", net.log("rackboot.log"));
    // The HTTPS VMs: known before they boot, set to HTTPS boot; their firmware trusts the boot CA.
    for mac in ["52:54:00:e4:00:04", "52:54:00:e4:00:05"] {
        a_machine(&net, mac);
        net.api("PATCH", &format!("/machines/{mac}"), Some(r#"{"uefi_loader":"https"}"#));
    }
    let cacerts = net.path("cacerts.esl");
    let cli = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["ca", "efi", "--config", net.path("rackboot.toml").to_str().unwrap(), "--out"])
        .arg(&cacerts)
        .output()
        .unwrap();
    assert!(cli.status.success(), "rackboot ca efi: {}", String::from_utf8_lossy(&cli.stderr));
    let srv = net.srv.clone();
    // An operator watching the whole boot live, from before the VMs power on.
    let token_file = data.join("admin.token");
    let ca = net.ca();
    let (token_file, ca) = (token_file.to_str().unwrap(), ca.to_str().unwrap());
    let watch_args = ["watch", "--all", "--api", "https://198.18.0.1", "--ca", ca, "--token-file", token_file];
    let watch = net.spawn(&srv, &[&[env!("CARGO_BIN_EXE_rackboot")][..], &watch_args[..]].concat(), "watch.log");
    let mut running = Vec::new();
    let started = std::time::Instant::now();
    for vm in &vms {
        net.add_tap(&format!("tap-{}", vm.name));
        let mut args = match vm.https {
            true => https_args(&net, vm.name, vm.mac, &cacerts, vm.secure),
            false => net.qemu_args(vm.name, vm.mac, vm.uefi, &[DISK_BYTES], true),
        };
        if vm.http && !vm.https {
            // The firmware's own network stack (no iPXE option ROM), with PXE off: HTTP boot only.
            for arg in args.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
                arg.push_str(",romfile=");
            }
            for pxe in ["IPv4PXESupport", "IPv6PXESupport"] {
                args.extend(["-fw_cfg".into(), format!("name=opt/org.tianocore/{pxe},string=n")]);
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        running.push(net.spawn(&srv, &args, &format!("{}.qemu.log", vm.name)));
    }
    let dir = net.dir.path().to_path_buf();
    let serial = move |vm: &Vm| std::fs::read_to_string(dir.join(format!("{}.serial", vm.name))).unwrap_or_default();

    for vm in &vms {
        // Firmware -> DHCP -> iPXE script -> kernel + initrd -> /init -> agent -> enroll + inventory.
        let m = wait_for(
            400,
            || format!("{}: no inventory from its agent:\n{}", vm.name, serial(vm)),
            || {
                let m = net.try_api("GET", &format!("/machines/{}", vm.mac))?;
                (!m["inventory"].is_null()).then_some(m)
            },
        );
        eprintln!("{}: power-on to inventory in {} s", vm.name, started.elapsed().as_secs());
        let s = serial(vm);
        // The image's command line names no machine.
        let banner = if vm.https {
            "rackboot-bootos: up mac= ".to_string()
        } else {
            format!("rackboot-bootos: up mac={}", vm.mac)
        };
        assert!(s.contains(&banner), "{}: BootOS banner:\n{s}", vm.name);
        if vm.uefi && !vm.https {
            assert!(s.contains("initrd=initrd.img"), "UEFI kernel line carries initrd=");
        }
        if vm.http {
            assert!(s.contains("Start HTTP Boot over IPv4"), "the firmware's HTTP boot ran:\n{s}");
        }
        let inv = &m["inventory"];
        let macs: Vec<&str> = inv["nics"].as_array().unwrap().iter().map(|n| n["mac"].as_str().unwrap()).collect();
        assert_eq!(macs, [vm.mac], "{}: NICs", vm.name);
        assert_eq!(inv["memory_bytes"], 512u64 << 20, "{}: memory as qemu -m set it", vm.name);
        let disks = inv["disks"].as_array().unwrap();
        assert!(
            disks.iter().any(|d| d["name"] == "vda" && d["size_bytes"] == DISK_BYTES),
            "{}: the 2 GiB virtio disk: {disks:?}",
            vm.name
        );
        assert_eq!(m["state"], "ready");
        assert_eq!(m["vendor"], "QEMU");
        assert_eq!(inv["firmware"]["uefi"], vm.uefi, "{}: {}", vm.name, inv["firmware"]);
        match vm.secure {
            // Enforcing, and it booted: the firmware checked the image's signature.
            true => assert_eq!(inv["firmware"]["secure_boot"], true, "{}: {}", vm.name, inv["firmware"]),
            // Off, or (firmware without the variable) unknown: never on.
            false => assert_ne!(inv["firmware"]["secure_boot"], true, "{}: {}", vm.name, inv["firmware"]),
        }
    }

    // An operator job on each VM, output and exit code back through the API.
    for vm in &vms {
        let job = net.api(
            "POST",
            "/jobs",
            Some(&format!(
                r#"{{"machine":"{}","action":{{"kind":"script","body":"uname -a; cat /proc/cmdline"}}}}"#,
                vm.mac
            )),
        );
        let id = job["jobs"][0]["id"].as_u64().unwrap();
        let done = wait_for(
            120,
            || format!("{}: job {id} did not finish:\n{}", vm.name, serial(vm)),
            || {
                let j = net.api("GET", &format!("/jobs/{id}"), None);
                j["state"].as_str().is_some_and(|s| s != "queued" && s != "running").then_some(j)
            },
        );
        assert_eq!((done["state"].as_str(), done["exit_code"].as_i64()), (Some("succeeded"), Some(0)), "{done}");
        let out = net.api("GET", &format!("/jobs/{id}/output"), None);
        let text = out["text"].as_str().unwrap();
        assert!(text.starts_with("Linux "), "{}: {text}", vm.name);
        match vm.https {
            true => assert!(text.contains("rackboot.nonce=tls") && !text.contains("rackboot.mac="), "{text}"),
            false => assert!(text.contains(&format!("rackboot.mac={}", vm.mac)), "{}: {text}", vm.name),
        }
        // BootOS's agent came in over HTTPS, pinned to this appliance's CA.
        let ca = rackboot::tls::read_certs(&net.ca()).unwrap();
        let pin = format!("rackboot.ca=sha256:{}", rackboot::tls::fingerprint(ca.last().unwrap()));
        assert!(text.contains(&pin) && text.contains("rackboot.url=https://198.18.0.1"), "{}: {text}", vm.name);
    }

    for vm in &vms {
        let ev = net.api("GET", &format!("/machines/{}/events", vm.mac), None);
        let ev = ev["events"].as_array().unwrap();
        let steps: Vec<String> = ev
            .iter()
            .map(|e| match e["kind"].as_str().unwrap() {
                "boot.asset" => format!("asset {}", e["detail"]["path"].as_str().unwrap()),
                k => k.to_string(),
            })
            .collect();
        let mut want =
            vec![if vm.https { "machine.registered" } else { "machine.discovered" }, "dhcp.offer", "dhcp.ack"];
        if vm.https {
            // The firmware fetched BootOS's image over TLS; BootOS leased, then asked for its
            // nonce over pinned TLS.
            want.extend(["asset bootos/bootos.efi", "dhcp.ack", "boot.script"]);
        } else if vm.http {
            // The firmware fetched iPXE over HTTP; iPXE asks DHCP again, then for its script.
            want.extend(["asset ipxe.efi", "dhcp.ack"]);
        }
        if !vm.https {
            want.extend(["boot.script", "asset bootos/vmlinuz", "asset bootos/initrd.img", "dhcp.ack"]);
        }
        want.extend(["agent.enrolled", "agent.inventory", "job.queued", "job.started", "job.finished"]);
        let mut at = 0;
        for step in &steps {
            if at < want.len() && step == want[at] {
                at += 1;
            }
        }
        assert_eq!(at, want.len(), "{}: timeline {steps:?} lacks (in order) {:?}", vm.name, &want[at..]);
        let offer = ev.iter().find(|e| e["kind"] == "dhcp.offer").unwrap();
        let want_arch = match (vm.http, vm.uefi) {
            (true, _) => "http-x64",
            (false, true) => "uefi-x64",
            (false, false) => "bios",
        };
        if vm.https {
            assert_eq!(offer["detail"]["arch"], "http-x64", "{offer}");
            assert_eq!(offer["detail"]["boot_file"], "https://198.18.0.1:4433/boot/files/bootos/bootos.efi", "{offer}");
            // The image alone, over TLS: nothing in the clear.
            let assets: Vec<&serde_json::Value> = ev.iter().filter(|e| e["kind"] == "boot.asset").collect();
            assert!(!assets.is_empty() && assets.iter().all(|e| e["detail"]["tls"] == true), "{assets:?}");
        } else {
            assert_eq!(offer["detail"]["arch"], want_arch, "{offer}");
        }
        if vm.http && !vm.https {
            assert_eq!(offer["detail"]["boot_file"], "http://198.18.0.1:8080/boot/files/ipxe.efi", "{offer}");
        }
        assert!(!ev.iter().any(|e| e["kind"] == "tftp.transfer"), "{}: no TFTP at all", vm.name);
        let script = ev.iter().find(|e| e["kind"] == "boot.script").unwrap();
        match vm.https {
            true => assert_eq!(script["detail"]["loader"], "image", "{script}"),
            false => assert_eq!(
                (&script["detail"]["uefi"], &script["detail"]["loader"]),
                (&vm.uefi.into(), &"ipxe".into()),
                "{script}"
            ),
        }
        // The boot script went to the VM's leased address with a nonce, and that nonce enrolled it.
        assert_eq!(script["detail"]["nonce"], true, "{script}");
        let enrolled = ev.iter().find(|e| e["kind"] == "agent.enrolled").unwrap();
        assert_eq!(enrolled["detail"]["nonce"], "valid", "{enrolled}");
        assert_eq!(enrolled["detail"]["approved"], true, "{enrolled}");
    }

    // `rackboot watch` printed each VM's boot as it happened, state changes included.
    let live = net.log("watch.log");
    for vm in &vms {
        for kind in ["dhcp.ack", "boot.script", "agent.enrolled", "agent.inventory", "job.finished"] {
            assert!(
                live.lines().any(|l| l.contains(vm.mac) && l.contains(kind)),
                "{}: rackboot watch did not show {kind}:\n{live}",
                vm.name
            );
        }
        assert!(live
            .lines()
            .any(|l| l.contains(vm.mac) && l.contains("machine.state") && l.contains("\"to\":\"ready\"")));
    }
    net.stop(watch);

    rogue_image_refused(&mut net, &image, &cacerts);

    // A power-off job: reported first, then the VM stops and qemu exits on its own.
    for (vm, idx) in vms.iter().zip(&running) {
        net.api("POST", "/jobs", Some(&format!(r#"{{"machine":"{}","action":{{"kind":"power_off"}}}}"#, vm.mac)));
        let status = wait_for(
            120,
            || format!("{}: still running after power_off:\n{}", vm.name, serial(vm)),
            || net.exited(*idx),
        );
        assert!(status.success(), "{} qemu: {}", vm.name, net.log(&format!("{}.qemu.log", vm.name)));
    }
}

/// Registers machine `mac` through the API.
fn a_machine(net: &Net, mac: &str) {
    net.api("POST", "/machines", Some(&format!(r#"{{"macs":["{mac}"]}}"#)));
}

/// qemu arguments of an OVMF VM that boots over HTTP only (no option ROM, PXE off) with the
/// boot CA (`cacerts`) for its HTTPS boot; `secure`: Secure Boot enforcing, Microsoft's keys and
/// the appliance's Secure Boot certificate in its db.
fn https_args(net: &Net, name: &str, mac: &str, cacerts: &std::path::Path, secure: bool) -> Vec<String> {
    if !secure {
        let mut args = net.qemu_args(name, mac, true, &[DISK_BYTES], true);
        for arg in args.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
            arg.push_str(",romfile=");
        }
        for opt in ["IPv4PXESupport", "IPv6PXESupport"] {
            args.extend(["-fw_cfg".into(), format!("name=opt/org.tianocore/{opt},string=n")]);
        }
        args.extend(["-fw_cfg".into(), format!("name=etc/edk2/https/cacerts,file={}", cacerts.display())]);
        return args;
    }
    let mut args = net.qemu_args_secure_boot(name, mac, &[DISK_BYTES], true);
    let vars = net.path(&format!("{name}.vars.fd"));
    let cert = net.path("secureboot.pem");
    let export = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["secureboot", "export-cert", "--config", net.path("rackboot.toml").to_str().unwrap(), "--out"])
        .arg(&cert)
        .output()
        .unwrap();
    assert!(export.status.success(), "secureboot export-cert: {}", String::from_utf8_lossy(&export.stderr));
    let vfw = concat!(env!("CARGO_MANIFEST_DIR"), "/target/validators/vfw/bin/virt-fw-vars");
    let enrol = Command::new(vfw)
        .arg("--input")
        .arg(&vars)
        .arg("--output")
        .arg(&vars)
        .args(["--add-db", "7261636b-626f-6f74-8000-000000000001"])
        .arg(&cert)
        .output()
        .unwrap_or_else(|e| panic!("{vfw} (tools/setup.sh installs it): {e}"));
    assert!(enrol.status.success(), "virt-fw-vars: {}", String::from_utf8_lossy(&enrol.stderr));
    for opt in ["IPv4PXESupport", "IPv6PXESupport", "IPv6Support"] {
        args.extend(["-fw_cfg".into(), format!("name=opt/org.tianocore/{opt},string=n")]);
    }
    args.extend(["-fw_cfg".into(), format!("name=etc/edk2/https/cacerts,file={}", cacerts.display())]);
    args
}

/// The served image swapped for one whose initrd was changed (what a server answering for the
/// appliance, even with the boot CA's key, could hand out): a Secure Boot VM fetches it over
/// HTTPS and refuses it; the genuine image back, the same VM boots and enrolls.
fn rogue_image_refused(net: &mut Net, image: &std::path::Path, cacerts: &std::path::Path) {
    let (name, mac) = ("rogue", "52:54:00:e4:00:06");
    a_machine(net, mac);
    net.api("PATCH", &format!("/machines/{mac}"), Some(r#"{"uefi_loader":"https"}"#));
    let genuine = std::fs::read(image).unwrap();
    let mut rogue = genuine.clone();
    let initrd = rackboot::uki::sections(&genuine)
        .unwrap()
        .into_iter()
        .find(|(n, _)| n == ".initrd")
        .map(|(_, b)| b.as_ptr() as usize - genuine.as_ptr() as usize)
        .expect("an .initrd section");
    rogue[initrd + 4096] ^= 0xff;
    // Written in place, as the appliance serves it; ETag and size unchanged.
    std::fs::write(image, &rogue).unwrap();
    net.add_tap(&format!("tap-{name}"));
    let args = https_args(net, name, mac, cacerts, true);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = net.srv.clone();
    let first = net.spawn(&srv, &args, &format!("{name}.qemu.log"));
    let serial_file = net.path(&format!("{name}.serial"));
    let serial = || std::fs::read_to_string(&serial_file).unwrap_or_default();
    wait_for(
        300,
        || format!("{name}: the changed image was not refused:\n{}", serial()),
        || {
            let s = serial();
            (s.contains("Access Denied") || s.contains("Security Violation")).then_some(())
        },
    );
    assert!(!serial().contains("rackboot-bootos: up"), "the changed image ran:\n{}", serial());
    let ev = net.api("GET", &format!("/machines/{mac}/events"), None).to_string();
    assert!(!ev.contains("agent.enrolled"), "{ev}");
    net.kill9(first);
    std::fs::write(image, &genuine).unwrap();
    std::fs::remove_file(&serial_file).ok();
    let again = net.spawn(&srv, &args, &format!("{name}.qemu.log"));
    wait_for(
        300,
        || format!("{name}: the genuine image did not boot:\n{}", serial()),
        || {
            let m = net.try_api("GET", &format!("/machines/{mac}"))?;
            (!m["inventory"].is_null()).then_some(())
        },
    );
    net.kill9(again);
}
