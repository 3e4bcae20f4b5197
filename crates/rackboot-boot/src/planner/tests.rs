use super::*;

fn files() -> BootFiles {
    rackboot_config::Config::load(None).unwrap().boot
}

fn plan(arch: Option<u16>, is_ipxe: bool) -> Option<DhcpBoot> {
    let f = files();
    let ctx = BootContext {
        http_base: "http://198.18.0.1",
        https_base: Some("https://198.18.0.1:4433"),
        next_server: "198.18.0.1".parse().unwrap(),
        files: &f,
    };
    let req = DhcpBootRequest {
        mac: "52:54:00:00:00:01".parse().unwrap(),
        arch: arch.map(Arch::from_code),
        is_ipxe,
        uefi_loader: None,
        windows: None,
        boots_disk: false,
        bootos: true,
    };
    plan_dhcp(&req, &ctx)
}

#[test]
fn arch_picks_the_ipxe_binary() {
    let name = |a| plan(a, false).map(|b| b.filename);
    assert_eq!(name(Some(0)).as_deref(), Some("undionly.kpxe"));
    assert_eq!(name(None).as_deref(), Some("undionly.kpxe"));
    assert_eq!(name(Some(7)).as_deref(), Some("ipxe.efi"));
    assert_eq!(name(Some(9)).as_deref(), Some("ipxe.efi"));
    // arm64: Debian's signed shim (there is no arm64 iPXE in Debian).
    assert_eq!(name(Some(11)).as_deref(), Some("shimaa64.efi"));
    assert_eq!(name(Some(6)), None);
    assert_eq!(name(Some(0x1f)), None);
}

#[test]
fn an_installed_machines_firmware_is_offered_nothing_but_ipxe_still_gets_its_script() {
    use rackboot_store::MachineState::*;
    assert!(boots_own_disk(Installed, false, false));
    assert!(!boots_own_disk(Installed, true, false), "a pinned profile boots");
    assert!(!boots_own_disk(Installed, false, true), "an installer under way boots");
    for state in [Discovered, Ready, Installing, Releasing, Rescue, Failed] {
        assert!(!boots_own_disk(state, false, false), "{state:?}");
    }
    let f = files();
    let ctx = BootContext { http_base: "http://x", https_base: None, next_server: Ipv4Addr::LOCALHOST, files: &f };
    let ask = |arch: u16, is_ipxe: bool| {
        let req = DhcpBootRequest {
            mac: Mac([0; 6]),
            arch: Some(Arch::from_code(arch)),
            is_ipxe,
            uefi_loader: None,
            windows: None,
            boots_disk: true,
            bootos: false,
        };
        plan_dhcp(&req, &ctx).map(|b| b.filename)
    };
    // BIOS, arm64 and HTTP boot: no boot program, so the firmware tries its disk next.
    for arch in [0, 11, 16, 19] {
        assert_eq!(ask(arch, false), None, "arch {arch}");
    }
    // UEFI x64: the signed GRUB, which chainloads the disk's own loader.
    for arch in [7, 9] {
        assert_eq!(ask(arch, false).as_deref(), Some("shimx64.efi"), "arch {arch}");
    }
    // iPXE (a ROM of its own, or loaded by hand) asks for the script that exits to the disk.
    assert_eq!(ask(0, true).as_deref(), Some("http://x/boot/ipxe?mac=00:00:00:00:00:00"));
}

#[test]
fn http_boot_clients_get_an_http_url_and_vendor_class() {
    let b = plan(Some(16), false).unwrap();
    assert_eq!(b.filename, "http://198.18.0.1/boot/files/ipxe.efi");
    assert_eq!(b.vendor_class, "HTTPClient");
}

#[test]
fn ipxe_gets_its_per_mac_script_which_breaks_the_loop() {
    for arch in [Some(0), Some(7), None] {
        let b = plan(arch, true).unwrap();
        assert_eq!(b.filename, "http://198.18.0.1/boot/ipxe?mac=52:54:00:00:00:01");
    }
}

