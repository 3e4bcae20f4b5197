use std::os::unix::fs::symlink;

use super::*;

fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A small fake machine: 2 sockets x 2 cores x 2 threads, a virtio disk, an SSD, one NIC
/// (plus lo and a bridge, which are not NICs), DMI, 2 memory devices.
fn fake() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    let mut cpuinfo = String::new();
    for p in 0..8 {
        cpuinfo += &format!(
            "processor\t: {p}\nmodel name\t: Intel(R) Xeon(R) Gold 6230\nphysical id\t: {}\ncore id\t\t: {}\n\n",
            p / 4,
            (p / 2) % 2
        );
    }
    put(r, "proc/cpuinfo", &cpuinfo);
    put(r, "proc/meminfo", "MemTotal:        8000000 kB\nMemFree:  100 kB\nMemAvailable:    7000000 kB\n");
    put(r, "proc/sys/kernel/osrelease", "6.1.0-28-cloud-amd64\n");
    put(r, "sys/block/vda/size", "41943040\n");
    put(r, "sys/block/vda/serial", "disk-one\n");
    put(r, "sys/block/vda/queue/rotational", "1\n");
    put(r, "sys/block/sda/size", "1000\n");
    put(r, "sys/block/sda/device/model", "Samsung SSD 870 \n");
    put(r, "sys/block/sda/device/serial", "S5Y1\n");
    put(r, "sys/block/sda/queue/rotational", "0\n");
    put(r, "sys/block/loop0/size", "8\n");
    put(r, "sys/block/sr0/size", "8\n");
    put(r, "sys/bus/pci/drivers/virtio-pci/.keep", "");
    put(r, "sys/bus/pci/devices/0000:00:03.0/vendor", "0x1af4\n");
    put(r, "sys/bus/pci/devices/0000:00:03.0/device", "0x1000\n");
    put(r, "sys/bus/pci/devices/0000:00:03.0/class", "0x020000\n");
    symlink(r.join("sys/bus/pci/drivers/virtio-pci"), r.join("sys/bus/pci/devices/0000:00:03.0/driver")).unwrap();
    put(r, "sys/class/net/eth0/address", "52:54:00:12:34:56\n");
    put(r, "sys/class/net/eth0/carrier", "1\n");
    put(r, "sys/class/net/eth0/speed", "-1\n");
    fs::create_dir_all(r.join("sys/drivers/virtio_net")).unwrap();
    fs::create_dir_all(r.join("sys/devices/virtio0")).unwrap();
    symlink(r.join("sys/devices/virtio0"), r.join("sys/class/net/eth0/device")).unwrap();
    symlink(r.join("sys/drivers/virtio_net"), r.join("sys/devices/virtio0/driver")).unwrap();
    put(r, "sys/class/net/lo/address", "00:00:00:00:00:00\n");
    put(r, "sys/class/net/br0/address", "52:54:00:ff:ff:ff\n");
    put(r, "sys/class/dmi/id/sys_vendor", "QEMU\n");
    put(r, "sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)\n");
    put(r, "sys/class/dmi/id/product_uuid", "1c7a2d6e-0000-4000-8000-000000000001\n");
    // Type 17: 4 GiB as MB, and 4 GiB through the extended-size field.
    let mut dev = vec![0u8; 0x28];
    dev[0] = 17;
    dev[1] = 0x28;
    dev[0x0C..0x0E].copy_from_slice(&4096u16.to_le_bytes());
    fs::create_dir_all(r.join("sys/firmware/dmi/entries/17-0")).unwrap();
    fs::write(r.join("sys/firmware/dmi/entries/17-0/raw"), &dev).unwrap();
    dev[0x0C..0x0E].copy_from_slice(&0x7FFFu16.to_le_bytes());
    dev[0x1C..0x20].copy_from_slice(&4096u32.to_le_bytes());
    fs::create_dir_all(r.join("sys/firmware/dmi/entries/17-1")).unwrap();
    fs::write(r.join("sys/firmware/dmi/entries/17-1/raw"), &dev).unwrap();
    d
}

