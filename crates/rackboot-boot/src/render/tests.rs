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
        boot_mac: "52:54:00:12:34:56".into(),
    };
    let got = r.identity(&v).unwrap();
    if std::env::var_os("RACKBOOT_BLESS").is_some() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/golden/identity.sh"), &got).unwrap();
    }
    assert_eq!(got, include_str!("../../../../tests/golden/identity.sh"), "RACKBOOT_BLESS=1 rewrites the golden file");
    // Without a spec: DHCP on every port, but only the port it provisioned through is required
    // for online (a port without a cable would hold network-online.target for two minutes).
    let boot = "printf '[Match]\\nMACAddress=52:54:00:12:34:56\\n\\n[Network]\\nDHCP=yes\\n' > \"$ROOT/etc/systemd/network/10-rackboot-boot.network\"";
    assert!(got.contains(boot), "{got}");
    assert!(got.contains("[Match]\\nName=e*\\n\\n[Link]\\nRequiredForOnline=no\\n"), "{got}");
    let unknown = r.identity(&IdentityVars { boot_mac: String::new(), ..v.clone() }).unwrap();
    assert!(!unknown.contains("10-rackboot-boot") && !unknown.contains("RequiredForOnline"), "every port required");
    assert!(unknown.contains("printf '[Match]\\nName=e*\\n\\n[Network]\\nDHCP=yes\\n'"), "{unknown}");
    assert!(matches!(
        r.identity(&IdentityVars { boot_mac: "52:54:00:12:34:56\"; reboot; \"".into(), ..v.clone() }),
        Err(RenderError::Unsafe(_))
    ));
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
        network: Default::default(),
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

/// Answer-file values for node-01, with the network of an active-backup bond over two MACs
/// that carries VLAN 10, static in prod with its gateway and DNS.
fn networked(kind: &str) -> AnswerVars {
    use rackboot_model::network::{resolve, NetSpec, Network};
    let networks = [Network {
        name: "prod".into(),
        cidr: "10.20.0.0/24".parse().unwrap(),
        gateway: Some("10.20.0.1".parse().unwrap()),
        vlan: Some(10),
        dns: vec!["10.20.0.53".parse().unwrap()],
        range: None,
        mtu: None,
    }];
    let spec: NetSpec = serde_json::from_value(serde_json::json!({
        "ethernets": [{"name": "nic0", "mac": "52:54:00:aa:00:01"}, {"name": "nic1", "mac": "52:54:00:aa:00:02"}],
        "bonds": [{"name": "bond0", "members": ["nic0", "nic1"], "mode": "active-backup"}],
        "vlans": [{"id": 10, "link": "bond0", "network": "prod", "address": "10.20.0.21"}],
    }))
    .unwrap();
    let net = resolve(&spec, &networks, &[], None).unwrap();
    AnswerVars {
        mac: "52:54:00:aa:00:01".into(),
        hostname: "node-01".into(),
        domain: "lab.rackboot.test".into(),
        disk: "/dev/vda".into(),
        disk_name: "vda".into(),
        ssh_keys: vec![],
        appliance_url: "http://198.18.0.1:8080".into(),
        repo_url: "http://deb.debian.org/debian".into(),
        repo_host: "deb.debian.org".into(),
        repo_path: "/debian".into(),
        proxy: String::new(),
        finish_url: "http://198.18.0.1:8080/boot/installed?mac=52:54:00:aa:00:01".into(),
        finish_token: String::new(),
        network: crate::netcfg::installer::render(kind, Some(&net)).unwrap(),
    }
}

