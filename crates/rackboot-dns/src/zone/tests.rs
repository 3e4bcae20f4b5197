use super::*;

fn settings() -> ZoneSettings {
    ZoneSettings {
        domain: "rack.internal".into(),
        server_ip: Ipv4Addr::new(198, 18, 0, 1),
        ttl: 30,
        reverse: vec!["198.18.0.0/24".parse().unwrap()],
        reverse6: vec![],
        server_ip6: None,
    }
}

fn name(s: &str) -> LowerName {
    s.parse().unwrap()
}

fn hosts() -> Vec<(String, Ipv4Addr)> {
    vec![
        ("node1".into(), Ipv4Addr::new(198, 18, 0, 10)),
        ("node2".into(), Ipv4Addr::new(198, 18, 0, 11)),
        ("node2".into(), Ipv4Addr::new(198, 18, 0, 12)),
        ("far".into(), Ipv4Addr::new(203, 0, 113, 5)),
    ]
}

fn rdata(l: Lookup<'_>) -> Vec<String> {
    match l {
        Lookup::Answer { answers, .. } => answers.iter().map(|r| r.data.to_string()).collect(),
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[test]
fn forward_and_reverse_answers() {
    let z = Zones::build(&settings(), &hosts(), 7);
    assert_eq!(rdata(z.lookup(&name("node1.rack.internal."), RecordType::A)), ["198.18.0.10"]);
    assert_eq!(rdata(z.lookup(&name("NODE2.Rack.Internal."), RecordType::A)), ["198.18.0.11", "198.18.0.12"]);
    assert_eq!(rdata(z.lookup(&name("10.0.18.198.in-addr.arpa."), RecordType::PTR)), ["node1.rack.internal."]);
    assert_eq!(rdata(z.lookup(&name("1.0.18.198.in-addr.arpa."), RecordType::PTR)), ["rackboot.rack.internal."]);
    assert_eq!(rdata(z.lookup(&name("rackboot.rack.internal."), RecordType::A)), ["198.18.0.1"]);
    // An address outside the reverse networks still resolves forward, but has no PTR of ours.
    assert_eq!(rdata(z.lookup(&name("far.rack.internal."), RecordType::A)), ["203.0.113.5"]);
    assert_eq!(z.lookup(&name("5.113.0.203.in-addr.arpa."), RecordType::PTR), Lookup::NotOurs);
}

#[test]
fn apex_has_soa_and_ns_with_glue() {
    let z = Zones::build(&settings(), &hosts(), 42);
    match z.lookup(&name("rack.internal."), RecordType::SOA) {
        Lookup::Answer { answers, .. } => match &answers[0].data {
            RData::SOA(soa) => {
                assert_eq!(soa.serial, 42);
                assert_eq!(soa.mname.to_string(), "rackboot.rack.internal.");
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    match z.lookup(&name("0.18.198.in-addr.arpa."), RecordType::NS) {
        Lookup::Answer { answers, additionals } => {
            assert_eq!(answers[0].data.to_string(), "rackboot.rack.internal.");
            assert_eq!(additionals[0].data.to_string(), "198.18.0.1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_names_and_types() {
    let z = Zones::build(&settings(), &hosts(), 1);
    assert!(matches!(z.lookup(&name("nobody.rack.internal."), RecordType::A), Lookup::NxDomain(_)));
    assert!(matches!(z.lookup(&name("node1.rack.internal."), RecordType::AAAA), Lookup::NoData(_)));
    assert!(matches!(z.lookup(&name("x.node1.rack.internal."), RecordType::A), Lookup::NxDomain(_)));
    assert!(matches!(z.lookup(&name("99.0.18.198.in-addr.arpa."), RecordType::PTR), Lookup::NxDomain(_)));
    assert_eq!(z.lookup(&name("example.com."), RecordType::A), Lookup::NotOurs);
    assert_eq!(z.lookup(&name("internal."), RecordType::SOA), Lookup::NotOurs);
    // The SOA that comes with a negative answer is the zone's own.
    match z.lookup(&name("7.0.18.198.in-addr.arpa."), RecordType::PTR) {
        Lookup::NxDomain(soa) => {
            assert_eq!(soa.name.to_string(), "0.18.198.in-addr.arpa.");
            assert_eq!(soa.ttl, 5, "negative answers are cached for min(TTL, MINIMUM)");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn empty_non_terminals_answer_nodata() {
    let mut s = settings();
    s.reverse = vec!["198.18.0.0/16".parse().unwrap()];
    let z = Zones::build(&s, &hosts(), 1);
    assert!(matches!(z.lookup(&name("0.18.198.in-addr.arpa."), RecordType::PTR), Lookup::NoData(_)));
    assert!(matches!(z.lookup(&name("9.18.198.in-addr.arpa."), RecordType::PTR), Lookup::NxDomain(_)));
}

#[test]
fn a_host_cannot_take_the_appliance_name() {
    let z = Zones::build(&settings(), &[("rackboot".into(), Ipv4Addr::new(198, 18, 0, 66))], 1);
    assert_eq!(rdata(z.lookup(&name("rackboot.rack.internal."), RecordType::A)), ["198.18.0.1"]);
}

#[test]
fn reverse_zones_split_on_octets() {
    let names = |nets: &[&str]| -> Vec<String> {
        let nets: Vec<Ipv4Net> = nets.iter().map(|n| n.parse().unwrap()).collect();
        reverse_origins(&nets).iter().map(|n| n.to_string()).collect()
    };
    assert_eq!(names(&["198.18.0.0/24"]), ["0.18.198.in-addr.arpa."]);
    assert_eq!(names(&["198.18.0.0/23"]), ["0.18.198.in-addr.arpa.", "1.18.198.in-addr.arpa."]);
    assert_eq!(names(&["198.18.0.0/15"]), ["18.198.in-addr.arpa.", "19.198.in-addr.arpa."]);
    assert_eq!(names(&["10.0.0.0/8"]), ["10.in-addr.arpa."]);
    assert_eq!(names(&["198.18.0.64/26"]), ["0.18.198.in-addr.arpa."]);
    assert_eq!(names(&["10.16.0.0/12"]).len(), 16);
}

#[test]
fn transfer_is_soa_records_soa() {
    let z = Zones::build(&settings(), &hosts(), 3);
    let xfr = z.transfer(&name("rack.internal.")).unwrap();
    assert_eq!(xfr.first().unwrap().record_type(), RecordType::SOA);
    assert_eq!(xfr.last().unwrap().record_type(), RecordType::SOA);
    let a = xfr.iter().filter(|r| r.record_type() == RecordType::A).count();
    assert_eq!(a, 5, "rackboot, node1, node2 x2, far");
    assert!(xfr.iter().any(|r| r.record_type() == RecordType::NS));
    assert!(z.transfer(&name("node1.rack.internal.")).is_none());
}

#[test]
fn aaaa_and_ip6_arpa_answers_beside_a_and_ptr() {
    let s = ZoneSettings {
        reverse6: vec!["fd18::/64".parse().unwrap()],
        server_ip6: Some("fd18::1".parse().unwrap()),
        ..settings()
    };
    let mut z = Zones::build(&s, &hosts(), 9);
    z.add_hosts6(&s, &[("node1".into(), "fd18::100".parse().unwrap()), ("far".into(), "2001:db8::5".parse().unwrap())]);
    assert_eq!(rdata(z.lookup(&name("node1.rack.internal."), RecordType::AAAA)), ["fd18::100"]);
    assert_eq!(rdata(z.lookup(&name("node1.rack.internal."), RecordType::A)), ["198.18.0.10"], "both families");
    let ptr = format!("0.0.1.0.{}8.1.d.f.ip6.arpa.", "0.".repeat(24));
    assert_eq!(reverse_name6("fd18::100".parse().unwrap()).to_string(), ptr);
    let ptr = ptr.as_str();
    assert_eq!(rdata(z.lookup(&name(ptr), RecordType::PTR)), ["node1.rack.internal."]);
    assert_eq!(rdata(z.lookup(&name("rackboot.rack.internal."), RecordType::AAAA)), ["fd18::1"]);
    // Outside every ip6.arpa zone of ours: forward only.
    assert_eq!(rdata(z.lookup(&name("far.rack.internal."), RecordType::AAAA)), ["2001:db8::5"]);
    let far = reverse_name6("2001:db8::5".parse().unwrap());
    assert_eq!(z.lookup(&LowerName::from(&far), RecordType::PTR), Lookup::NotOurs);
    // A name in the zone without a record: NXDOMAIN from our SOA.
    let other = reverse_name6("fd18::200".parse().unwrap());
    assert!(matches!(z.lookup(&LowerName::from(&other), RecordType::PTR), Lookup::NxDomain(_)));
}

#[test]
fn ip6_arpa_zones_fall_on_nibble_boundaries() {
    let zones = |p: &str| reverse_origins6(&[p.parse().unwrap()]).iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(zones("fd18::/64"), ["0.0.0.0.0.0.0.0.0.0.0.0.8.1.d.f.ip6.arpa."]);
    assert_eq!(zones("fd18::/48"), ["0.0.0.0.0.0.0.0.8.1.d.f.ip6.arpa."]);
    let split = zones("fd18::/62");
    assert_eq!(split.len(), 4, "{split:?}");
    assert_eq!(split[3], "3.0.0.0.0.0.0.0.0.0.0.0.8.1.d.f.ip6.arpa.");
}

/// Everything a client can see of `z` for the names in `probe`: each lookup of each type (the
/// records of an answer in a fixed order), each zone's transfer, and the serial.
fn view(z: &Zones, s: &ZoneSettings, probe: &[LowerName]) -> Vec<String> {
    let mut out = vec![format!("serial {}", z.serial())];
    for n in probe {
        for t in [RecordType::A, RecordType::AAAA, RecordType::PTR, RecordType::SOA, RecordType::NS] {
            let seen = match z.lookup(n, t) {
                Lookup::Answer { answers, additionals } => {
                    let mut rs: Vec<String> =
                        answers.iter().copied().chain(additionals).map(|r| r.to_string()).collect();
                    rs.sort();
                    format!("answer {rs:?}")
                }
                Lookup::NoData(soa) => format!("nodata {soa}"),
                Lookup::NxDomain(soa) => format!("nxdomain {soa}"),
                Lookup::NotOurs => "not ours".into(),
            };
            out.push(format!("{n} {t}: {seen}"));
        }
    }
    let apexes = reverse_origins(&s.reverse).into_iter().chain(reverse_origins6(&s.reverse6));
    for apex in apexes.chain([Name::from_ascii(format!("{}.", s.domain)).unwrap()]) {
        // SOA first and last, the records between in any order.
        let mut xfr: Vec<String> = z.transfer(&LowerName::from(&apex)).unwrap().iter().map(|r| r.to_string()).collect();
        let last = xfr.len() - 1;
        xfr[1..last].sort();
        out.push(format!("{apex} transfer {xfr:?}"));
    }
    out
}

/// Fails on the first entry where two views differ (whole views are too long to read).
fn first_difference(got: Vec<String>, want: Vec<String>) -> Result<(), proptest::test_runner::TestCaseError> {
    for (g, w) in got.iter().zip(&want) {
        proptest::prop_assert_eq!(g, w);
    }
    proptest::prop_assert_eq!(got.len(), want.len());
    Ok(())
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(64))]
    /// A snapshot made by adding names to an earlier one (once or twice, folded or not) shows
    /// exactly what a full build of all the names shows.
    #[test]
    fn added_names_show_as_a_full_build_of_all_of_them(
        v4 in proptest::collection::vec((0u8..10, 0u8..3, 1u8..5), 0..24),
        v6 in proptest::collection::vec((0u8..10, 1u16..6), 0..8),
        cut in 0usize..24,
        cut2 in 0usize..24,
        fold_between in proptest::bool::ANY,
    ) {
        let s = ZoneSettings {
            reverse: vec!["198.18.0.0/16".parse().unwrap()],
            reverse6: vec!["fd18::/64".parse().unwrap()],
            server_ip6: Some("fd18::1".parse().unwrap()),
            ..settings()
        };
        let hosts: Vec<(String, Ipv4Addr)> =
            v4.iter().map(|&(n, c, d)| (format!("n{n}"), Ipv4Addr::new(198, 18, c, d))).collect();
        let hosts6: Vec<(String, Ipv6Addr)> =
            v6.iter().map(|&(n, x)| (format!("n{n}"), Ipv6Addr::new(0xfd18, 0, 0, 0, 0, 0, 0, 0x100 + x))).collect();
        let (cut, cut2) = (cut.min(hosts.len()), cut2.min(hosts.len()));
        let (cut, cut2) = (cut.min(cut2), cut.max(cut2));
        let half6 = hosts6.len() / 2;

        let mut full = Zones::build(&s, &hosts, 9);
        full.add_hosts6(&s, &hosts6);
        full.fold();
        let mut first = Zones::build(&s, &hosts[..cut], 7);
        first.add_hosts6(&s, &hosts6[..half6]);
        first.fold();
        let mut second = first.with_added(&s, &hosts[cut..cut2], &[], 8);
        if fold_between {
            second.fold();
        }
        let third = second.with_added(&s, &hosts[cut2..], &hosts6[half6..], 9);

        let mut probe: Vec<LowerName> = ["rack.internal.", "rackboot.rack.internal.", "nobody.rack.internal.",
            "18.198.in-addr.arpa.", "0.18.198.in-addr.arpa.", "2.18.198.in-addr.arpa.", "9.9.18.198.in-addr.arpa."]
            .iter().map(|n| name(n)).collect();
        for n in 0..10u8 {
            probe.push(name(&format!("n{n}.rack.internal.")));
        }
        for c in 0..3u8 {
            for d in 1..5u8 {
                probe.push(LowerName::from(&reverse_name(Ipv4Addr::new(198, 18, c, d))));
            }
        }
        for x in 0..7u16 {
            probe.push(LowerName::from(&reverse_name6(Ipv6Addr::new(0xfd18, 0, 0, 0, 0, 0, 0, 0x100 + x))));
        }
        first_difference(view(&third, &s, &probe), view(&full, &s, &probe))?;
        // The snapshots made before are left as they were.
        let mut before = Zones::build(&s, &hosts[..cut], 7);
        before.add_hosts6(&s, &hosts6[..half6]);
        first_difference(view(&first, &s, &probe), view(&before, &s, &probe))?;
    }
}
