//! The boot-storm simulator (bench/storm) in small: 50 machines, BIOS and UEFI alternating,
//! power on together and go through the whole network boot against one appliance — the ROM's
//! DHCP and TFTP, iPXE's DHCP, the boot script, kernel and initrd over HTTP, and the BootOS
//! agent's enrollment with the boot nonce, inventory and first poll. None may fail, no address
//! may be leased twice, and each machine ends up enrolled with its inventory in the CMDB.

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::Lab;
use hyper::Method;
use rackboot_storm::{dhcp::Relay, Firmware, Stage, Storm, Until};

const MACHINES: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_machines_boot_at_once_and_all_enroll() {
    let mut lab = Lab::start("").await;
    let boot = lab.dir.path().join("boot");
    std::fs::create_dir_all(boot.join("bootos")).unwrap();
    // Sizes that make TFTP and HTTP do real work: many TFTP blocks, several MB over HTTP.
    std::fs::write(boot.join("undionly.kpxe"), vec![0x55u8; 70_001]).unwrap();
    std::fs::write(boot.join("ipxe.efi"), vec![0xaau8; 1_000_003]).unwrap();
    std::fs::write(boot.join("bootos/vmlinuz"), vec![1u8; 3 << 20]).unwrap();
    std::fs::write(boot.join("bootos/initrd.img"), vec![2u8; 5 << 20]).unwrap();

    let app = lab.app.as_ref().unwrap();
    let (dhcp, tftp) = (app.dhcp_addr.unwrap(), app.tftp_addr.unwrap());
    // The simulator plays the lab's relay agent: it takes over the socket the answers come to.
    let socket = std::mem::replace(&mut lab.relay, tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let relay = Relay::start(socket, dhcp, std::net::Ipv4Addr::LOCALHOST);
    let storm = Storm {
        machines: MACHINES,
        firmware: Firmware::Mixed,
        spread: std::time::Duration::ZERO,
        tftp_port: tftp.port(),
        until: Until::Enrolled,
        seed: 7,
    };
    let report = storm.run(Arc::clone(&relay)).await;
    let table = report.table();
    println!("{table}");
    assert_eq!(report.completed(), MACHINES, "{table}");
    assert_eq!(report.duplicate_addresses(), 0, "{table}");
    assert_eq!(report.duplicate_machine_ids(), 0, "{table}");
    for o in &report.outcomes {
        let stages: Vec<Stage> = o.stages.iter().map(|(s, _)| *s).collect();
        assert_eq!(stages, Stage::ALL, "{} skipped a stage", o.mac);
        assert!(!o.local_boot);
    }

    // The CMDB has each of them, enrolled at the address it was leased, with its inventory.
    let list = lab.api.ok(Method::GET, "/machines?limit=200", None).await.unwrap();
    let machines = list["machines"].as_array().unwrap();
    assert_eq!(machines.len(), MACHINES, "{list}");
    let leases = lab.api.ok(Method::GET, "/leases?limit=1000", None).await.unwrap();
    let leases = leases["leases"].as_array().unwrap();
    let mut uefi = 0;
    for o in &report.outcomes {
        let id = o.machine_id.unwrap();
        let m = machines
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("machine {id} of {} is not listed", o.mac));
        assert_eq!(m["macs"][0], o.mac);
        assert_eq!(m["inventory"]["cpu"]["model"], "Storm CPU @ 2.0GHz", "{m}");
        uefi += usize::from(m["last_arch"] != "bios");
        let lease = leases.iter().find(|l| l["mac"] == o.mac && l["active"] == true);
        let lease = lease.unwrap_or_else(|| panic!("no active lease of {}", o.mac));
        assert_eq!(lease["ip"], o.address.unwrap().to_string(), "{lease}");
    }
    assert_eq!(uefi, MACHINES / 2, "half the rack is UEFI");
    let addresses: HashSet<_> = report.outcomes.iter().map(|o| o.address.unwrap()).collect();
    assert_eq!(addresses.len(), MACHINES);
}
