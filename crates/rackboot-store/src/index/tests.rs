use super::*;

fn mac(last: u8) -> Mac {
    Mac([0x52, 0x54, 0, 0, 0, last])
}

fn lease(ip: [u8; 4], m: u8, hostname: Option<&str>, expires_at: u64) -> Delta {
    Delta::Lease(Ipv4Addr::from(ip), Some(LeaseBrief { mac: mac(m), hostname: hostname.map(Into::into), expires_at }))
}

#[test]
fn dns_hosts_prefers_cmdb_names_and_drops_expired_leases() {
    let mut ix = Index::default();
    ix.apply(vec![
        Delta::Upsert(Brief {
            id: 1,
            macs: vec![mac(1)],
            hostname: Some("Web1".into()),
            reserved_ip: Some(Ipv4Addr::new(10, 0, 0, 5)),
            state: MachineState::Ready,
            unclaimed: false,
            facet: Default::default(),
            uefi_loader: None,
            boot_profile: None,
            rack: None,
            installer_pending: false,
        }),
        Delta::Upsert(Brief {
            id: 2,
            macs: vec![mac(2)],
            hostname: None,
            reserved_ip: None,
            state: MachineState::Discovered,
            unclaimed: true,
            facet: Default::default(),
            uefi_loader: None,
            boot_profile: None,
            rack: None,
            installer_pending: false,
        }),
        // Machine 1's NIC leased under whatever the client said: the CMDB name wins.
        lease([10, 0, 0, 6], 1, Some("client-says"), 200),
        // ... and its older lease on another address (it moved) is not published.
        lease([10, 0, 0, 20], 1, None, 120),
        // Machine 2 is unnamed: its client-sent name is used.
        lease([10, 0, 0, 7], 2, Some("pxe7"), 300),
        // An unknown client claiming a CMDB name does not get it.
        lease([10, 0, 0, 8], 9, Some("web1"), 300),
        // Two leases claiming one client name: the one renewed last (expiring last) wins.
        lease([10, 0, 0, 9], 10, Some("dup"), 150),
        lease([10, 0, 0, 10], 11, Some("dup"), 400),
        // Expired, and an invalid name: neither is published.
        lease([10, 0, 0, 11], 12, Some("old"), 50),
        lease([10, 0, 0, 12], 13, Some("bad_name"), 300),
        // Names a client may not take for itself: what stacks look up to configure
        // themselves, and the appliance's own.
        lease([10, 0, 0, 13], 14, Some("WPAD"), 300),
        lease([10, 0, 0, 14], 15, Some("isatap"), 300),
        lease([10, 0, 0, 15], 16, Some("localhost"), 300),
        lease([10, 0, 0, 16], 17, Some("rackboot"), 300),
        // A name a rack keeps for a slot nobody has booted in yet.
        lease([10, 0, 0, 17], 18, Some("R9-U07"), 300),
    ]);
    let held = std::collections::HashSet::from(["r9-u07".to_string()]);
    let got = ix.dns_hosts(100, &held);
    let want: Vec<(String, Ipv4Addr)> =
        [("dup", [10, 0, 0, 10]), ("pxe7", [10, 0, 0, 7]), ("web1", [10, 0, 0, 5]), ("web1", [10, 0, 0, 6])]
            .iter()
            .map(|(h, ip)| (h.to_string(), Ipv4Addr::from(*ip)))
            .collect();
    assert_eq!(got.hosts, want);
    assert_eq!(got.next_expiry, Some(200));
    ix.apply(vec![Delta::Lease(Ipv4Addr::new(10, 0, 0, 6), None), Delta::Remove(1)]);
    // The machine is gone (its older lease on .20 has no name of its own).
    // With the named machine gone, the client that asked for "web1" gets it.
    let web1: Vec<_> = ix.dns_hosts(100, &held).hosts.into_iter().filter(|(h, _)| h == "web1").collect();
    assert_eq!(web1, [("web1".to_string(), Ipv4Addr::new(10, 0, 0, 8))]);
}
