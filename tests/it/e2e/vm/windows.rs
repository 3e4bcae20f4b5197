//! The Windows path end to end, with stand-ins where Windows itself would be (no Windows media
//! exists here; a real Windows install was not run):
//!
//! - media: a tree shaped like an install ISO (mixed-case names, both BCDs, boot.sdi, setup.exe)
//!   whose `boot.wim` is a real two-image WIM made by `wimcapture` and `wimappend`, whose bootable
//!   image holds WinPE's `startnet.cmd` and, as
//!   `Windows/Boot/EFI/bootmgfw.efi`, a stand-in EFI program (GRUB built by grub-mkstandalone
//!   that fetches `\Boot\BCD` over TFTP the way the boot manager does and prints it);
//! - `rackboot windows import` (the CLI) takes the boot manager out of the WIM and puts a
//!   `startnet.cmd` mapping the share and a `winpeshl.ini` running it into that image (read
//!   back with wimextract);
//! - a UEFI VM pinned to the Windows profile is handed the media's boot manager by DHCP, the
//!   firmware runs it, and its backslash request is answered from that VM's media;
//! - a second machine (a udhcpc client) fetches its boot manager and BCD with atftp, which
//!   renders its answer file onto the share; smbclient reads the share byte for byte, finds the
//!   answer file by the name WinPE's getmac gives, and cannot write;
//! - smbd killed is started again, and stopping rackboot stops smbd.

use std::time::Instant;

use crate::netns::{full_config, require, sh, Net};

const VM_MAC: &str = "52:54:00:e7:00:01";
const CLI_MAC: &str = "52:54:00:e7:00:02";
const MEDIA: &str = "w-standin";

/// The stand-in boot manager: what it prints proves it ran and what TFTP gave it.
const STANDIN_CFG: &str = r#"echo "STANDIN-BOOTMGFW running"
if [ -z "$net_default_ip" ]; then net_bootp; fi
cat '(tftp,198.18.0.1)/\Boot\BCD'
echo
echo "STANDIN-BOOTMGFW done"
sleep 600
"#;

fn write(path: &std::path::Path, body: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
}

/// Builds the stand-in media under `src`; returns the stand-in boot manager's bytes.
fn standin_media(net: &Net, src: &std::path::Path) -> Vec<u8> {
    let cfg = net.path("standin.cfg");
    std::fs::write(&cfg, STANDIN_CFG).unwrap();
    let efi = net.path("standin.efi");
    let mods = "efinet tftp net echo cat test sleep normal";
    sh(&format!(
        "grub-mkstandalone -O x86_64-efi -o {} --install-modules='{mods}' --modules='{mods}' --locales= --fonts= --themes= boot/grub/grub.cfg={}",
        efi.display(),
        cfg.display()
    ));
    let standin = std::fs::read(&efi).unwrap();
    // Two images, as on install media: plain WinPE (1) and Setup (2, the bootable one).
    let (pe, setup) = (net.path("pe"), net.path("pe-setup"));
    write(&pe.join("Windows/System32/startnet.cmd"), b"wpeinit\r\n");
    write(&setup.join("Windows/System32/startnet.cmd"), b"wpeinit\r\n");
    write(&setup.join("Windows/Boot/EFI/bootmgfw.efi"), &standin);
    write(&setup.join("setup.exe"), b"MZ interactive setup");
    std::fs::create_dir_all(src.join("sources")).unwrap();
    let wim = src.join("sources/boot.wim");
    sh(&format!("wimcapture {} {} WinPE >/dev/null", pe.display(), wim.display()));
    sh(&format!("wimappend {} {} Setup --boot >/dev/null", setup.display(), wim.display()));
    write(&src.join("EFI/Microsoft/Boot/BCD"), b"STANDIN-BCD-UEFI");
    write(&src.join("Boot/BCD"), b"STANDIN-BCD-BIOS");
    write(&src.join("Boot/boot.sdi"), b"STANDIN-SDI");
    let setup: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    write(&src.join("setup.exe"), &setup);
    standin
}

fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    crate::netns::wait_for(secs, || format!("{what} within {secs} s"), || f().then_some(()))
}

