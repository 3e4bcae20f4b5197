//! The appliance's configurations for the lab's tests: full-mode DHCP on 198.18.0.0/24, an
//! IPv6-only segment, and the BootOS profile the lab boots.

use std::path::Path;

/// BootOS as the lab boots it: the built-in discovery profile with `norandmaps` added. The
/// lab's VMs are emulated (TCG, QEMU 7.2), which keys its translations of guest code by virtual
/// address: with address-space randomization every process BootOS starts (GRUB's tools in the
/// layout step's chroot, mkfs, mdadm) translates its libraries afresh, and the pages that held
/// those translations are slow to write again (measured in session 41; BENCHMARKS.md's git
/// history). Real machines keep randomization: the product's built-in profile is not this
/// one. Ends a config (an array table: a `[boot]` table may still follow).
pub fn lab_discovery() -> String {
    let p = rackboot_config::builtin_discovery();
    let arm = p.arm64.expect("the built-in discovery profile boots arm64 too");
    let arm_cmdline = arm.cmdline.expect("with a command line of its own");
    format!(
        "\n[[boot.profiles]]\nname = {:?}\nkernel = {:?}\ninitrd = {:?}\ncmdline = \"{} norandmaps\"\n\
         arm64 = {{ kernel = {:?}, initrd = {:?}, cmdline = \"{arm_cmdline} norandmaps\" }}\n",
        p.name, p.kernel, p.initrd, p.cmdline, arm.kernel, arm.initrd
    )
}

/// The full-mode lab configuration used by the e2e tests.
pub fn full_config(data_dir: &Path) -> String {
    format!(
        r#"
[server]
data_dir = "{}"
interface = "br0"
[http]
listen = "198.18.0.1:8080"
[dhcp]
mode = "full"
[[dhcp.subnets]]
cidr = "198.18.0.0/24"
pools = ["198.18.0.100-198.18.0.199"]
routers = ["198.18.0.1"]
lease_secs = 600
# DNS runs (the default): clients get 198.18.0.1 as their name server and the domain below.
[dns]
domain = "lab.rackboot.test"
{}"#,
        data_dir.display(),
        lab_discovery()
    )
}

/// An IPv6-only lab: no DHCPv4, DHCPv6 and SLAAC on `fd18::/64` (the server namespace's bridge
/// needs `fd18::1/64` before the appliance starts).
pub fn ipv6_only_config(data_dir: &Path) -> String {
    format!(
        r#"
[server]
data_dir = "{}"
interface = "br0"
[http]
listen = "198.18.0.1:8080"
[dhcp]
mode = "off"
[dhcp6]
enabled = true
[[dhcp6.subnets]]
prefix = "fd18::/64"
pools = ["fd18::100-fd18::fff"]
dns_servers = ["fd18::1"]
domain = "lab.rackboot.test"
slaac = true
[dns]
domain = "lab.rackboot.test"
{}"#,
        data_dir.display(),
        lab_discovery()
    )
}

#[test]
fn the_labs_discovery_profile_is_the_built_in_one_with_norandmaps() {
    let cfg = rackboot_config::Config::parse(&full_config(Path::new("/var/lib/rackboot"))).expect("the lab config");
    let lab = &cfg.boot.profiles["discovery"];
    let mut want = rackboot_config::builtin_discovery();
    want.cmdline.push_str(" norandmaps");
    let arm = want.arm64.as_mut().expect("arm64");
    arm.cmdline = arm.cmdline.take().map(|c| c + " norandmaps");
    assert_eq!(lab, &want);
    assert!(rackboot_config::Config::parse(&ipv6_only_config(Path::new("/var/lib/rackboot"))).is_ok());
}
