//! Signed vendor plugins against the whole appliance: a bundle signed with the real `minisign`
//! by a trusted vendor key is stored by hash with its files' hashes, versions are immutable
//! and ordered, a revoked key disables its plugins, an interrupted, oversized or crashed upload
//! leaves nothing behind, and the repository's plugins build, sign and import as a pack through
//! the CLI. Hostile bundles are in `plugins_hostile.rs`.

use crate::app::*;
use crate::kit::*;
use hyper::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_bundle_is_stored_shown_and_idempotent() {
    let Some(s) = setup("").await else { return };
    let bundle = good("lab-vendor", "1.0.0", "rackboot-lab", CHECK, APPLY);
    let sig = sign(s.keys.path(), &s.lab_key, &bundle);
    let (status, v) = upload(&s.app, &bundle, &sig, false).await;
    assert_eq!(status, 201, "{v}");
    assert_eq!((v["created"].clone(), v["activated"].clone()), (json!(true), json!(true)));
    let p = &v["plugin"];
    assert_eq!(p["sha256"], rackboot_agent::bundle::sha256_hex(&bundle));
    assert_eq!(p["signer"]["vendor"], "rackboot-lab");
    let shown = s.app.get("/plugins/lab-vendor/versions/1.0.0").await;
    let files: Vec<(String, String)> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().into(), f["sha256"].as_str().unwrap().into()))
        .collect();
    assert!(files.contains(&("bin/apply".into(), rackboot_agent::bundle::sha256_hex(APPLY.as_bytes()))), "{files:?}");
    assert_eq!(shown["manifest"]["apply"]["reboot"], true);
    assert_eq!(shown["active"], true);
    // The blob on disk is the bundle, byte for byte.
    let blob = std::fs::read(s.app.dir.path().join("plugins/blobs").join(p["sha256"].as_str().unwrap())).unwrap();
    assert_eq!(blob, bundle);
    // The same bytes again change nothing.
    let (status, again) = upload(&s.app, &bundle, &sig, false).await;
    assert_eq!((status, again["created"].clone()), (200, json!(false)), "{again}");
    stored(&s, 1).await;
    // A viewer reads but cannot upload or trust.
    let (st, t) = s.app.api.call(Method::POST, "/tokens", Some(json!({"name": "ro", "role": "viewer"}))).await.unwrap();
    assert_eq!(st, 201, "{t}");
    let viewer = rackboot::client::ApiClient::new(
        &s.app.url(),
        t["secret"].as_str().unwrap().into(),
        s.app.app.as_ref().unwrap().ca_pem.as_bytes(),
    )
    .unwrap();
    assert_eq!(viewer.call(Method::GET, "/plugins/lab-vendor", None).await.unwrap().0, 200);
    let parts: [(&str, &str, &[u8]); 2] = [("bundle", "b", &bundle), ("signature", "s", &sig)];
    assert_eq!(viewer.post_form("/plugins", &parts).await.unwrap().0, 403);
    let key = viewer.call(Method::POST, "/plugin-keys", Some(json!({"vendor": "x", "public_key": "y"}))).await.unwrap();
    assert_eq!(key.0, 403);
    // The upload is in the audit log.
    let audit = s.app.get("/audit?method=POST").await;
    assert!(audit.to_string().contains("/plugins"), "{audit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_are_immutable_ordered_and_rolled_back() {
    let Some(s) = setup("").await else { return };
    let dir = s.keys.path();
    let put = |v: &str, apply: &str, downgrade: bool| {
        let b = good("raid", v, "rackboot-lab", CHECK, apply);
        let sig = sign(dir, &s.lab_key, &b);
        let app = &s.app;
        async move { upload(app, &b, &sig, downgrade).await }
    };
    assert_eq!(put("1.0.0", APPLY, false).await.0, 201);
    assert_eq!(put("1.2.0", APPLY, false).await.0, 201);
    assert_eq!(s.app.get("/plugins/raid").await["active"], "1.2.0", "a higher version becomes active");
    let (status, v) = put("1.2.0", "#!/bin/sh\necho other\n", false).await;
    assert_eq!(status, 409, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("immutable"), "{v}");
    let (status, v) = put("1.1.0", APPLY, false).await;
    assert_eq!(status, 409, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("allow_downgrade"), "{v}");
    stored(&s, 2).await;
    let (status, v) = put("1.1.0", APPLY, true).await;
    assert_eq!((status, v["activated"].clone()), (201, json!(false)), "a downgrade is stored, not activated: {v}");
    let r = s.app.api.ok(Method::POST, "/plugins/raid/rollback", None).await.unwrap();
    assert_eq!(r["active"], "1.1.0", "rollback takes the highest version below the active one");
    let a = s.app.api.ok(Method::POST, "/plugins/raid/activate", Some(json!({"version": "1.2.0"}))).await.unwrap();
    assert_eq!(a["active"], "1.2.0");
    let (status, v) = s.app.api.call(Method::DELETE, "/plugins/raid/versions/1.2.0", None).await.unwrap();
    assert_eq!(status, 409, "the active version stays while others exist: {v}");
    assert_eq!(s.app.api.call(Method::DELETE, "/plugins/raid/versions/1.0.0", None).await.unwrap().0, 204);
    stored(&s, 2).await;
    // Another vendor cannot publish under this name.
    let (acme_pub, acme_key) = keypair(dir, "acme");
    let text = std::fs::read_to_string(acme_pub).unwrap();
    s.app.api.ok(Method::POST, "/plugin-keys", Some(json!({"vendor": "acme", "public_key": text}))).await.unwrap();
    let b = good("raid", "9.0.0", "acme", CHECK, APPLY);
    let (status, v) = upload(&s.app, &b, &sign(dir, &acme_key, &b), false).await;
    assert_eq!(status, 409, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("belongs to vendor rackboot-lab"), "{v}");
    stored(&s, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_disables_its_plugins_and_signs_nothing_more() {
    let Some(s) = setup("").await else { return };
    let dir = s.keys.path();
    let b = good("fw", "1.0.0", "rackboot-lab", CHECK, APPLY);
    assert_eq!(upload(&s.app, &b, &sign(dir, &s.lab_key, &b), false).await.0, 201);
    let key_id = s.app.get("/plugin-keys").await["keys"][0]["key_id"].as_str().unwrap().to_string();
    let r = s.app.api.ok(Method::POST, &format!("/plugin-keys/{key_id}/revoke"), None).await.unwrap();
    assert!(r["revoked_at"].is_u64(), "{r}");
    let v = s.app.get("/plugins/fw/versions/1.0.0").await;
    assert!(v["disabled"].as_str().unwrap().contains("revoked"), "{v}");
    let (status, v) =
        s.app.api.call(Method::POST, "/plugins/fw/activate", Some(json!({"version": "1.0.0"}))).await.unwrap();
    assert_eq!(status, 409, "{v}");
    let b2 = good("fw", "1.1.0", "rackboot-lab", CHECK, APPLY);
    let (status, v) = upload(&s.app, &b2, &sign(dir, &s.lab_key, &b2), false).await;
    assert_eq!(status, 422, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("revoked"), "{v}");
    stored(&s, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_or_oversized_upload_leaves_nothing() {
    let Some(s) = setup("[plugins]\nmax_bundle_bytes = 1048576\n").await else { return };
    // The client sends half of its declared body, then closes the connection.
    let mut conn = crate::raw::connect(&s.app).await;
    let token = s.app.app.as_ref().unwrap().admin_token.clone();
    let head = format!(
        "POST /api/v1/plugins HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: 900000\r\n\r\n--XyZ\r\nContent-Disposition: form-data; name=\"bundle\"; filename=\"b\"\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(&vec![7u8; 400_000]).await.unwrap();
    conn.shutdown().await.unwrap();
    drop(conn);
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    stored(&s, 0).await;
    // A bundle declared past plugins.max_bundle_bytes is refused at once, before its body.
    assert!(declared(&s, "/api/v1/plugins", 3_000_000).await.starts_with("HTTP/1.1 413"));
    // One sent whole (chunked, no length up front) is refused as it grows past the cap; the
    // server may also close while the body is still being sent, which refuses it as well.
    if let Some(status) = upload_chunked(&s, &vec![1u8; 2 << 20]).await {
        assert_eq!(status, 413);
    }
    stored(&s, 0).await;
    // The upload's limit does not let other routes take large bodies.
    assert!(declared(&s, "/api/v1/plugin-keys", 2 << 20).await.starts_with("HTTP/1.1 413"));
}

/// Sends only the head of a POST declaring `len` bytes; the answer.
async fn declared(s: &Setup, path: &str, len: usize) -> String {
    let token = &s.app.app.as_ref().unwrap().admin_token;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    );
    let mut conn = crate::raw::connect(&s.app).await;
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), conn.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

/// `rackboot plugins ...` against the appliance, as an operator runs it.
fn cli(s: &Setup, args: &[&str]) -> std::process::Output {
    let app = s.app.app.as_ref().unwrap();
    let ca = s.keys.path().join("ca.pem");
    std::fs::write(&ca, &app.ca_pem).unwrap();
    std::process::Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .arg("plugins")
        .args(args)
        .args(["--api", &s.app.url(), "--ca", ca.to_str().unwrap(), "--token-file"])
        .arg(s.app.dir.path().join("admin.token"))
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repository_plugins_build_sign_and_import_as_a_pack() {
    let Some(s) = setup("").await else { return };
    let out = tempfile::tempdir().unwrap();
    let build = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/plugins/build.sh"))
        .arg(out.path())
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", String::from_utf8_lossy(&build.stderr));
    for script in ["mdadm-raid1/bin/check", "mdadm-raid1/bin/apply", "lab-vendor/bin/check", "lab-vendor/bin/apply"] {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/plugins/").to_string() + script;
        assert!(std::process::Command::new("sh").arg("-n").arg(&path).status().unwrap().success(), "{script} parses");
    }
    let pack = out.path().join("pack");
    let pack = pack.to_str().unwrap();
    // Untrusted yet: the import is refused, bundle by bundle, with the reason.
    let r = cli(&s, &["import", pack]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("not trusted"), "{}", String::from_utf8_lossy(&r.stderr));
    let public = out.path().join("lab-key/lab.pub");
    let r = cli(&s, &["trust", "add", "--vendor", "rackboot-lab", public.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let r = cli(&s, &["import", pack]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("stored lab-vendor 1.0.0") && text.contains("stored mdadm-raid1 1.0.0"), "{text}");
    let shown = s.app.get("/plugins/mdadm-raid1/versions/1.0.0").await;
    assert_eq!(shown["manifest"]["apply"]["destructive"], true);
    assert_eq!(s.app.get("/plugins/lab-vendor").await["active"], "1.0.0");
    // Importing the same pack again changes nothing.
    let r = cli(&s, &["import", pack]);
    assert!(
        String::from_utf8_lossy(&r.stdout).matches("already stored").count() == 2,
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    // A pack whose index disagrees with a bundle is refused before anything is sent.
    let index = out.path().join("pack/index.toml");
    let text = std::fs::read_to_string(&index).unwrap();
    let first_sha = text.split("sha256 = \"").nth(1).unwrap()[..64].to_string();
    std::fs::write(&index, text.replace(&first_sha, &"0".repeat(64))).unwrap();
    let r = cli(&s, &["import", pack]);
    assert!(!r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("index.toml says"), "{}", String::from_utf8_lossy(&r.stderr));
    stored(&s, 2).await;
    let r = cli(&s, &["list"]);
    assert!(String::from_utf8_lossy(&r.stdout).contains("mdadm-raid1"), "{}", String::from_utf8_lossy(&r.stdout));
}

/// Posts a multipart upload with chunked encoding (no length up front); its status, or `None`
/// when the connection was closed before an answer.
async fn upload_chunked(s: &Setup, bundle: &[u8]) -> Option<u16> {
    let token = &s.app.app.as_ref().unwrap().admin_token;
    let mut body = b"--XyZ\r\nContent-Disposition: form-data; name=\"bundle\"; filename=\"b\"\r\n\r\n".to_vec();
    body.extend_from_slice(bundle);
    body.extend_from_slice(b"\r\n--XyZ--\r\n");
    let head = format!(
        "POST /api/v1/plugins HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary=XyZ\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    let mut conn = crate::raw::connect(&s.app).await;
    conn.write_all(head.as_bytes()).await.ok()?;
    for chunk in body.chunks(64 << 10) {
        let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if conn.write_all(&framed).await.is_err() {
            break;
        }
    }
    let _ = conn.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), conn.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).split(' ').nth(1).and_then(|c| c.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_upload_leaves_nothing_after_the_next_start() {
    let Some(mut s) = setup("").await else { return };
    let b = good("keep", "1.0.0", "rackboot-lab", CHECK, APPLY);
    assert_eq!(upload(&s.app, &b, &sign(s.keys.path(), &s.lab_key, &b), false).await.0, 201);
    // What a crash can leave: a part-written file in tmp/, a blob renamed but never recorded.
    let plugins = s.app.dir.path().join("plugins");
    std::fs::write(plugins.join("tmp").join("abc.part"), b"half").unwrap();
    std::fs::write(plugins.join("blobs").join("f".repeat(64)), b"orphan").unwrap();
    s.app.stop().await;
    s.app.boot().await;
    stored(&s, 1).await;
    assert_eq!(s.app.get("/plugins/keep").await["active"], "1.0.0", "what was recorded stays");
}