#[test]
fn a_kickstart_with_a_spec_writes_its_network_lines_in_pre_with_ports_found_by_mac() {
    let ks = Renderer::new(None).unwrap().answer("kickstart", &networked("kickstart")).unwrap();
    assert!(!ks.contains("--device=link"), "{ks}");
    assert!(ks.contains("\n%include /tmp/rackboot-network.ks\n"), "{ks}");
    // Run the %pre step against a stand-in for /sys/class/net: it writes the lines Anaconda
    // reads, with the members' names this kernel gave them and the hostname on the first.
    let pre = ks.split("%pre --erroronfail --log=/tmp/rackboot-network.log\n").nth(1).unwrap();
    let pre = pre.split("%end\n").next().unwrap();
    let dir = std::env::temp_dir().join(format!("rackboot-ks-pre-{}", std::process::id()));
    let sys = dir.join("net");
    for (name, mac) in [("lo", "00:00:00:00:00:00"), ("ens3", "52:54:00:aa:00:01"), ("ens4", "52:54:00:aa:00:02")] {
        std::fs::create_dir_all(sys.join(name)).unwrap();
        std::fs::write(sys.join(name).join("address"), format!("{mac}\n")).unwrap();
    }
    let out = dir.join("network.ks");
    let script =
        pre.replace("/sys/class/net", sys.to_str().unwrap()).replace("/tmp/rackboot-network.ks", out.to_str().unwrap());
    let run = |script: &str| std::process::Command::new("sh").arg("-c").arg(script).output().unwrap();
    let ran = run(&script);
    assert!(ran.status.success(), "{}", String::from_utf8_lossy(&ran.stderr));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "network --device=bond0 --bondslaves=ens3,ens4 --bondopts=mode=active-backup,miimon=100 --bindto=mac \
         --vlanid=10 --interfacename=bond0.10 --bootproto=static --ip=10.20.0.21 --netmask=255.255.255.0 \
         --gateway=10.20.0.1 --nameserver=10.20.0.53 --onboot=yes --activate --hostname=node-01.lab.rackboot.test\n"
    );
    // A port that is not there fails the install before Anaconda configures anything.
    std::fs::remove_dir_all(sys.join("ens4")).unwrap();
    let ran = run(&script);
    assert!(!ran.status.success());
    assert!(String::from_utf8_lossy(&ran.stderr).contains("not on this machine"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_preseed_with_a_spec_puts_the_installer_on_the_vlan_at_its_address() {
    let p = Renderer::new(None).unwrap().answer("preseed", &networked("preseed")).unwrap();
    for line in [
        "d-i netcfg/choose_interface select 52:54:00:aa:00:01\n",
        "d-i netcfg/use_vlan boolean true\n",
        "d-i netcfg/vlan_id string 10\n",
        "d-i netcfg/get_ipaddress string 10.20.0.21\n",
        "d-i netcfg/get_netmask string 255.255.255.0\n",
        "d-i netcfg/get_gateway string 10.20.0.1\n",
        "d-i netcfg/get_nameservers string 10.20.0.53\n",
        "d-i preseed/early_command string kill-all-dhcp; netcfg\n",
    ] {
        assert!(p.contains(line), "{line}{p}");
    }
    assert!(!p.contains("choose_interface select auto"), "{p}");
}

#[test]
fn an_autoinstall_with_a_spec_is_yaml_with_the_bond_under_autoinstall_network() {
    let r = Renderer::new(None).unwrap();
    let text = r.answer("autoinstall", &networked("autoinstall")).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let network = &doc["autoinstall"]["network"];
    assert_eq!(network["version"], serde_yaml::Value::from(2));
    assert_eq!(network["bonds"]["bond0"]["parameters"]["mode"], serde_yaml::Value::from("active-backup"));
    assert_eq!(network["vlans"]["bond0.10"]["addresses"][0], serde_yaml::Value::from("10.20.0.21/24"));
    assert_eq!(doc["autoinstall"]["storage"]["layout"]["match"]["path"], serde_yaml::Value::from("/dev/vda"));
    // Without a spec: DHCP on any e* port, as before.
    let plain = AnswerVars { network: Default::default(), ..networked("autoinstall") };
    let doc: serde_yaml::Value = serde_yaml::from_str(&r.answer("autoinstall", &plain).unwrap()).unwrap();
    assert_eq!(doc["autoinstall"]["network"]["ethernets"]["any"]["dhcp4"], serde_yaml::Value::from(true));
}

#[test]
fn network_lines_that_would_start_another_line_are_refused() {
    let r = Renderer::new(None).unwrap();
    let mut v = networked("kickstart");
    v.network.network_lines.push("network --device=x\nreboot".into());
    assert!(matches!(r.answer("kickstart", &v), Err(RenderError::Unsafe(_))));
    let mut v = networked("preseed");
    v.network.netcfg_lines.push("d-i preseed/early_command string `reboot`".into());
    assert!(matches!(r.answer("preseed", &v), Err(RenderError::Unsafe(_))));
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

#[test]
fn fuel_is_spent_quickly_and_refused() {
    let r = Renderer::new(None).unwrap();
    // 25 million steps: refused once the fuel is spent, and quickly.
    let nest = "{% for i in range(5000) %}{% for j in range(5000) %}x{% endfor %}{% endfor %}";
    let started = std::time::Instant::now();
    let err = r.check_cmdline(nest, false).unwrap_err();
    assert!(matches!(err, RenderError::OutOfFuel(FUEL)), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    // A step that prints a whole list: the output bound stops it.
    let wide = "{% for i in range(1000) %}{{ range(50000) }}{% endfor %}";
    assert!(matches!(r.check_cmdline(wide, false), Err(RenderError::TooLarge(MAX_OUTPUT))));
    // An ordinary command line is far inside both.
    assert!(r.check_cmdline("console=ttyS0 {% for i in range(10) %}x{{ i }} {% endfor %}{{ mac }}", false).is_ok());
}

#[test]
fn a_fuel_eating_override_is_refused_at_check() {
    let t = crate::templates::Templates::new(None).unwrap();
    let nest = "{% for i in range(3000) %}{% for j in range(3000) %}#{% endfor %}{% endfor %}\n";
    let err = t.check(&Default::default(), "profile.ipxe", nest).err().expect("refused");
    assert!(err.to_string().contains("steps to render"), "{err}");
}