#[test]
fn reads_a_machine_from_sysfs_and_procfs() {
    let d = fake();
    let inv = collect(d.path());
    assert_eq!(inv.cpu, Cpu { model: "Intel(R) Xeon(R) Gold 6230".into(), cores: 4, threads: 8, sockets: 2 });
    assert_eq!(inv.memory_bytes, 8 << 30, "installed memory from DMI type 17");
    assert_eq!(meminfo(d.path()), (8_000_000 * 1024, 7_000_000 * 1024));
    let names: Vec<&str> = inv.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["sda", "vda"], "loop and cdrom devices are not disks");
    assert_eq!(inv.disks[1].size_bytes, 20 << 30);
    assert_eq!(inv.disks[1].serial.as_deref(), Some("disk-one"));
    assert!(inv.disks[1].rotational && !inv.disks[0].rotational);
    assert_eq!(inv.disks[0].model.as_deref(), Some("Samsung SSD 870"));
    assert_eq!(inv.nics.len(), 1, "lo and bridges are not NICs");
    assert_eq!(
        inv.nics[0],
        Nic {
            name: "eth0".into(),
            mac: "52:54:00:12:34:56".into(),
            driver: Some("virtio_net".into()),
            link: true,
            speed_mbps: None
        }
    );
    assert_eq!(inv.pci[0].class, "020000");
    assert_eq!(inv.pci[0].driver.as_deref(), Some("virtio-pci"));
    assert_eq!(inv.dmi.vendor.as_deref(), Some("QEMU"));
    assert_eq!(inv.dmi.serial, None);
    assert_eq!(inv.kernel, "6.1.0-28-cloud-amd64");
    assert_eq!(macs(d.path()), ["52:54:00:12:34:56"]);
}

#[test]
fn memory_falls_back_to_meminfo_without_dmi() {
    let d = fake();
    fs::remove_dir_all(d.path().join("sys/firmware")).unwrap();
    assert_eq!(collect(d.path()).memory_bytes, 8_000_000 * 1024);
}

#[test]
fn ipmitool_lan_print_is_parsed() {
    let text = "Set in Progress         : Set Complete\nIP Address Source       : Static Address\nIP Address              : 10.1.2.3\nSubnet Mask             : 255.255.255.0\nMAC Address             : 0c:c4:7a:00:00:01\n";
    assert_eq!(
        parse_ipmitool_lan(text),
        Some(Bmc { ip: Some("10.1.2.3".into()), mac: Some("0c:c4:7a:00:00:01".into()) })
    );
    assert_eq!(parse_ipmitool_lan("IP Address : 0.0.0.0\n"), None);
}

#[test]
fn firmware_says_bios_uefi_and_secure_boot_from_efivars() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    assert_eq!(firmware(r), Firmware { uefi: false, secure_boot: None });
    fs::create_dir_all(r.join("sys/firmware/efi/efivars")).unwrap();
    assert_eq!(firmware(r), Firmware { uefi: true, secure_boot: None }, "UEFI, variable unreadable");
    let var = r.join(format!("sys/firmware/efi/efivars/SecureBoot-{EFI_GLOBAL}"));
    // 4 bytes of attributes (NV+BS+RT = 6), then the value.
    fs::write(&var, [6, 0, 0, 0, 1]).unwrap();
    assert_eq!(firmware(r), Firmware { uefi: true, secure_boot: Some(true) });
    fs::write(&var, [6, 0, 0, 0, 0]).unwrap();
    assert_eq!(firmware(r).secure_boot, Some(false));
    fs::write(&var, [6, 0, 0, 0]).unwrap();
    assert_eq!(firmware(r).secure_boot, None, "a short variable is not a yes or a no");
}