fn profiles() -> std::collections::BTreeMap<String, rackboot_config::Profile> {
    let mut p = rackboot_config::Config::load(None).unwrap().boot.profiles;
    let installer = |name: &str, answer: &str| rackboot_config::Profile {
        name: name.into(),
        kernel: "http://mirror.example/linux".into(),
        initrd: "d-i/initrd.gz".into(),
        cmdline: "auto url={{ answer_url }}".into(),
        answer: Some(answer.into()),
        windows: None,
        arm64: None,
    };
    p.insert("debian12".into(), installer("debian12", "preseed"));
    p.insert("ubuntu".into(), installer("ubuntu", "autoinstall"));
    let rescue = rackboot_config::Profile { name: "rescue".into(), answer: None, ..installer("rescue", "") };
    p.insert("rescue".into(), rescue);
    p
}

/// The plan's profile name and reason, or "disk".
fn which(m: Option<&Machine>) -> (String, &'static str) {
    let p = profiles();
    let ctx = PlanContext { http_base: "http://198.18.0.1:8080", discovery_profile: "discovery", profiles: &p };
    match plan_boot(Mac([0x52, 0x54, 0, 0, 0, 1]), m, &ctx).unwrap() {
        BootPlan::Profile(b) => (b.name, b.reason),
        BootPlan::LocalDisk => ("disk".into(), "installed"),
        BootPlan::Windows { profile, .. } => (profile, "windows"),
    }
}

#[test]
fn boot_plan_follows_state_and_pin() {
    let mut m = Machine::new(1, vec![Mac([0; 6])], 0);
    assert_eq!(which(None), ("discovery".into(), "discovery"));
    assert_eq!(which(Some(&m)), ("discovery".into(), "discovery"));
    m.state = MachineState::Installed;
    assert_eq!(which(Some(&m)).0, "disk");
    // A run installing from an answer file boots its installer until it reports back.
    m.state = MachineState::Installing;
    let boot = rackboot_store::InstallerBoot { profile: "debian12".into(), run: 1, token: "t".into(), reported: false };
    m.installer = Some(boot.clone());
    assert_eq!(which(Some(&m)), ("debian12".into(), "installer"));
    // Once it reported back, the machine boots what it installed.
    m.state = MachineState::Installed;
    m.installer = Some(rackboot_store::InstallerBoot { reported: true, ..boot });
    assert_eq!(which(Some(&m)).0, "disk");
    m.boot_profile = Some("rescue".into());
    assert_eq!(which(Some(&m)), ("rescue".into(), "pinned"));
}

#[test]
fn a_profile_plan_carries_every_url_resolved() {
    let p = profiles();
    let ctx = PlanContext { http_base: "http://198.18.0.1:8080", discovery_profile: "discovery", profiles: &p };
    let mac = Mac([0x52, 0x54, 0, 0, 0, 1]);
    let BootPlan::Profile(d) = plan_boot(mac, None, &ctx).unwrap() else { panic!("discovery") };
    assert_eq!(d.kernel_url, "http://198.18.0.1:8080/boot/files/bootos/vmlinuz");
    assert_eq!(
        (d.initrd_url.as_str(), d.initrd_name.as_str()),
        ("http://198.18.0.1:8080/boot/files/bootos/initrd.img", "initrd.img")
    );
    assert_eq!(d.answer_url, None);
    let paths = (d.kernel_path.as_deref(), d.initrd_path.as_deref());
    assert_eq!(paths, (Some("bootos/vmlinuz"), Some("bootos/initrd.img")), "TFTP paths for GRUB");
    let mut m = Machine::new(1, vec![mac], 0);
    for (profile, answer) in [
        ("debian12", "http://198.18.0.1:8080/boot/answer/preseed/no-token?mac=52:54:00:00:00:01"),
        ("ubuntu", "http://198.18.0.1:8080/boot/nocloud/52:54:00:00:00:01/no-token/"),
    ] {
        m.boot_profile = Some(profile.into());
        let BootPlan::Profile(b) = plan_boot(mac, Some(&m), &ctx).unwrap() else { panic!("{profile}") };
        assert_eq!(b.answer_url.as_deref(), Some(answer));
        assert_eq!(b.kernel_url, "http://mirror.example/linux", "an http:// kernel is used as it is");
        assert_eq!((b.kernel_path, b.initrd_path.as_deref()), (None, Some("d-i/initrd.gz")));
        assert_eq!(b.initrd_url, "http://198.18.0.1:8080/boot/files/d-i/initrd.gz");
    }
    m.boot_profile = Some("gone".into());
    assert_eq!(plan_boot(mac, Some(&m), &ctx), Err(UnknownProfile("gone".into())));
}