#[test]
#[ignore = "e2e: needs root, ip netns, qemu, ovmf, samba, smbclient, wimtools, grub-efi-amd64-bin, atftp, udhcpc"]
fn a_windows_profile_boots_its_media_boot_manager_and_the_share_serves_the_media_read_only() {
    require(&[
        "ip",
        "qemu-system-x86_64",
        "smbd",
        "smbclient",
        "wimcapture",
        "wimextract",
        "grub-mkstandalone",
        "atftp",
    ]);
    require(&["udhcpc", "sha256sum"]);
    let mut net = Net::new("win");
    // smbd serves guests as `nobody`, who must reach the share through the lab's directory.
    sh(&format!("chmod 755 {}", net.dir.path().display()));
    let data = net.path("data");
    let src = net.path("media");
    let standin = standin_media(&net, &src);
    let config = format!(
        "{}\n[windows]\nshare = true\n[[boot.profiles]]\nname = \"win\"\nwindows = \"{MEDIA}\"\n",
        full_config(&data)
    );
    let cfg = net.path("rackboot.toml");
    std::fs::write(&cfg, &config).unwrap();

    // The import, as an operator runs it on the appliance (which finds its address on br0).
    let bin = env!("CARGO_BIN_EXE_rackboot");
    let import =
        net.run(&net.srv, &format!("{bin} windows import {MEDIA} {} --config {}", src.display(), cfg.display()));
    let said = String::from_utf8_lossy(&import.stdout).into_owned();
    assert!(import.status.success(), "import: {said}{}", String::from_utf8_lossy(&import.stderr));
    assert!(said.contains("bootmgfw.efi from boot.wim image 2"), "{said}");
    let media = data.join("boot/windows").join(MEDIA);
    assert_eq!(std::fs::read(media.join("bootmgfw.efi")).unwrap(), standin, "the boot manager out of the WIM");
    let extract = |image: u32, file: &str| {
        let wim = media.join("sources/boot.wim");
        let out = sh(&format!("wimextract {} {image} /Windows/System32/{file} --to-stdout", wim.display()));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let startnet = extract(2, "startnet.cmd");
    assert!(startnet.contains(r"net use R: \\198.18.0.1\rackboot"), "{startnet}");
    assert!(startnet.contains(&format!(r"R:\{MEDIA}\setup.exe /unattend:R:\unattend\%MAC%.xml")), "{startnet}");
    // WinPE's launcher runs it rather than Setup's own interactive start.
    assert!(extract(2, "winpeshl.ini").contains(r"cmd.exe, /c %SYSTEMROOT%\System32\startnet.cmd"));
    assert_eq!(extract(1, "startnet.cmd"), "wpeinit\r\n", "the image that does not boot is left alone");
    // The smbd config, for an operator who shares with the host's own Samba instead.
    let conf = net.run(&net.srv, &format!("{bin} windows smb-conf --config {}", cfg.display()));
    let conf = String::from_utf8_lossy(&conf.stdout).into_owned();
    assert!(conf.contains("interfaces = 198.18.0.1") && conf.contains("read only = yes"), "{conf}");
    // A second import under the same name is refused and changes nothing.
    let again =
        net.run(&net.srv, &format!("{bin} windows import {MEDIA} {} --config {}", src.display(), cfg.display()));
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("--replace"));

    let rackboot = net.start_rackboot(&config);
    for (mac, name) in [(VM_MAC, "winvm1"), (CLI_MAC, "wincli1")] {
        let m = net.api("POST", "/machines", Some(&format!(r#"{{"macs":["{mac}"],"hostname":"{name}"}}"#)));
        net.api("PATCH", &format!("/machines/{}", m["id"]), Some(r#"{"boot_profile":"win"}"#));
    }

    // The VM first: it takes minutes under TCG, the rest runs meanwhile.
    net.add_tap("tap-win");
    let mut args = net.qemu_args("win", VM_MAC, true, &[], true);
    for arg in args.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
        arg.push_str(",romfile=");
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let srv = net.srv.clone();
    let started = Instant::now();
    net.spawn(&srv, &args, "win.qemu.log");

    // A second Windows machine, by a real DHCP client and a real TFTP client.
    let cli = net.add_client("wc", CLI_MAC);
    let hook = net.path("udhcpc.sh");
    std::fs::write(&hook, "#!/bin/sh\n[ \"$1\" = bound ] && ip addr add $ip/24 dev $interface\nexit 0\n").unwrap();
    sh(&format!("chmod 755 {}", hook.display()));
    let lease = net.run(&cli, &format!("timeout 60 udhcpc -i eth0 -f -n -q -t 5 -T 2 -s {}", hook.display()));
    assert!(lease.status.success(), "udhcpc: {}", String::from_utf8_lossy(&lease.stderr));
    let got = net.path("got");
    let tftp = |name: &str| {
        let _ = std::fs::remove_file(&got);
        let r = net.run(&cli, &format!("timeout 30 atftp -g -r '{name}' -l {} 198.18.0.1", got.display()));
        r.status.success().then(|| std::fs::read(&got).unwrap_or_default())
    };
    let bootmgr = format!("windows/{MEDIA}/bootmgfw.efi");
    assert_eq!(tftp(&bootmgr).as_deref(), Some(standin.as_slice()), "{}", net.log("rackboot.log"));
    assert_eq!(tftp(r"\Boot\BCD").as_deref(), Some(&b"STANDIN-BCD-UEFI"[..]), "the UEFI BCD, by a backslash path");
    assert_eq!(tftp(r"\Boot\boot.sdi").as_deref(), Some(&b"STANDIN-SDI"[..]));
    let wim = tftp(r"\SOURCES\BOOT.WIM").expect("boot.wim in any case");
    assert_eq!(wim, std::fs::read(media.join("sources/boot.wim")).unwrap());
    for bad in [r"\..\..\rackboot.toml", r"\Boot\..\..\..\..\rackboot.toml", r"\nothing.here"] {
        assert_eq!(tftp(bad), None, "{bad} was served");
    }

    // The share: read-only, byte for byte, the answer file under getmac's name.
    let smb = |cmd: &str| net.run(&cli, &format!("timeout 30 smbclient -N //198.18.0.1/rackboot -c '{cmd}'"));
    wait_until(20, "smbd answers", || smb("ls").status.success());
    let copy = net.path("setup.copy");
    let r = smb(&format!(r"get {MEDIA}\SETUP.EXE {}", copy.display()));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stdout));
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(src.join("setup.exe")).unwrap(), "setup.exe over SMB");
    let answer = net.path("answer.xml");
    let r = smb(&format!(r"get unattend\52-54-00-E7-00-02.xml {}", answer.display()));
    assert!(r.status.success(), "the answer file by getmac's name: {}", String::from_utf8_lossy(&r.stdout));
    let xml = std::fs::read_to_string(&answer).unwrap();
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    assert_eq!(doc.root_element().tag_name().namespace(), Some("urn:schemas-microsoft-com:unattend"));
    let computer = doc.descendants().find(|n| n.has_tag_name("ComputerName")).and_then(|n| n.text());
    assert_eq!(computer, Some("wincli1"));
    let put = smb(&format!("put {} evil.txt", cfg.display()));
    let said = String::from_utf8_lossy(&put.stdout).into_owned();
    assert!(said.contains("NT_STATUS_ACCESS_DENIED") || said.contains("NT_STATUS_MEDIA_WRITE_PROTECTED"), "{said}");
    assert!(!data.join("boot/windows/evil.txt").exists());
    let ev = net.api("GET", &format!("/machines/{CLI_MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let boot = ev.iter().find(|e| e["kind"] == "boot.script").expect("the boot manager is on the timeline");
    assert_eq!(boot["detail"]["loader"], "bootmgfw", "{boot}");
    assert_eq!(boot["detail"]["unattend"], "unattend/52-54-00-e7-00-02.xml", "{boot}");

    // The VM: DHCP named the media's boot manager, the firmware ran it, its backslash request
    // was answered from its media.
    let serial = || String::from_utf8_lossy(&std::fs::read(net.path("win.serial")).unwrap_or_default()).into_owned();
    wait_until(400, "the stand-in boot manager printed the BCD", || serial().contains("STANDIN-BOOTMGFW done"));
    eprintln!("Windows stand-in: power-on to its BCD in {} s", started.elapsed().as_secs());
    let s = serial();
    assert!(s.contains("STANDIN-BOOTMGFW running") && s.contains("STANDIN-BCD-UEFI"), "{s}");
    let ev = net.api("GET", &format!("/machines/{VM_MAC}/events"), None);
    let ev = ev["events"].as_array().unwrap();
    let offer = ev.iter().find(|e| e["kind"] == "dhcp.offer").unwrap();
    assert_eq!(offer["detail"]["boot_file"], bootmgr.as_str(), "{offer}");
    assert!(ev
        .iter()
        .any(|e| e["kind"] == "boot.script" && e["detail"]["unattend"] == "unattend/52-54-00-e7-00-01.xml"));
    assert!(data.join("boot/windows/unattend/52-54-00-e7-00-01.xml").is_file());

    // smbd killed is started again; smbd goes with rackboot.
    let conf = data.join("smb/smb.conf");
    let first = smbd_pids(&conf);
    assert!(!first.is_empty(), "smbd runs");
    sh(&format!("kill -9 {}", first.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")));
    wait_until(20, "a new smbd after the old one was killed", || {
        let now = smbd_pids(&conf);
        !now.is_empty() && now.iter().all(|p| !first.contains(p))
    });
    wait_until(20, "the restarted smbd serves the share", || smb("ls").status.success());
    net.stop(rackboot);
    wait_until(10, "smbd stops with rackboot", || smbd_pids(&conf).is_empty());
}

/// The smbd processes with config `conf` (from /proc: a `pgrep -f` would find its own shell).
fn smbd_pids(conf: &std::path::Path) -> Vec<u32> {
    let conf = conf.as_os_str().as_encoded_bytes();
    let procs = std::fs::read_dir("/proc").unwrap().flatten();
    procs
        .filter(|p| {
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            let mut args = cmdline.split(|b| *b == 0);
            args.next().is_some_and(|a| a.ends_with(b"smbd")) && args.any(|a| a == conf)
        })
        .filter_map(|p| p.file_name().to_str()?.parse().ok())
        .collect()
}