#[test]
fn links_report_bonds_vlans_and_ports() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path();
    for (name, mac, state) in [("ens3", "52:54:00:00:00:01", "up"), ("ens4", "52:54:00:00:00:01", "down")] {
        put(r, &format!("sys/class/net/{name}/address"), &format!("{mac}\n"));
        put(r, &format!("sys/class/net/{name}/operstate"), &format!("{state}\n"));
        put(r, &format!("sys/class/net/{name}/device/.keep"), "");
    }
    put(r, "sys/class/net/bond0/address", "52:54:00:00:00:01\n");
    put(r, "sys/class/net/bond0/operstate", "up\n");
    put(r, "sys/class/net/bond0/bonding/mode", "active-backup 1\n");
    put(r, "sys/class/net/bond0/bonding/slaves", "ens3 ens4\n");
    put(r, "sys/class/net/bond0/bonding/active_slave", "ens3\n");
    put(r, "sys/class/net/bond0.10/address", "52:54:00:00:00:01\n");
    put(r, "sys/class/net/bond0.10/operstate", "up\n");
    put(r, "sys/class/net/lo/operstate", "unknown\n");
    put(
        r,
        "proc/net/vlan/bond0.10",
        "bond0.10  VID: 10\t REORDER_HDR: 1  dev->priv_flags: 1021\n         total frames received            0\n\nDevice: bond0\nINGRESS priority mappings: 0:0\n",
    );
    put(
        r,
        "proc/net/bonding/bond0",
        "Bonding Mode: fault-tolerance (active-backup)\n\nSlave Interface: ens3\nMII Status: up\nPermanent HW addr: 52:54:00:00:00:01\n\nSlave Interface: ens4\nMII Status: down\nPermanent HW addr: 52:54:00:00:00:02\n",
    );
    for port in ["ens3", "ens4"] {
        symlink(r.join("sys/class/net/bond0"), r.join(format!("sys/class/net/{port}/master"))).unwrap();
    }
    let macs: Vec<String> = nics(r).into_iter().map(|n| n.mac).collect();
    assert_eq!(macs, ["52:54:00:00:00:01", "52:54:00:00:00:02"], "a bond member's own MAC, not the bond's");
    let links = links(r);
    let names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["bond0", "bond0.10", "ens3", "ens4"], "lo is left out");
    let bond = &links[0];
    assert_eq!((bond.kind.as_str(), bond.bond_mode.as_deref()), ("bond", Some("active-backup")));
    assert_eq!(bond.members, ["ens3", "ens4"]);
    assert_eq!(bond.active_member.as_deref(), Some("ens3"));
    let vlan = &links[1];
    assert_eq!((vlan.kind.as_str(), vlan.vlan_id, vlan.parent.as_deref()), ("vlan", Some(10), Some("bond0")));
    assert_eq!((links[2].kind.as_str(), links[2].up, links[3].up), ("ether", true, false));
}

/// arm64's `/proc/cpuinfo` names no model: the core is named from its implementer and part
/// numbers (an unknown one by its numbers), each processor counts, and the agent says which
/// architecture it runs on.
#[test]
fn an_arm64_cpuinfo_names_the_core_from_its_part_number() {
    let d = tempfile::tempdir().unwrap();
    let core = |n: u32, part: &str| {
        format!("processor\t: {n}\nBogoMIPS\t: 125.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: {part}\n\n")
    };
    put(d.path(), "proc/cpuinfo", &(core(0, "0xd0c") + &core(1, "0xd0c")));
    assert_eq!(cpu(d.path()), Cpu { model: "ARM Neoverse-N1".into(), cores: 2, threads: 2, sockets: 1 });
    put(d.path(), "proc/cpuinfo", &core(0, "0xfff"));
    assert_eq!(cpu(d.path()).model, "arm64 implementer 0x41 part 0xfff");
    assert_eq!(collect(d.path()).arch, std::env::consts::ARCH);
}