#[test]
fn snponly_when_configured() {
    let mut f = files();
    f.uefi_x64_snp = true;
    let ctx = BootContext { http_base: "http://x", https_base: None, next_server: Ipv4Addr::LOCALHOST, files: &f };
    let req = DhcpBootRequest {
        mac: Mac([0; 6]),
        arch: Some(Arch::UefiX64),
        is_ipxe: false,
        uefi_loader: None,
        windows: None,
        boots_disk: false,
        bootos: true,
    };
    assert_eq!(plan_dhcp(&req, &ctx).unwrap().filename, "snponly.efi");
}

#[test]
fn the_signed_chain_is_chosen_globally_or_per_subnet_for_uefi_x64_pxe_only() {
    let mut f = files();
    let ask = |f: &BootFiles, arch: Arch, is_ipxe: bool, uefi_loader: Option<UefiLoader>| {
        let c = BootContext { http_base: "http://x", https_base: None, next_server: Ipv4Addr::LOCALHOST, files: f };
        plan_dhcp(
            &DhcpBootRequest {
                mac: Mac([0; 6]),
                arch: Some(arch),
                is_ipxe,
                uefi_loader,
                windows: None,
                boots_disk: false,
                bootos: true,
            },
            &c,
        )
        .unwrap()
    };
    assert_eq!(ask(&f, Arch::UefiX64, false, Some(UefiLoader::Shim)).filename, "shimx64.efi");
    assert_eq!(ask(&f, Arch::UefiX64, false, None).filename, "ipxe.efi");
    f.uefi_loader = UefiLoader::Shim;
    let b = ask(&f, Arch::UefiX64, false, None);
    assert_eq!((b.filename.as_str(), b.vendor_class), ("shimx64.efi", "PXEClient"));
    // A subnet may keep iPXE against the global choice.
    assert_eq!(ask(&f, Arch::UefiX64, false, Some(UefiLoader::Ipxe)).filename, "ipxe.efi");
    // BIOS, HTTP boot and iPXE itself are not affected.
    assert_eq!(ask(&f, Arch::Bios, false, None).filename, "undionly.kpxe");
    assert_eq!(ask(&f, Arch::HttpX64, false, None).filename, "http://x/boot/files/ipxe.efi");
    assert!(ask(&f, Arch::UefiX64, true, None).filename.starts_with("http://x/boot/ipxe?mac="));
}

#[test]
fn a_windows_profile_starts_its_media_boot_manager_from_uefi_pxe_only() {
    let f = files();
    let ctx = BootContext { http_base: "http://x", https_base: None, next_server: Ipv4Addr::LOCALHOST, files: &f };
    let ask = |arch: Arch, is_ipxe: bool| {
        let req = DhcpBootRequest {
            mac: Mac([0; 6]),
            arch: Some(arch),
            is_ipxe,
            uefi_loader: Some(UefiLoader::Shim),
            windows: Some("w2022".into()),
            boots_disk: false,
            bootos: true,
        };
        plan_dhcp(&req, &ctx).unwrap().filename
    };
    // Over the machine's loader choice too: the boot manager is signed by Microsoft.
    assert_eq!(ask(Arch::UefiX64, false), "windows/w2022/bootmgfw.efi");
    assert_eq!(ask(Arch::Bios, false), "undionly.kpxe");
    assert!(ask(Arch::UefiX64, true).starts_with("http://x/boot/ipxe?mac="));
    // The script iPXE then asks for says what the plan is instead of booting a kernel.
    let mut profiles = profiles();
    let win =
        rackboot_config::Profile { name: "win".into(), windows: Some("w2022".into()), ..profiles["rescue"].clone() };
    profiles.insert("win".into(), win);
    let pctx = PlanContext { http_base: "http://x", discovery_profile: "discovery", profiles: &profiles };
    let mut m = Machine::new(1, vec![Mac([0; 6])], 0);
    m.boot_profile = Some("win".into());
    let want = BootPlan::Windows { profile: "win".into(), media: "w2022".into() };
    assert_eq!(plan_boot(Mac([0; 6]), Some(&m), &pctx), Ok(want));
}

