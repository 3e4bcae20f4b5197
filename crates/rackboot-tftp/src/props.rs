//! Property tests of the TFTP request path: random datagrams parse to a packet or a reason,
//! read requests survive the wire unchanged, negotiation stays inside what RFC 2348/2349/7440
//! and our limits allow, and no file name made of path pieces ever resolves outside the boot
//! directory (through `..`, absolute paths, backslashes or a symlink pointing out).

use proptest::prelude::*;

use super::packet::{parse, Incoming, RRQ};
use super::request::{negotiate, resolve, MAX_BLKSIZE, MAX_WINDOW};

/// A NUL-free string (TFTP strings are NUL-terminated).
fn text() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|s| s.replace('\0', ""))
}

fn rrq(filename: &str, mode: &str, options: &[(String, String)]) -> Vec<u8> {
    let mut buf = RRQ.to_be_bytes().to_vec();
    for s in [filename, mode].into_iter().chain(options.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()])) {
        buf.extend(s.as_bytes());
        buf.push(0);
    }
    buf
}

/// File names built from pieces an attacker would use.
fn hostile_name() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just(".."),
        Just("."),
        Just(""),
        Just("efi"),
        Just("ipxe.efi"),
        Just("link"),
        Just("outside"),
        Just("\\.."),
        Just("%2e%2e"),
        Just("etc"),
        Just("passwd"),
    ];
    (any::<bool>(), proptest::collection::vec(piece, 1..8))
        .prop_map(|(absolute, parts)| format!("{}{}", if absolute { "/" } else { "" }, parts.join("/")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_datagrams_parse_or_are_refused(buf in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse(&buf);
    }

    #[test]
    fn read_requests_survive_the_wire(
        filename in text(),
        mode in prop_oneof![Just("octet".to_string()), Just("NETASCII".to_string()), text()],
        options in proptest::collection::vec((text(), text()), 0..6),
    ) {
        match parse(&rrq(&filename, &mode, &options)).unwrap() {
            Incoming::Read { filename: f, mode: m, options: o } => {
                prop_assert_eq!(f, filename);
                prop_assert_eq!(m, mode.to_ascii_lowercase());
                let want: Vec<(String, String)> =
                    options.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
                prop_assert_eq!(o, want);
            }
            other => prop_assert!(false, "parsed as {:?}", other),
        }
    }

    #[test]
    fn negotiation_stays_within_limits(
        options in proptest::collection::vec(
            (prop_oneof![Just("blksize"), Just("windowsize"), Just("timeout"), Just("tsize"), Just("x")],
             prop_oneof![any::<u64>().prop_map(|n| n.to_string()), text()]),
            0..8),
        size in any::<u64>(),
    ) {
        let options: Vec<(String, String)> = options.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let (n, ack) = negotiate(&options, size);
        prop_assert!((8..=MAX_BLKSIZE).contains(&n.blksize) || n.blksize == 512);
        prop_assert!((1..=MAX_WINDOW).contains(&n.windowsize));
        prop_assert!((1..=10).contains(&n.timeout.as_secs()));
        // Only what was asked is acknowledged, never an unknown option.
        for (k, _) in &ack {
            prop_assert!(["blksize", "windowsize", "timeout", "tsize"].contains(&k.as_str()));
            prop_assert!(options.iter().any(|(o, _)| o == k));
        }
    }
}

#[test]
fn no_name_resolves_outside_the_boot_directory() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("boot");
    std::fs::create_dir_all(root.join("efi")).unwrap();
    std::fs::write(root.join("efi/ipxe.efi"), b"x").unwrap();
    std::fs::write(root.join("ipxe.efi"), b"x").unwrap();
    std::fs::write(top.path().join("outside"), b"secret").unwrap();
    std::os::unix::fs::symlink(top.path(), root.join("link")).unwrap();
    std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
    let real_root = root.canonicalize().unwrap();
    let mut runner =
        proptest::test_runner::TestRunner::new(ProptestConfig { cases: 3000, ..ProptestConfig::default() });
    let served = std::cell::Cell::new(0);
    runner
        .run(&hostile_name(), |name| {
            if let Ok(path) = resolve(&root, &name) {
                prop_assert!(path.starts_with(&real_root), "{name:?} resolved to {}", path.display());
                prop_assert!(path.is_file());
                served.set(served.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    // The pieces can name the real files too; a property that refused everything would pass
    // trivially.
    assert!(served.get() > 0, "no generated name was served");
}
