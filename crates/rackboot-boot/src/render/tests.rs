use super::*;
use crate::planner::BootPlan;
use rackboot_config::Profile;

fn vars(uefi: bool) -> ScriptVars {
    ScriptVars {
        mac: "52:54:00:12:34:56".into(),
        hostname: Some("node01".into()),
        uefi,
        http_base: "http://198.18.0.1".into(),
        boot_nonce: None,
        agent_url: "https://198.18.0.1".into(),
        ca_pin: format!("sha256:{}", "5f1e".repeat(16)),
    }
}

fn profiles() -> std::collections::BTreeMap<String, Profile> {
    rackboot_config::Config::load(None).unwrap().boot.profiles
}

/// The discovery plan for the test machine, as the planner makes it.
fn discovery(profiles: &std::collections::BTreeMap<String, Profile>) -> BootPlan {
    let ctx = crate::planner::PlanContext { http_base: "http://198.18.0.1", discovery_profile: "discovery", profiles };
    crate::planner::plan_boot("52:54:00:12:34:56".parse().unwrap(), None, &ctx).unwrap()
}

#[test]
fn golden_scripts() {
    let r = Renderer::new(None).unwrap();
    let d = discovery(&profiles());
    assert_eq!(r.ipxe(&d, &vars(false)).unwrap(), include_str!("../../../../tests/golden/bios-discovery.ipxe"));
    assert_eq!(r.ipxe(&d, &vars(true)).unwrap(), include_str!("../../../../tests/golden/uefi-discovery.ipxe"));
    let l = BootPlan::LocalDisk;
    assert_eq!(r.ipxe(&l, &vars(false)).unwrap(), include_str!("../../../../tests/golden/bios-localboot.ipxe"));
    assert_eq!(r.ipxe(&l, &vars(true)).unwrap(), include_str!("../../../../tests/golden/uefi-localboot.ipxe"));
}

#[test]
fn golden_grub_configs_render_the_same_plans() {
    let r = Renderer::new(None).unwrap();
    let d = discovery(&profiles());
    let with_nonce = ScriptVars { boot_nonce: Some("00ff".into()), ..vars(true) };
    assert_eq!(r.grub(&d, &with_nonce).unwrap(), include_str!("../../../../tests/golden/grub-discovery.cfg"));
    let l = BootPlan::LocalDisk;
    assert_eq!(r.grub(&l, &vars(true)).unwrap(), include_str!("../../../../tests/golden/grub-localboot.cfg"));
}

