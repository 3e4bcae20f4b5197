//! UEFI HTTP Boot end to end: an OVMF VM (Secure Boot off) whose firmware may only boot over
//! HTTP (its PXE is switched off through fw_cfg, and the appliance runs no TFTP at all) asks
//! DHCP as an HTTP client (arch 16, vendor class "HTTPClient"), gets iPXE's URL with "HTTPClient"
//! in the answer, fetches iPXE over HTTP, and iPXE boots BootOS from its per-MAC script; the
//! agent enrolls. Needs root, qemu, OVMF and the lab assets: `#[ignore]`d like the other
//! end-to-end tests; CI runs it.

use std::time::{Duration, Instant};

use crate::netns::{full_config, require, vm_lab, Net};

const MAC: &str = "52:54:00:e6:10:01";

#[test]
#[ignore = "e2e: needs root, ip netns, qemu, ovmf, curl and bootos/build.sh"]
fn an_ovmf_vm_http_boots_bootos_with_no_tftp_at_all() {
    require(&["ip", "curl", "qemu-system-x86_64", "cpio", "zstd", "apt-get"]);
    let mut net = Net::new("hb");
    let data = net.path("data");
    vm_lab("assets.sh", &data.join("boot"));
    net.start_rackboot(&format!("{}\n[tftp]\nenabled = false\n", full_config(&data)));
    let port69 = net.run(&net.srv, "ss -uln 'sport = :69' | tail -n +2");
    assert!(String::from_utf8_lossy(&port69.stdout).trim().is_empty(), "nothing may listen on port 69");

    net.add_tap("tap-hb");
    let mut args = net.qemu_args("hb", MAC, true, &[1 << 30], true);
    // The firmware's own network stack (no iPXE option ROM), with PXE off: HTTP boot only.
    for arg in args.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
        arg.push_str(",romfile=");
    }
    args.extend(["-fw_cfg".into(), "name=opt/org.tianocore/IPv4PXESupport,string=n".into()]);
    args.extend(["-fw_cfg".into(), "name=opt/org.tianocore/IPv6PXESupport,string=n".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = net.srv.clone();
    let started = Instant::now();
    net.spawn(&srv, &args, "hb.qemu.log");
    let serial = || String::from_utf8_lossy(&std::fs::read(net.path("hb.serial")).unwrap_or_default()).into_owned();
    let deadline = started + Duration::from_secs(600);
    let m = loop {
        if let Some(m) = net.try_api("GET", &format!("/machines/{MAC}")).filter(|m| !m["inventory"].is_null()) {
            break m;
        }
        assert!(Instant::now() < deadline, "no inventory from the HTTP-booted VM:\n{}", serial());
        std::thread::sleep(Duration::from_millis(500));
    };
    eprintln!("HTTP boot VM: power-on to inventory in {} s", started.elapsed().as_secs());
    let s = serial();
    assert!(s.contains("Start HTTP Boot over IPv4"), "the firmware's HTTP boot ran:\n{s}");
    assert!(s.contains(&format!("rackboot-bootos: up mac={MAC}")), "BootOS banner:\n{s}");
    assert_eq!(m["inventory"]["firmware"]["uefi"], true);
    // Off, or (firmware without the variable) unknown: never on.
    assert_ne!(m["inventory"]["firmware"]["secure_boot"], true, "{}", m["inventory"]);

    let ev = net.api("GET", &format!("/machines/{MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let offer = ev.iter().find(|e| e["kind"] == "dhcp.offer").unwrap();
    assert_eq!(offer["detail"]["arch"], "http-x64", "{offer}");
    assert_eq!(offer["detail"]["boot_file"], "http://198.18.0.1:8080/boot/files/ipxe.efi", "{offer}");
    let fetched = |path: &str| ev.iter().any(|e| e["kind"] == "boot.asset" && e["detail"]["path"] == path);
    for path in ["ipxe.efi", "bootos/vmlinuz", "bootos/initrd.img"] {
        assert!(fetched(path), "{path} over HTTP: {ev:?}");
    }
    assert!(!ev.iter().any(|e| e["kind"] == "tftp.transfer"), "no TFTP at all");
    let script = ev.iter().find(|e| e["kind"] == "boot.script").unwrap();
    assert_eq!(script["detail"]["loader"], "ipxe", "{script}");
}
