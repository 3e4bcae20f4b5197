//! arm64 machines: `qemu-system-aarch64` (the `virt` board, a Cortex-A57 under TCG) with
//! Debian's AAVMF firmware, Secure Boot enforcing with Microsoft's keys enrolled, on the lab
//! bridge. The firmware's PXE says arch 11; rackboot hands it Debian's signed arm64 shim, which
//! loads the signed arm64 network GRUB from beside it; that GRUB reads its per-MAC config over
//! TFTP, whose plan is the discovery profile's arm64 files: BootOS for arm64 (Debian's signed
//! arm64 kernel, the agent cross-built). The agent enrolls with its boot's nonce, reports an
//! `aarch64` inventory with Secure Boot on, and runs a job. Then the same on an IPv6-only
//! segment: a second VM's PXEv6 gets `tftp://[fd18::1]/shimaa64.efi` from DHCPv6, and its agent
//! enrolls from an fd18:: address. `#[ignore]`d like every VM test; CI runs it.

use std::process::Command;

use crate::netns::{full_config, ipv6_only_config, require, sh, wait_for, Net};

const MAC: &str = "52:54:00:a6:40:01";
const MAC6: &str = "52:54:00:a6:40:06";

#[test]
#[ignore = "e2e: needs root, ip netns, qemu-system-aarch64, qemu-efi-aarch64 and bootos/build.sh --arch arm64"]
fn arm64_vms_boot_bootos_through_the_signed_arm64_chain_and_enroll_on_ipv4_and_on_ipv6() {
    require(&["ip", "curl", "qemu-system-aarch64", "aarch64-linux-gnu-gcc", "cpio", "zstd", "apt-get"]);
    let mut net = Net::new("a6");
    let data = net.path("data");
    let assets = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/vm-lab/assets.sh"))
        .arg("--arm64")
        .arg(data.join("boot"))
        .output()
        .unwrap();
    assert!(assets.status.success(), "assets: {}", String::from_utf8_lossy(&assets.stderr));
    let appliance = net.start_rackboot(&full_config(&data));

    // On IPv4.
    let started = std::time::Instant::now();
    start_vm(&mut net, "arm", MAC, &[]);
    let serial = |net: &Net, name: &str| {
        format!("{}\n{}", net.log(&format!("{name}.serial")), net.log(&format!("{name}.qemu.log")))
    };
    let from = enrolled(&net, MAC, || serial(&net, "arm"));
    eprintln!("arm64: power-on to enrollment in {} s, from {from}", started.elapsed().as_secs());
    assert!(from.starts_with("198.18.0."), "{from}");
    let inv = inventory(&net, MAC, || serial(&net, "arm"));
    assert_eq!(inv["arch"], "aarch64", "{inv}");
    assert_eq!(inv["cpu"]["model"], "ARM Cortex-A57", "{inv}");
    assert_eq!((inv["firmware"]["uefi"].as_bool(), inv["firmware"]["secure_boot"].as_bool()), (Some(true), Some(true)));
    assert!(inv["kernel"].as_str().is_some_and(|k| k.ends_with("-arm64")), "Debian's arm64 kernel: {inv}");
    assert_eq!(net.api("GET", &format!("/machines/{MAC}"), None)["last_arch"], "uefi-arm64");

    let ev = net.api("GET", &format!("/machines/{MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let offer = ev.iter().find(|e| e["kind"] == "dhcp.offer").expect("a DHCP offer");
    assert_eq!(
        (offer["detail"]["arch"].as_str(), offer["detail"]["boot_file"].as_str()),
        (Some("uefi-arm64"), Some("shimaa64.efi"))
    );
    let tftp = transfers(ev);
    for want in ["shimaa64.efi", "grubaa64.efi", "bootos/arm64/vmlinuz", "bootos/arm64/initrd.img"] {
        assert!(tftp.iter().any(|(f, _, _)| f.trim_start_matches('/') == want), "{want} over TFTP: {tftp:?}");
    }
    for (file, bytes, ms) in tftp.iter().filter(|(_, bytes, _)| *bytes > 1_000_000) {
        eprintln!("arm64: {file} over TFTP: {bytes} bytes in {ms} ms");
    }
    let script = ev.iter().find(|e| e["kind"] == "boot.script").expect("a boot.script event");
    assert_eq!((script["detail"]["loader"].as_str(), script["detail"]["nonce"].as_bool()), (Some("grub"), Some(true)));
    let text = job(&net, MAC, "uname -m; cat /proc/cmdline", || serial(&net, "arm"));
    assert!(text.starts_with("aarch64") && text.contains("console=ttyAMA0"), "{text}");
    eprintln!("arm64: power-on to a job's output in {} s", started.elapsed().as_secs());

    // On an IPv6-only segment: the same appliance data, DHCPv6 only, a second VM whose firmware
    // does PXE on IPv6 only.
    net.stop(appliance);
    sh(&format!("ip -n {} addr add fd18::1/64 dev br0 nodad", net.srv));
    net.start_rackboot(&ipv6_only_config(&data));
    let started = std::time::Instant::now();
    start_vm(&mut net, "arm6", MAC6, &[("IPv4PXESupport", "n"), ("IPv6Support", "y"), ("IPv6PXESupport", "y")]);
    let from = enrolled(&net, MAC6, || serial(&net, "arm6"));
    eprintln!("arm64 on IPv6: power-on to enrollment in {} s, from {from}", started.elapsed().as_secs());
    assert!(from.starts_with("fd18::"), "enrolled over IPv6: {from}");
    let ev = net.api("GET", &format!("/machines/{MAC6}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let urls: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "dhcp6.reply").filter_map(|e| e["detail"]["boot_url"].as_str()).collect();
    assert!(urls.contains(&"tftp://[fd18::1]/shimaa64.efi"), "the arm64 shim over TFTP on IPv6: {urls:?}");
    assert!(ev.iter().all(|e| e["kind"] != "dhcp.ack"), "no DHCPv4 at all");
    // The firmware released its lease as it started shim; GRUB asked for its config from that
    // address moments later, and it was still the machine's: the boot got a nonce.
    let script = ev.iter().find(|e| e["kind"] == "boot.script").expect("a boot.script event");
    assert_eq!(
        (script["detail"]["loader"].as_str(), script["detail"]["nonce"].as_bool()),
        (Some("grub"), Some(true)),
        "{script}"
    );
    let enrolled = ev.iter().find(|e| e["kind"] == "agent.enrolled").expect("an agent.enrolled event");
    assert_eq!(
        (enrolled["detail"]["nonce"].as_str(), enrolled["detail"]["approved"].as_bool()),
        (Some("valid"), Some(true)),
        "{enrolled}"
    );
    let text = job(&net, MAC6, "uname -m; cat /proc/cmdline", || serial(&net, "arm6"));
    assert!(text.starts_with("aarch64") && text.contains("rackboot.url=https://[fd18::1]"), "{text}");
}

/// Starts an arm64 VM `name` on a new tap, its firmware's network options set by `fw_cfg`.
fn start_vm(net: &mut Net, name: &str, mac: &str, fw_cfg: &[(&str, &str)]) {
    let tap = format!("tap-{name}");
    net.add_tap(&tap);
    let vars = net.path(&format!("{name}.vars.fd"));
    std::fs::copy("/usr/share/AAVMF/AAVMF_VARS.ms.fd", &vars).unwrap();
    let mut args: Vec<String> = [
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
        // AAVMF waits about 4 s in its boot manager before PXE (its timeout's default, where
        // OVMF's is 0); a boot menu with no wait makes it start at once.
        "-boot",
        "order=n,menu=on,splash-time=0",
        "-drive",
        "if=pflash,format=raw,readonly=on,file=/usr/share/AAVMF/AAVMF_CODE.ms.fd",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    args.extend([
        "-drive".into(),
        format!("if=pflash,format=raw,file={}", vars.display()),
        "-serial".into(),
        format!("file:{}", net.path(&format!("{name}.serial")).display()),
        "-netdev".into(),
        format!("tap,id=n0,ifname={tap},script=no,downscript=no"),
        // No option ROM: the firmware's own PXE (qemu's iPXE ROM is x86 and unsigned).
        "-device".into(),
        format!("virtio-net-pci,netdev=n0,mac={mac},romfile="),
        "-device".into(),
        "virtio-rng-pci".into(),
    ]);
    for (k, v) in fw_cfg {
        args.extend(["-fw_cfg".into(), format!("name=opt/org.tianocore/{k},string={v}")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = net.srv.clone();
    net.spawn(&srv, &args, &format!("{name}.qemu.log"));
}

/// Where the machine's agent enrolled from, once it has.
fn enrolled(net: &Net, mac: &str, serial: impl Fn() -> String) -> String {
    wait_for(
        900,
        || format!("{mac} did not enroll:\n{}", serial()),
        || net.try_api("GET", &format!("/machines/{mac}/agent"))?["enrolled_from"].as_str().map(str::to_string),
    )
}

/// The machine's inventory, which follows its enrollment.
fn inventory(net: &Net, mac: &str, serial: impl Fn() -> String) -> serde_json::Value {
    wait_for(
        60,
        || format!("no inventory from {mac}:\n{}", serial()),
        || {
            let m = net.api("GET", &format!("/machines/{mac}"), None);
            m["inventory"]["arch"].is_string().then(|| m["inventory"].clone())
        },
    )
}

/// The completed TFTP transfers on a timeline: file, bytes, milliseconds.
fn transfers(ev: &[serde_json::Value]) -> Vec<(String, u64, u64)> {
    ev.iter()
        .filter(|e| e["kind"] == "tftp.transfer" && e["detail"]["outcome"] == "complete")
        .map(|e| {
            let d = &e["detail"];
            (
                d["file"].as_str().unwrap_or_default().to_string(),
                d["bytes"].as_u64().unwrap_or(0),
                d["ms"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// Runs `script` on the machine's agent and returns its output (the job must succeed).
fn job(net: &Net, mac: &str, script: &str, serial: impl Fn() -> String) -> String {
    let body = serde_json::json!({"machine": mac, "action": {"kind": "script", "body": script}});
    let id = net.api("POST", "/jobs", Some(&body.to_string()))["jobs"][0]["id"].as_u64().unwrap();
    let done = wait_for(
        180,
        || format!("job {id}:\n{}", serial()),
        || {
            let j = net.api("GET", &format!("/jobs/{id}"), None);
            j["state"].as_str().is_some_and(|s| s != "queued" && s != "running").then_some(j)
        },
    );
    assert_eq!(done["state"], "succeeded", "{done}");
    net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap().to_string()
}
