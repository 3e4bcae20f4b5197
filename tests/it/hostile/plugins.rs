//! Hostile plugin bundles against the whole appliance, each signed with the real `minisign`
//! where a signature is part of the case: every one is refused (422) with its reason and leaves
//! no record, no blob and nothing in tmp/.

use crate::app::*;
use crate::kit::*;
use hyper::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bundles_are_refused_with_their_reason_and_leave_nothing() {
    let Some(s) = setup("[plugins]\nmax_file_bytes = 33554432\nmax_unpacked_bytes = 67108864\n").await else { return };
    let dir = s.keys.path();
    let (other_pub, other_key) = keypair(dir, "other");
    let text = std::fs::read_to_string(other_pub).unwrap();
    s.app.api.ok(Method::POST, "/plugin-keys", Some(json!({"vendor": "acme", "public_key": text}))).await.unwrap();
    let (_, stranger) = keypair(dir, "stranger");
    let m = manifest("p", "1.0.0", "rackboot-lab");
    let with = |extra: &[(&str, tar::EntryType, u32, &[u8])]| {
        let mut all: Vec<(&str, tar::EntryType, u32, &[u8])> = vec![
            ("manifest.toml", F, 0o644, m.as_bytes()),
            ("bin/check", F, 0o755, b"x"),
            ("bin/apply", F, 0o755, b"x"),
        ];
        all.extend_from_slice(extra);
        tgz(&all)
    };
    let good_bundle = good("p", "1.0.0", "rackboot-lab", CHECK, APPLY);
    let zeros = vec![0u8; 30 << 20];
    let many: Vec<String> = (0..100_000).map(|i| format!("f/{i}")).collect();
    let mut tiny: Vec<(&str, tar::EntryType, u32, &[u8])> = vec![("manifest.toml", F, 0o644, m.as_bytes())];
    tiny.extend(many.iter().map(|n| (n.as_str(), F, 0o644, &b""[..])));
    let cases: Vec<(&str, Vec<u8>, Option<&std::path::Path>, &str)> = vec![
        ("no signature", good_bundle.clone(), None, "no signature"),
        ("untrusted key", good_bundle.clone(), Some(&stranger), "not trusted"),
        ("another vendor's key", good_bundle.clone(), Some(&other_key), "a key signs only its own vendor's plugins"),
        ("../ path", with(&[("../evil", F, 0o644, b"x")]), Some(&s.lab_key), "'..' is not allowed"),
        ("absolute path", with(&[("/etc/evil", F, 0o644, b"x")]), Some(&s.lab_key), "absolute paths are not allowed"),
        (
            "symlink",
            with(&[("bin/link", tar::EntryType::Symlink, 0o777, b"")]),
            Some(&s.lab_key),
            "links are not allowed",
        ),
        (
            "hardlink",
            with(&[("bin/hard", tar::EntryType::Link, 0o644, b"")]),
            Some(&s.lab_key),
            "links are not allowed",
        ),
        ("device node", with(&[("dev/sda", tar::EntryType::Block, 0o644, b"")]), Some(&s.lab_key), "device nodes"),
        ("fifo", with(&[("pipe", tar::EntryType::Fifo, 0o644, b"")]), Some(&s.lab_key), "fifos"),
        (
            "zeros past the total",
            with(&[("z1", F, 0o644, &zeros), ("z2", F, 0o644, &zeros), ("z3", F, 0o644, &zeros)]),
            Some(&s.lab_key),
            "in total",
        ),
        ("a 10 GB entry", ten_gb_bomb(&m), Some(&s.lab_key), "allowed per file"),
        ("100,000 tiny files", tgz(&tiny), Some(&s.lab_key), "more than 1000 entries"),
        (
            "missing file",
            tgz(&[("manifest.toml", F, 0o644, m.as_bytes()), ("bin/check", F, 0o755, b"x")]),
            Some(&s.lab_key),
            "apply.run names bin/apply, which is not in the bundle",
        ),
        ("no manifest", tgz(&[("bin/check", F, 0o755, b"x")]), Some(&s.lab_key), "no manifest.toml"),
        (
            "unknown manifest key",
            with_manifest(&m.replace("[check]", "shell = \"bash\"\n[check]")),
            Some(&s.lab_key),
            "unknown field `shell`",
        ),
        ("bad semver", with_manifest(&m.replace("\"1.0.0\"", "\"1.0\"")), Some(&s.lab_key), "not semver"),
        (
            "bad params schema",
            with_manifest(&m.replace("maxLength = 64", "format = \"uri\"")),
            Some(&s.lab_key),
            "keyword \"format\" is not supported",
        ),
        ("not a tar.gz", b"MZ this is not a bundle".to_vec(), Some(&s.lab_key), "not a tar.gz"),
    ];
    for (what, bundle, key, want) in cases {
        let sig = key.map(|k| sign(dir, k, &bundle)).unwrap_or_default();
        let (status, v) = upload(&s.app, &bundle, &sig, false).await;
        assert_eq!(status, 422, "{what}: {v}");
        assert!(v["detail"].as_str().unwrap().contains(want), "{what}: want {want:?} in {}", v["detail"]);
        stored(&s, 0).await;
    }
    // Altered after signing: one byte changed.
    let sig = sign(dir, &s.lab_key, &good_bundle);
    let mut altered = good_bundle.clone();
    let last = altered.len() - 1;
    altered[last] ^= 1;
    let (status, v) = upload(&s.app, &altered, &sig, false).await;
    assert_eq!(status, 422, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("does not match the bundle"), "{v}");
    stored(&s, 0).await;
}

fn with_manifest(m: &str) -> Vec<u8> {
    tgz(&[("manifest.toml", F, 0o644, m.as_bytes()), ("bin/check", F, 0o755, b"x"), ("bin/apply", F, 0o755, b"x")])
}

/// A gzip stream whose one entry claims 10 GB and carries zeros.
fn ten_gb_bomb(m: &str) -> Vec<u8> {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mh = header("manifest.toml", F, 0o644, m.len() as u64);
    gz.write_all(mh.as_bytes()).unwrap();
    let mut padded = m.as_bytes().to_vec();
    padded.resize(m.len().div_ceil(512) * 512, 0);
    gz.write_all(&padded).unwrap();
    gz.write_all(header("bomb", F, 0o644, 10 << 30).as_bytes()).unwrap();
    gz.write_all(&vec![0u8; 4 << 20]).unwrap();
    gz.finish().unwrap()
}