#[test]
fn grub_configs_quote_what_grub_would_expand_and_refuse_odd_paths() {
    let r = Renderer::new(None).unwrap();
    let BootPlan::Profile(mut p) = discovery(&profiles()) else { panic!() };
    p.cmdline = "console=ttyS0 x=$root y='a;b' z={x} ok=1".into();
    let cfg = r.grub(&BootPlan::Profile(p.clone()), &vars(true)).unwrap();
    let linux = cfg.lines().find(|l| l.starts_with("linux ")).unwrap();
    assert_eq!(linux, r#"linux /bootos/vmlinuz console=ttyS0 'x=$root' 'y='\''a;b'\''' 'z={x}' ok=1"#);
    // A kernel over HTTP cannot be had: the config says so on the console and gives up.
    let remote = crate::planner::ProfileBoot { kernel_path: None, ..p.clone() };
    let cfg = r.grub(&BootPlan::Profile(remote), &vars(true)).unwrap();
    assert!(cfg.contains("signed GRUB cannot") && cfg.contains("exit 1") && !cfg.contains("\nlinux"), "{cfg}");
    let odd = crate::planner::ProfileBoot { initrd_path: Some("a b/$x".into()), ..p };
    assert!(matches!(r.grub(&BootPlan::Profile(odd), &vars(true)), Err(RenderError::UnsafePath(_))));
}

#[test]
fn a_boot_nonce_goes_only_onto_an_agent_profiles_command_line() {
    let r = Renderer::new(None).unwrap();
    let with_nonce = ScriptVars { boot_nonce: Some("00ff".into()), ..vars(false) };
    let d = discovery(&profiles());
    let script = r.ipxe(&d, &with_nonce).unwrap();
    let kernel = script.lines().find(|l| l.starts_with("kernel ")).unwrap();
    assert!(kernel.ends_with(" rackboot.mac=52:54:00:12:34:56 rackboot.nonce=00ff"), "{kernel}");
    let BootPlan::Profile(mut other) = d else { panic!() };
    other.agent = false;
    let script = r.ipxe(&BootPlan::Profile(other), &with_nonce).unwrap();
    assert!(!script.contains("nonce"), "{script}");
    assert!(!r.ipxe(&BootPlan::LocalDisk, &with_nonce).unwrap().contains("nonce"));
}

#[test]
fn golden_identity_script() {
    let r = Renderer::new(None).unwrap();
    let v = IdentityVars {
        disk: "/dev/vda".into(),
        hostname: "node-01".into(),
        domain: "lab.rackboot.test".into(),
        appliance_url: "http://198.18.0.1:8080".into(),
        agent_url: "https://198.18.0.1:8443".into(),
        ca_pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
        agent_sha256: "ab".repeat(32),
        ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake ops@example".into()],
        session: None,
        network_files: vec![],
        cloud_init_url: "http://198.18.0.1:8080/boot/cloud-init/52:54:00:12:34:56/".into(),
    };
    let got = r.identity(&v).unwrap();
    if std::env::var_os("RACKBOOT_BLESS").is_some() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/identity.sh"), &got).unwrap();
    }
    assert_eq!(got, include_str!("../../../../tests/golden/identity.sh"), "RACKBOOT_BLESS=1 rewrites the golden file");
    // A network spec replaces the catch-all DHCP file with its own files, written verbatim.
    let file = NetFile { name: "10-rackboot-bond0.netdev".into(), text: "[NetDev]\nName=bond0\nKind=bond\n".into() };
    let net = r.identity(&IdentityVars { network_files: vec![file.clone()], ..v.clone() }).unwrap();
    assert!(net.contains("cat > \"$ROOT/etc/systemd/network/10-rackboot-bond0.netdev\" <<'NETWORK'\n[NetDev]\nName=bond0\nKind=bond\nNETWORK\n"));
    assert!(!net.contains("DHCP=yes") && got.contains("DHCP=yes"));
    assert!(net.contains("etc/netplan") && !got.contains("etc/netplan"), "netplan is set aside with a spec only");
    for evil in
        [NetFile { name: "../x".into(), ..file.clone() }, NetFile { text: "a\nNETWORK\nreboot\n".into(), ..file }]
    {
        assert!(matches!(
            r.identity(&IdentityVars { network_files: vec![evil], ..v.clone() }),
            Err(RenderError::Unsafe(_))
        ));
    }
    let mut bad = v.clone();
    bad.ssh_keys.push("ssh-rsa AAAA $(reboot)".into());
    assert!(matches!(r.identity(&bad), Err(RenderError::Unsafe(_))));
    // An installer's copy carries the session in a quoted here document, verbatim.
    let session = r#"{"machine_id":7,"credential":"7.abc$x`y`"}"#;
    let with = r.identity(&IdentityVars { session: Some(session.into()), ..v.clone() }).unwrap();
    assert!(with.contains(&format!("<<'SESSION'\n{session}\nSESSION\n")), "{with}");
    assert!(!with.contains("RACKBOOT_SESSION_FILE"));
    let end = IdentityVars { session: Some("x\nSESSION\nreboot".into()), ..v };
    assert!(matches!(r.identity(&end), Err(RenderError::Unsafe(_))));
}

