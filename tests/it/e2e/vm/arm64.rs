//! An arm64 machine: `qemu-system-aarch64` (the `virt` board, a Cortex-A57 under TCG) with
//! Debian's AAVMF firmware, Secure Boot enforcing with Microsoft's keys enrolled, on the lab
//! bridge. Its firmware's PXE says arch 11; rackboot hands it Debian's signed arm64 shim, which
//! loads the signed arm64 network GRUB from beside it; that GRUB reads its per-MAC config over
//! TFTP, whose plan is the discovery profile's arm64 files: BootOS for arm64 (Debian's signed
//! arm64 kernel, the agent cross-built). The agent enrolls with its boot's nonce, reports an
//! `aarch64` inventory with Secure Boot on, and runs a job. `#[ignore]`d like every VM test; CI
//! runs it.

use std::process::Command;

use crate::netns::{full_config, require, wait_for, Net};

const MAC: &str = "52:54:00:a6:40:01";

#[test]
#[ignore = "e2e: needs root, ip netns, qemu-system-aarch64, qemu-efi-aarch64 and bootos/build.sh --arch arm64"]
fn an_arm64_vm_boots_bootos_through_the_signed_arm64_chain_and_enrolls() {
    require(&["ip", "curl", "qemu-system-aarch64", "aarch64-linux-gnu-gcc", "cpio", "zstd", "apt-get"]);
    let mut net = Net::new("a6");
    let data = net.path("data");
    let assets = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/vm-lab/assets.sh"))
        .arg("--arm64")
        .arg(data.join("boot"))
        .output()
        .unwrap();
    assert!(assets.status.success(), "assets: {}", String::from_utf8_lossy(&assets.stderr));
    net.start_rackboot(&full_config(&data));
    net.add_tap("tap-arm");
    let vars = net.path("arm.vars.fd");
    std::fs::copy("/usr/share/AAVMF/AAVMF_VARS.ms.fd", &vars).unwrap();
    let serial = net.path("arm.serial");
    let args: Vec<String> = [
        "qemu-system-aarch64",
        "-machine",
        "virt",
        "-cpu",
        "cortex-a57",
        "-accel",
        "tcg",
        "-smp",
        "2",
        "-m",
        "1024",
        "-display",
        "none",
        "-boot",
        "n",
        "-drive",
        "if=pflash,format=raw,readonly=on,file=/usr/share/AAVMF/AAVMF_CODE.ms.fd",
    ]
    .into_iter()
    .map(String::from)
    .chain([
        "-drive".into(),
        format!("if=pflash,format=raw,file={}", vars.display()),
        "-serial".into(),
        format!("file:{}", serial.display()),
        "-netdev".into(),
        "tap,id=n0,ifname=tap-arm,script=no,downscript=no".into(),
        // No option ROM: the firmware's own PXE (qemu's iPXE ROM is x86 and unsigned).
        "-device".into(),
        format!("virtio-net-pci,netdev=n0,mac={MAC},romfile="),
    ])
    .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let srv = net.srv.clone();
    net.spawn(&srv, &args, "arm.qemu.log");
    let serial = || format!("{}\n{}", net.log("arm.serial"), net.log("arm.qemu.log"));
    let from = wait_for(
        900,
        || format!("the arm64 VM did not enroll:\n{}", serial()),
        || {
            let a = net.try_api("GET", &format!("/machines/{MAC}/agent"))?;
            a["enrolled_from"].as_str().map(str::to_string)
        },
    );
    eprintln!("arm64: power-on to enrollment in {} s, from {from}", started.elapsed().as_secs());

    // The inventory follows the enrollment.
    let machine = wait_for(
        60,
        || format!("no inventory:\n{}", serial()),
        || Some(net.api("GET", &format!("/machines/{MAC}"), None)).filter(|m| m["inventory"]["arch"].is_string()),
    );
    assert_eq!(machine["last_arch"], "uefi-arm64", "{machine}");
    let inv = &machine["inventory"];
    assert_eq!(inv["arch"], "aarch64", "{inv}");
    assert_eq!(inv["cpu"]["model"], "ARM Cortex-A57", "{inv}");
    assert_eq!((inv["firmware"]["uefi"].as_bool(), inv["firmware"]["secure_boot"].as_bool()), (Some(true), Some(true)));
    assert!(inv["kernel"].as_str().is_some_and(|k| k.ends_with("-arm64")), "Debian's arm64 kernel: {inv}");

    let ev = net.api("GET", &format!("/machines/{MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let offer = ev.iter().find(|e| e["kind"] == "dhcp.offer").expect("a DHCP offer");
    assert_eq!(
        (offer["detail"]["arch"].as_str(), offer["detail"]["boot_file"].as_str()),
        (Some("uefi-arm64"), Some("shimaa64.efi"))
    );
    let files: Vec<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "tftp.transfer" && e["detail"]["outcome"] == "complete")
        .filter_map(|e| e["detail"]["file"].as_str())
        .collect();
    for want in ["shimaa64.efi", "grubaa64.efi", "bootos/arm64/vmlinuz", "bootos/arm64/initrd.img"] {
        assert!(files.iter().any(|f| f.trim_start_matches('/') == want), "{want} over TFTP: {files:?}");
    }
    let script = ev.iter().find(|e| e["kind"] == "boot.script").expect("a boot.script event");
    assert_eq!((script["detail"]["loader"].as_str(), script["detail"]["nonce"].as_bool()), (Some("grub"), Some(true)));

    let job = net.api(
        "POST",
        "/jobs",
        Some(&format!(r#"{{"machine":"{MAC}","action":{{"kind":"script","body":"uname -m; cat /proc/cmdline"}}}}"#)),
    );
    let id = job["jobs"][0]["id"].as_u64().unwrap();
    let done = wait_for(
        180,
        || format!("job {id}:\n{}", serial()),
        || {
            let j = net.api("GET", &format!("/jobs/{id}"), None);
            j["state"].as_str().is_some_and(|s| s != "queued" && s != "running").then_some(j)
        },
    );
    assert_eq!(done["state"], "succeeded", "{done}");
    let text = net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap().to_string();
    assert!(text.starts_with("aarch64") && text.contains("console=ttyAMA0"), "{text}");
    eprintln!("arm64: power-on to a job's output in {} s", started.elapsed().as_secs());
}