/// An arm64 machine (its firmware's last DHCP said arch 11) boots the discovery profile's arm64
/// kernel, initrd and command line; an x86 one, or one never seen, the profile's own. A profile
/// without arm64 files boots its one kernel on whatever is pinned to it. An empty `boot.arm64`
/// serves arm64 firmware nothing.
#[test]
fn arm64_machines_get_the_profiles_arm64_files() {
    let p = profiles();
    let ctx = PlanContext { http_base: "http://198.18.0.1:8080", discovery_profile: "discovery", profiles: &p };
    let mac = Mac([0x52, 0x54, 0, 0, 0, 1]);
    let mut m = Machine::new(1, vec![mac], 0);
    let boot = |m: Option<&Machine>| match plan_boot(mac, m, &ctx).unwrap() {
        BootPlan::Profile(b) => b,
        other => panic!("{other:?}"),
    };
    m.last_arch = Some("uefi-arm64".into());
    let b = boot(Some(&m));
    assert_eq!(
        (b.kernel_path.as_deref(), b.initrd_path.as_deref()),
        (Some("bootos/arm64/vmlinuz"), Some("bootos/arm64/initrd.img"))
    );
    assert_eq!(b.kernel_url, "http://198.18.0.1:8080/boot/files/bootos/arm64/vmlinuz");
    assert!(b.cmdline.contains("console=ttyAMA0") && b.agent, "{}", b.cmdline);
    for arch in [Some("uefi-x64"), Some("bios"), None] {
        m.last_arch = arch.map(Into::into);
        let b = boot(Some(&m));
        assert_eq!(b.kernel_path.as_deref(), Some("bootos/vmlinuz"), "{arch:?}");
        assert!(b.cmdline.contains("console=ttyS0"), "{arch:?}: {}", b.cmdline);
    }
    assert_eq!(boot(None).kernel_path.as_deref(), Some("bootos/vmlinuz"));
    m.last_arch = Some("http-arm64".into());
    m.boot_profile = Some("rescue".into());
    assert_eq!(boot(Some(&m)).initrd_path.as_deref(), Some("d-i/initrd.gz"), "no arm64 files: the profile's own");

    let mut f = files();
    f.arm64 = String::new();
    let ctx = BootContext { http_base: "http://x", https_base: None, next_server: Ipv4Addr::LOCALHOST, files: &f };
    for arch in [11, 19] {
        let req = DhcpBootRequest {
            mac,
            arch: Some(Arch::from_code(arch)),
            is_ipxe: false,
            uefi_loader: None,
            windows: None,
            boots_disk: false,
            bootos: true,
        };
        assert_eq!(plan_dhcp(&req, &ctx), None, "arch {arch}");
    }
}

#[test]
fn https_boot_hands_bootos_image_over_tls_and_pxe_the_signed_chain() {
    let f = files();
    let ctx = BootContext {
        http_base: "http://198.18.0.1",
        https_base: Some("https://198.18.0.1:4433"),
        next_server: Ipv4Addr::LOCALHOST,
        files: &f,
    };
    let ask = |code: u16, bootos: bool| DhcpBootRequest {
        mac: "52:54:00:00:00:01".parse().unwrap(),
        arch: Some(Arch::from_code(code)),
        is_ipxe: false,
        uefi_loader: Some(UefiLoader::Https),
        windows: None,
        boots_disk: false,
        bootos,
    };
    let b = plan_dhcp(&ask(16, true), &ctx).unwrap();
    assert_eq!(
        (b.filename.as_str(), b.vendor_class),
        ("https://198.18.0.1:4433/boot/files/bootos/bootos.efi", "HTTPClient")
    );
    // An installer or a pinned profile: iPXE over HTTP, as before.
    let b = plan_dhcp(&ask(16, false), &ctx).unwrap();
    assert_eq!(b.filename, "http://198.18.0.1/boot/files/ipxe.efi");
    // PXE has no TLS: the signed chain.
    assert_eq!(plan_dhcp(&ask(7, true), &ctx).unwrap().filename, "shimx64.efi");
    // The boot listener off: iPXE over HTTP.
    let off = BootContext { https_base: None, ..ctx };
    assert_eq!(plan_dhcp(&ask(16, true), &off).unwrap().filename, "http://198.18.0.1/boot/files/ipxe.efi");
}