#[test]
fn golden_answer_files() {
    let r = Renderer::new(None).unwrap();
    let v = AnswerVars {
        mac: "52:54:00:12:34:56".into(),
        hostname: "node-01".into(),
        domain: "lab.rackboot.test".into(),
        disk: "/dev/vda".into(),
        disk_name: "vda".into(),
        ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake ops@example".into()],
        appliance_url: "http://198.18.0.1:8080".into(),
        repo_url: "http://deb.debian.org/debian".into(),
        repo_host: "deb.debian.org".into(),
        repo_path: "/debian".into(),
        proxy: "http://198.18.0.1:3142/".into(),
        finish_url: "http://198.18.0.1:8080/boot/installed?mac=52:54:00:12:34:56".into(),
        finish_token: "0f1e2d".into(),
    };
    // Each kind with its distribution's repository, as the defaults in [provision] have it.
    let config = rackboot_config::Config::load(None).unwrap();
    for (kind, golden) in [
        ("kickstart", include_str!("../../../../tests/golden/kickstart.cfg")),
        ("preseed", include_str!("../../../../tests/golden/preseed.cfg")),
        ("autoinstall", include_str!("../../../../tests/golden/autoinstall.yaml")),
    ] {
        let mut v = v.clone();
        v.repo_url = config.provision.answer_repos[kind].clone();
        let got = r.answer(kind, &v).unwrap();
        if std::env::var_os("RACKBOOT_BLESS").is_some() {
            let path = format!(
                "{}/../../tests/golden/{}",
                env!("CARGO_MANIFEST_DIR"),
                match kind {
                    "kickstart" => "kickstart.cfg",
                    "preseed" => "preseed.cfg",
                    _ => "autoinstall.yaml",
                }
            );
            std::fs::write(path, &got).unwrap();
            continue;
        }
        assert_eq!(got, golden, "{kind}: RACKBOOT_BLESS=1 rewrites the golden file");
    }
    let mut bad = v.clone();
    bad.ssh_keys = vec!["ssh-rsa AAAA' ; reboot '".into()];
    assert!(matches!(r.answer("preseed", &bad), Err(RenderError::Unsafe(_))));
    assert!(r.answer("jumpstart", &v).is_err());
}

#[test]
fn strict_templates_refuse_unknown_names() {
    let r = Renderer::new(None).unwrap();
    let mut p = profiles();
    p.get_mut("discovery").unwrap().cmdline = "root={{ no_such_var }}".into();
    let err = r.ipxe(&discovery(&p), &vars(false)).unwrap_err();
    assert!(err.to_string().contains("undefined"), "{err}");
}

#[test]
fn the_windows_answer_file_is_well_formed_xml_in_the_unattend_namespace() {
    let r = Renderer::new(None).unwrap();
    let vars = UnattendVars {
        mac: "52:54:00:12:34:56".into(),
        computer_name: "node01".into(),
        media: "w2022".into(),
        share_address: "198.18.0.1".into(),
    };
    let xml = r.unattend(&vars).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().namespace(), Some("urn:schemas-microsoft-com:unattend"));
    assert_eq!(root.tag_name().name(), "unattend");
    let passes: Vec<&str> = root.children().filter_map(|n| n.attribute("pass")).collect();
    assert_eq!(passes, ["windowsPE", "specialize"]);
    let text = |tag: &str| doc.descendants().find(|n| n.has_tag_name(tag)).and_then(|n| n.text()).map(str::to_string);
    assert_eq!(text("ComputerName").as_deref(), Some("node01"));
    assert_eq!(text("Path").as_deref(), Some(r"\\198.18.0.1\rackboot\w2022\sources\install.wim"));
    // Every component is for the same architecture and Microsoft's key.
    for c in doc.descendants().filter(|n| n.has_tag_name("component")) {
        assert_eq!(
            (c.attribute("processorArchitecture"), c.attribute("publicKeyToken")),
            (Some("amd64"), Some("31bf3856ad364e35"))
        );
    }
    // Values are escaped for XML; names Windows would refuse are refused here.
    let odd = UnattendVars { media: "a&b<c".into(), ..vars.clone() };
    roxmltree::Document::parse(&r.unattend(&odd).unwrap()).unwrap();
    for bad in ["", "a-name-longer-than15", "a b", "1234"] {
        let v = UnattendVars { computer_name: bad.into(), ..vars.clone() };
        assert!(matches!(r.unattend(&v), Err(RenderError::Unsafe(_))), "{bad:?}");
    }
}

#[test]
fn a_windows_plan_tells_a_loader_that_asked_why_it_cannot_boot_it() {
    let r = Renderer::new(None).unwrap();
    let plan = BootPlan::Windows { profile: "win".into(), media: "w2022".into() };
    let ipxe = r.ipxe(&plan, &vars(false)).unwrap();
    assert!(
        ipxe.starts_with("#!ipxe\necho rackboot: profile win installs Windows from media w2022")
            && ipxe.contains("exit 1"),
        "{ipxe}"
    );
    assert!(r.grub(&plan, &vars(true)).unwrap().starts_with("echo 'rackboot: profile win"));
}
