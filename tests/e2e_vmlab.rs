//! vm-lab end to end: real firmware PXE-boots through rackboot. One SeaBIOS VM and one OVMF
//! (UEFI) VM, each with qemu's iPXE option ROM on virtio-net, boot a kernel and a busybox
//! initramfs that prints a marker on the serial console; the test reads the marker and the
//! machine's timeline through the API. Needs root, qemu, OVMF and the lab assets, so it is
//! `#[ignore]`d like the other end-to-end tests; CI runs it.

mod netns;

use std::process::Command;
use std::time::{Duration, Instant};

use netns::{full_config, require, Net};

struct Vm {
    name: &'static str,
    mac: &'static str,
    uefi: bool,
}

fn qemu_args(net: &Net, vm: &Vm) -> Vec<String> {
    let serial = net.path(&format!("{}.serial", vm.name));
    let mut a: Vec<String> =
        ["qemu-system-x86_64", "-accel", "tcg", "-m", "512", "-display", "none", "-no-reboot", "-boot", "n"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    a.extend(["-serial".into(), format!("file:{}", serial.display())]);
    a.extend(["-netdev".into(), format!("tap,id=n0,ifname=tap-{},script=no,downscript=no", vm.name)]);
    a.extend(["-device".into(), format!("virtio-net-pci,netdev=n0,mac={}", vm.mac)]);
    if vm.uefi {
        let vars = net.path(&format!("{}.vars.fd", vm.name));
        std::fs::copy("/usr/share/OVMF/OVMF_VARS_4M.fd", &vars).unwrap();
        a.extend(["-machine".into(), "q35".into()]);
        a.extend(["-drive".into(), "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd".into()]);
        a.extend(["-drive".into(), format!("if=pflash,format=raw,file={}", vars.display())]);
    }
    a
}

#[test]
#[ignore = "e2e: needs root, ip netns, qemu-system-x86, ipxe-qemu, ovmf, curl and vm-lab/assets.sh"]
fn seabios_and_ovmf_vms_pxe_boot_through_rackboot() {
    require(&["ip", "curl", "qemu-system-x86_64", "cpio", "apt-get"]);
    assert!(std::path::Path::new("/usr/share/OVMF/OVMF_CODE_4M.fd").exists(), "needs the ovmf package");
    let mut net = Net::new("vm");
    let data = net.path("data");
    let assets =
        Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/vm-lab/assets.sh")).arg(data.join("boot")).output().unwrap();
    assert!(assets.status.success(), "assets: {}", String::from_utf8_lossy(&assets.stderr));
    net.start_rackboot(&full_config(&data));
    let vms = [
        Vm { name: "bios", mac: "52:54:00:e4:00:01", uefi: false },
        Vm { name: "uefi", mac: "52:54:00:e4:00:02", uefi: true },
    ];
    let srv = net.srv.clone();
    let mut running = Vec::new();
    for vm in &vms {
        net.add_tap(&format!("tap-{}", vm.name));
        let args = qemu_args(&net, vm);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        running.push(net.spawn(&srv, &args, &format!("{}.qemu.log", vm.name)));
    }
    // The initramfs powers the VM off after printing its marker, so qemu exits by itself.
    let deadline = Instant::now() + Duration::from_secs(300);
    for (vm, idx) in vms.iter().zip(&running) {
        loop {
            if let Some(status) = net.exited(*idx) {
                assert!(status.success(), "{} qemu failed: {}", vm.name, net.log(&format!("{}.qemu.log", vm.name)));
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} did not finish booting:\n{}",
                vm.name,
                net.log(&format!("{}.serial", vm.name))
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    for vm in &vms {
        let serial = net.log(&format!("{}.serial", vm.name));
        assert!(
            serial.contains(&format!("RACKBOOT-LAB-MARKER booted mac={}", vm.mac)),
            "{}: no marker:\n{serial}",
            vm.name
        );
        if vm.uefi {
            assert!(serial.contains("initrd=initrd.img"), "UEFI kernel line carries initrd=");
        }
        let ev = net.api("GET", &format!("/machines/{}/events", vm.mac), None);
        let ev = ev["events"].as_array().unwrap();
        let steps: Vec<String> = ev
            .iter()
            .map(|e| match e["kind"].as_str().unwrap() {
                "boot.asset" => format!("asset {}", e["detail"]["path"].as_str().unwrap()),
                k => k.to_string(),
            })
            .collect();
        assert_eq!(
            steps,
            [
                "machine.discovered",
                "dhcp.offer",
                "dhcp.ack",
                "boot.script",
                "asset bootos/vmlinuz",
                "asset bootos/initrd.img"
            ],
            "{}: timeline",
            vm.name
        );
        let want_arch = if vm.uefi { "uefi-x64" } else { "bios" };
        assert_eq!(ev[1]["detail"]["arch"], want_arch);
        assert_eq!(ev[3]["detail"]["uefi"], vm.uefi);
    }
}
