use super::*;

fn profile() -> TestProfile {
    TestProfile {
        name: "burn-in".into(),
        cpu_secs: Some(10),
        memory_mib: Some(64),
        disk_secs: Some(5),
        min_read_mbps: Some(100.0),
        min_write_mbps: Some(50.0),
        min_iops: None,
        smart: true,
        network_secs: None,
        min_network_mbps: None,
    }
}

#[test]
fn figures_are_judged_against_the_floors() {
    let out = "starting\nrackboot-test: cpu 812.4 bogo-ops/s ok\nrackboot-test: memory 64 MiB ok\n\
               rackboot-test: disk-read:vda 310.5 MB/s ok\nrackboot-test: disk-write:vda 42.0 MB/s ok\n\
               rackboot-test: disk-iops:vda 2100 IOPS ok\nrackboot-test: smart:vda - - skipped no SMART (virtio)\n";
    let r = judge(&profile(), out, None);
    let by = |n: &str| r.iter().find(|t| t.name == n).unwrap_or_else(|| panic!("{n}: {r:?}"));
    assert!(by("cpu").passed && by("memory").passed && by("disk-read:vda").passed && by("disk-iops:vda").passed);
    let w = by("disk-write:vda");
    assert!(!w.passed);
    assert_eq!((w.figure, w.floor, w.unit.as_str()), (Some(42.0), Some(50.0), "MB/s"));
    assert_eq!(w.note, "42 MB/s is below the floor of 50");
    assert!(by("smart:vda").passed && by("smart:vda").note.starts_with("skipped"));
    assert_eq!(failure(&r).unwrap(), "test disk-write:vda: 42 MB/s is below the floor of 50");
}

#[test]
fn a_missing_or_failed_test_fails_and_junk_is_ignored() {
    let out =
        "rackboot-test: cpu 1 x error stress-ng exited 2\nrackboot-test: half a line\nrackboot-test: cpu 9 x ok\n";
    let r = judge(&profile(), out, Some("exit code 1"));
    let names: Vec<(&str, bool)> = r.iter().map(|t| (t.name.as_str(), t.passed)).collect();
    assert_eq!(
        names,
        [
            ("cpu", false),
            ("memory", false),
            ("disk-read", false),
            ("disk-write", false),
            ("disk-iops", false),
            ("job", false)
        ]
    );
    assert_eq!(r[0].note, "stress-ng exited 2", "the first line for a name counts");
    assert_eq!(r[1].note, "no result");
    let all_good = judge(&TestProfile { name: "x".into(), smart: true, ..Default::default() }, "", None);
    assert!(failure(&all_good).is_none(), "SMART only, no disk with it: nothing failed");
}

#[test]
fn the_network_is_judged_both_ways_against_one_floor() {
    let p =
        TestProfile { name: "net".into(), network_secs: Some(5), min_network_mbps: Some(900.0), ..Default::default() };
    let out = "rackboot-test: network-tx 941.5 Mbit/s ok\nrackboot-test: network-rx 612 Mbit/s ok\n";
    let r = judge(&p, out, None);
    assert_eq!(r.len(), 2, "{r:?}");
    assert!(r[0].passed && r[0].floor == Some(900.0));
    assert!(!r[1].passed && r[1].note == "612 Mbit/s is below the floor of 900", "{:?}", r[1]);
    // A server that never answered: both directions reported, as errors.
    let out = "rackboot-test: network-tx 0 Mbit/s error the server is busy\n";
    let r = judge(&p, out, None);
    assert_eq!(
        r.iter().map(|t| (t.name.as_str(), t.passed)).collect::<Vec<_>>(),
        [("network-tx", false), ("network-rx", false)]
    );
    assert_eq!(r[1].note, "no result");
}

#[test]
fn a_profile_is_checked() {
    assert_eq!(profile().check(), Ok(()));
    let bad = [
        (TestProfile { name: "a b".into(), smart: true, ..Default::default() }, "name"),
        (TestProfile { name: "x".into(), ..Default::default() }, "tests nothing"),
        (TestProfile { name: "x".into(), cpu_secs: Some(0), ..Default::default() }, "cpu_secs"),
        (TestProfile { name: "x".into(), min_iops: Some(5.0), smart: true, ..Default::default() }, "needs disk_secs"),
        (TestProfile { min_read_mbps: Some(f64::NAN), ..profile() }, "min_read_mbps"),
        (TestProfile { memory_mib: Some(u32::MAX), ..profile() }, "memory_mib"),
        (
            TestProfile { name: "x".into(), min_network_mbps: Some(1.0), smart: true, ..Default::default() },
            "needs network_secs",
        ),
        (TestProfile { network_secs: Some(0), ..profile() }, "network_secs"),
    ];
    for (p, want) in bad {
        let err = p.check().unwrap_err();
        assert!(err.contains(want), "{p:?}: {err}");
    }
}
