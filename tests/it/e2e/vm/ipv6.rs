//! An OVMF VM on an IPv6-only lab segment: no DHCPv4 server runs and the VM never has an IPv4
//! address. Its firmware's PXEv6 (no option ROM, IPv4 PXE off) asks rackboot's DHCPv6 server,
//! gets `tftp://[fd18::1]/` its loader (iPXE) and fetches it over TFTP on IPv6; iPXE asks
//! DHCPv6 again (user class iPXE), fetches its script over HTTP on IPv6, whose kernel, initrd
//! and agent URLs stay on IPv6; BootOS takes its address from the router advertisement (SLAAC)
//! and its agent enrolls over HTTPS on IPv6 with its boot's nonce, from an fd18:: address, and
//! runs a job. Then a task installs the lab image over IPv6 (the image's URL, the installed
//! agent's URL and cloud-init's on the IPv6 address): the VM reboots from its disk, the
//! installed system takes its address from the advertisement and its agent checks in over
//! IPv6, and the machine is `installed`. `#[ignore]`d like every VM test; CI runs it.

use std::process::Command;

use crate::netns::{require, sh, wait_for, Net};

const MAC: &str = "52:54:00:e6:06:40";

#[test]
#[ignore = "e2e: needs root, ip netns, qemu, ovmf and bootos/build.sh"]
fn an_ovmf_vm_on_an_ipv6_only_segment_boots_bootos_enrolls_and_is_installed_over_ipv6() {
    require(&["ip", "curl", "qemu-system-x86_64", "cpio", "zstd", "apt-get"]);
    let mut net = Net::new("6v");
    let srv = net.srv.clone();
    sh(&format!("ip -n {srv} addr add fd18::1/64 dev br0 nodad"));
    let data = net.path("data");
    let assets =
        Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/vm-lab/assets.sh")).arg(data.join("boot")).output().unwrap();
    assert!(assets.status.success(), "assets: {}", String::from_utf8_lossy(&assets.stderr));
    let image = crate::netns::lab_image(&data.join("boot/images"));
    net.start_rackboot(&crate::netns::ipv6_only_config(&data));
    net.add_tap("tap-six");
    let mut args = net.qemu_args("six", MAC, true, &[2 << 30], false);
    // The firmware's own network stack, IPv6 only: no option ROM, IPv4 PXE off, IPv6 on (the
    // lab's other VMs turn it off).
    if let Some(i) = args.iter().position(|a| a == "name=opt/org.tianocore/IPv6Support,string=no") {
        args.drain(i - 1..=i);
    }
    for arg in args.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
        arg.push_str(",romfile=");
    }
    for (k, v) in [("IPv4PXESupport", "n"), ("IPv6Support", "y"), ("IPv6PXESupport", "y")] {
        args.extend(["-fw_cfg".into(), format!("name=opt/org.tianocore/{k},string={v}")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    net.spawn(&srv, &args, "six.qemu.log");
    let serial = || net.log("six.serial");
    let agent = wait_for(
        600,
        || format!("no enrollment over IPv6:\n{}", serial()),
        || {
            let a = net.try_api("GET", &format!("/machines/{MAC}/agent"))?;
            a["enrolled_from"].as_str().map(str::to_string)
        },
    );
    eprintln!("ipv6-only: power-on to enrollment in {} s, from {agent}", started.elapsed().as_secs());
    assert!(agent.starts_with("fd18::"), "enrolled over IPv6: {agent}");
    let ev = net.api("GET", &format!("/machines/{MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let urls: Vec<&str> =
        ev.iter().filter(|e| e["kind"] == "dhcp6.reply").filter_map(|e| e["detail"]["boot_url"].as_str()).collect();
    assert!(
        urls.iter().any(|u| u.starts_with("tftp://[fd18::1]/")),
        "the firmware's loader over TFTP on IPv6: {urls:?}"
    );
    assert!(urls.iter().any(|u| u.starts_with("http://[fd18::1]:8080/boot/ipxe")), "iPXE's script: {urls:?}");
    let tftp: Vec<_> = ev.iter().filter(|e| e["kind"] == "tftp.transfer").map(|e| &e["detail"]).collect();
    assert!(
        tftp.iter().any(|d| d["outcome"] == "complete" && d["file"].as_str().is_some_and(|f| f.ends_with(".efi"))),
        "the loader fetched over TFTP on IPv6: {tftp:?}"
    );
    let script = ev.iter().find(|e| e["kind"] == "boot.script").expect("a boot.script event");
    assert_eq!(script["detail"]["nonce"], true, "a nonce for the boot: {script}");
    assert!(ev.iter().all(|e| e["kind"] != "dhcp.ack"), "no DHCPv4 at all");
    // A job on BootOS over the IPv6 agent channel; the kernel line names the IPv6 URL.
    let job = net.api(
        "POST",
        "/jobs",
        Some(&format!(r#"{{"machine":"{MAC}","action":{{"kind":"script","body":"cat /proc/cmdline; ip -4 addr show scope global"}}}}"#)),
    );
    let id = job["jobs"][0]["id"].as_u64().unwrap();
    let done = wait_for(
        120,
        || format!("job {id}:\n{}", serial()),
        || {
            let j = net.api("GET", &format!("/jobs/{id}"), None);
            j["state"].as_str().is_some_and(|s| s != "queued" && s != "running").then_some(j)
        },
    );
    assert_eq!(done["state"], "succeeded", "{done}");
    let text = net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap().to_string();
    assert!(text.contains("rackboot.url=https://[fd18::1]"), "{text}");
    assert!(!text.contains("inet "), "no IPv4 address on the VM: {text}");

    // Installed over IPv6: image, identity, reboot from the disk, the installed agent.
    let run = super::install(&net, MAC, image, "six-{n:02}", serial);
    assert_eq!(run["state"], "installed", "{run}\n{}", serial());
    eprintln!("ipv6-only: power-on to installed in {} s", started.elapsed().as_secs());
    let ev = net.api("GET", &format!("/machines/{MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let back = ev.iter().rev().find(|e| e["kind"] == "agent.enrolled").expect("the installed agent enrolled");
    assert!(back["detail"]["from"].as_str().is_some_and(|f| f.starts_with("fd18::")), "{back}");
    let job = net.api(
        "POST",
        "/jobs",
        Some(&format!(r#"{{"machine":"{MAC}","action":{{"kind":"script","body":"hostname; cat /proc/cmdline"}}}}"#)),
    );
    let id = job["jobs"][0]["id"].as_u64().unwrap();
    wait_for(
        120,
        || format!("job {id} on the installed system"),
        || {
            let j = net.api("GET", &format!("/jobs/{id}"), None);
            j["state"].as_str().is_some_and(|s| s != "queued" && s != "running").then_some(())
        },
    );
    let out = net.api("GET", &format!("/jobs/{id}/output"), None)["text"].as_str().unwrap().to_string();
    assert!(
        out.starts_with("six-01") && out.contains("root=") && !out.contains("rackboot.url="),
        "the installed system: {out}"
    );
}
