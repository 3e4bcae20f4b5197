use super::*;

/// Builds a tar.gz from (name, type, content) with the name written raw, so hostile names are
/// possible (tar's own `set_path` refuses them).
pub fn tgz(entries: &[(&str, tar::EntryType, &[u8])]) -> Vec<u8> {
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (name, kind, data) in entries {
        let mut h = tar::Header::new_gnu();
        let raw = &mut h.as_gnu_mut().unwrap().name;
        raw[..name.len()].copy_from_slice(name.as_bytes());
        h.set_entry_type(*kind);
        h.set_mode(if name.ends_with(".sh") { 0o755 } else { 0o644 });
        h.set_size(data.len() as u64);
        if matches!(kind, tar::EntryType::Symlink | tar::EntryType::Link) {
            h.set_link_name("/etc/passwd").unwrap();
        }
        h.set_cksum();
        b.append(&h, *data).unwrap();
    }
    b.into_inner().unwrap().finish().unwrap()
}

const F: tar::EntryType = tar::EntryType::Regular;

fn refused(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let err = unpack(bytes, &Limits::default(), Some(dir.path())).unwrap_err().0;
    err
}

#[test]
fn a_plain_bundle_unpacks_with_hashes_and_modes() {
    let d = tar::EntryType::Directory;
    let b = tgz(&[
        ("./", d, b""),
        ("manifest.toml", F, b"name = \"x\"\n"),
        ("./bin/", d, b""),
        ("./bin/check.sh", F, b"exit 0\n"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let u = unpack(b.as_slice(), &Limits::default(), Some(dir.path())).unwrap();
    assert_eq!(u.manifest.as_deref(), Some("name = \"x\"\n"));
    assert_eq!(u.files.len(), 2, "the root and directories are no files: {:?}", u.files);
    assert_eq!(u.files[1].path, "bin/check.sh");
    assert!(u.files[1].executable);
    assert_eq!(u.files[1].sha256, sha256_hex(b"exit 0\n"));
    assert_eq!(std::fs::read(dir.path().join("bin/check.sh")).unwrap(), b"exit 0\n");
    // Checking only writes nothing and gives the same answer.
    assert_eq!(unpack(b.as_slice(), &Limits::default(), None).unwrap(), u);
}

#[test]
fn hostile_entries_are_refused_by_name() {
    let cases: [(&str, tar::EntryType, &str); 7] = [
        ("../escape", F, "'..'"),
        ("a/../../escape", F, "'..'"),
        ("/etc/cron.d/x", F, "absolute"),
        ("link", tar::EntryType::Symlink, "links"),
        ("hard", tar::EntryType::Link, "links"),
        ("dev", tar::EntryType::Char, "device"),
        ("fifo", tar::EntryType::Fifo, "fifo"),
    ];
    for (name, kind, why) in cases {
        let err = refused(&tgz(&[("manifest.toml", F, b""), (name, kind, b"")]));
        assert!(err.contains(why), "{name}: {err}");
    }
}

#[test]
fn caps_on_entries_depth_and_size() {
    let limits = Limits { max_entries: 3, max_depth: 2, max_file_bytes: 10, max_total_bytes: 15 };
    let many = tgz(&[("a", F, b""), ("b", F, b""), ("c", F, b""), ("d", F, b"")]);
    assert!(unpack(many.as_slice(), &limits, None).unwrap_err().0.contains("more than 3 entries"));
    let deep = tgz(&[("a/b/c", F, b"")]);
    assert!(unpack(deep.as_slice(), &limits, None).unwrap_err().0.contains("deeper"));
    let big = tgz(&[("a", F, &[0u8; 11])]);
    assert!(unpack(big.as_slice(), &limits, None).unwrap_err().0.contains("per file"));
    let total = tgz(&[("a", F, &[0u8; 10]), ("b", F, &[0u8; 10])]);
    assert!(unpack(total.as_slice(), &limits, None).unwrap_err().0.contains("in total"));
    let twice = tgz(&[("a", F, b"1"), ("./a", F, b"2")]);
    assert!(unpack(twice.as_slice(), &limits, None).unwrap_err().0.contains("twice"));
}

#[test]
fn garbage_is_not_a_bundle() {
    let err = unpack(&b"not gzip at all"[..], &Limits::default(), None).unwrap_err().0;
    assert!(err.contains("not a tar.gz"), "{err}");
}
