//! BootOS on a segment where no DHCP server answers, the G8OS way: three VMs boot BootOS
//! straight from qemu (`-kernel`/`-initrd`, the kernel command line naming the appliance's
//! usual URL and CA pin, as virtual media would), their agents find no DHCP, fall back to
//! 10.254.254.0/24 with ARP-probed addresses and enroll with the appliance at `.254`. Two
//! started together end on different addresses; the third, told to try the first one's address,
//! hears it answered and takes another.

use std::process::Command;

use crate::netns::{require, vm_lab, wait_for, Net};

const MACS: [&str; 3] = ["52:54:00:fb:01:01", "52:54:00:fb:01:02", "52:54:00:fb:01:03"];

#[test]
#[ignore = "e2e: needs root, ip netns, qemu and bootos/build.sh"]
fn bootos_without_dhcp_enrolls_through_the_fallback_network() {
    require(&["ip", "curl", "qemu-system-x86_64", "openssl"]);
    let mut net = Net::new("fv");
    let data = net.path("data");
    let boot = data.join("boot");
    vm_lab("assets.sh", &boot);
    let config = format!(
        "[server]\ndata_dir = \"{}\"\ninterface = \"br0\"\nfallback_network = \"10.254.254.0/24\"\n\
         [http]\nlisten = \"198.18.0.1:8080\"\n[dhcp]\nmode = \"off\"\n[tftp]\nroot = \"{}\"\n",
        data.display(),
        boot.display()
    );
    net.start_rackboot(&config);
    let pin = Command::new("sh")
        .arg("-c")
        .arg(format!("openssl x509 -in {} -outform der | sha256sum | cut -d' ' -f1", net.ca().display()))
        .output()
        .unwrap();
    let pin = String::from_utf8(pin.stdout).unwrap().trim().to_string();
    assert_eq!(pin.len(), 64, "the CA's pin");
    let srv = net.srv.clone();
    let start = |net: &mut Net, i: usize, extra: &str| {
        let name = format!("fv{i}");
        net.add_tap(&format!("tap-{name}"));
        let mut args = net.qemu_args(&name, MACS[i], false, &[], true);
        args.retain(|a| a != "-boot" && a != "n");
        for a in args.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
            a.push_str(",romfile=");
        }
        let append = format!(
            "console=ttyS0 rackboot.url=https://198.18.0.1 rackboot.ca=sha256:{pin} rackboot.mac={} {extra}",
            MACS[i]
        );
        args.extend(["-kernel".into(), boot.join("bootos/vmlinuz").display().to_string()]);
        args.extend(["-initrd".into(), boot.join("bootos/initrd.img").display().to_string()]);
        args.extend(["-append".into(), append]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        net.spawn(&srv, &args, &format!("{name}.qemu.log"));
    };
    let enrolled = |net: &Net, i: usize| -> Option<String> {
        let agent = net.try_api("GET", &format!("/machines/{}/agent", MACS[i]))?;
        agent["enrolled_from"].as_str().map(str::to_string)
    };
    let serial = |net: &Net, i: usize| net.log(&format!("fv{i}.serial"));

    start(&mut net, 0, "");
    start(&mut net, 1, "");
    let mut addrs = Vec::new();
    for i in 0..2 {
        let from = wait_for(300, || serial(&net, i), || enrolled(&net, i));
        assert!(from.starts_with("10.254.254."), "VM {i} enrolled from the fallback network: {from}");
        assert!(serial(&net, i).contains("network up (fallback)"), "{}", serial(&net, i));
        addrs.push(from);
    }
    assert_ne!(addrs[0], addrs[1], "two VMs, two addresses");
    start(&mut net, 2, &format!("rackboot.fallback_ip={}", addrs[0]));
    let from = wait_for(300, || serial(&net, 2), || enrolled(&net, 2));
    assert!(from.starts_with("10.254.254.") && !addrs.contains(&from), "a free address: {from} among {addrs:?}");
    assert!(serial(&net, 2).contains("in use by another node"), "{}", serial(&net, 2));
    println!("fallback addresses: {addrs:?} and {from}");
}
