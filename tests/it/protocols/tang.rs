//! The appliance's Tang server against Debian's Clevis (and its jose): `clevis encrypt tang`
//! with the advertisement fetched over plain HTTP, and with only a trusted signing key's
//! thumbprint (`/adv/{thp}`), then `clevis decrypt`, which runs the McCallum-Relyea exchange
//! against `/tang/rec/{kid}`. After a rotation with no machine bound, the older key is deleted
//! and what was bound to it no longer decrypts, while the new key's does. Hostile requests are
//! refused and counted; the key API is an admin's. On loopback, no root needed; needs clevis.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::Value;

use crate::common::process::start;

/// `clevis ARGS` with `input` on stdin: its output, or its error.
fn clevis(args: &[&str], input: &str) -> Result<String, String> {
    let mut child = Command::new("clevis")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    match out.status.success() {
        true => Ok(String::from_utf8(out.stdout).unwrap()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// `clevis encrypt tang CFG` of `secret`: the JWE, or why not.
fn encrypt(cfg: &str, secret: &str) -> Result<String, String> {
    clevis(&["encrypt", "tang", cfg], secret)
}

/// `clevis decrypt` of `jwe`: the secret, or why not.
fn decrypt(jwe: &str) -> Result<String, String> {
    clevis(&["decrypt"], jwe)
}

/// `curl` on plain HTTP: (status, body).
fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl").args(["-s", "-w", "\n%{http_code}"]).args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.parse().unwrap_or(0), body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clevis_binds_to_the_appliance_and_unlocks_only_with_a_key_it_still_has() {
    if Command::new("clevis").arg("decrypt").stdin(Stdio::null()).output().is_err() {
        eprintln!("SKIP: clevis is not installed (Debian package clevis)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let relay = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let text = crate::common::config_text(&data, relay.local_addr().unwrap().port(), "");
    let config = dir.path().join("rackboot.toml");
    std::fs::write(&config, text).unwrap();
    let (_app, api, listening) = start(&config, &data).await;
    let base = format!("http://{}/tang", listening.http.expect("plain HTTP listens"));

    // The advertisement: made on first use, the JWS jose verifies inside clevis.
    let (status, adv) = curl(&[&format!("{base}/adv")]);
    assert_eq!(status, 200, "{adv}");
    std::fs::write(dir.path().join("adv.jws"), &adv).unwrap();
    let cfg = |extra: &str| format!(r#"{{"url":"{base}"{extra}}}"#);
    let adv_file = format!(r#","adv":"{}""#, dir.path().join("adv.jws").display());
    let jwe = encrypt(&cfg(&adv_file), "the disk key\n").unwrap();
    assert_eq!(decrypt(&jwe).unwrap(), "the disk key\n");

    // Trust by the signing key's thumbprint: clevis fetches /adv/{thp} and checks it signed.
    let (status, keys) = api.call(Method::GET, "/tang/keys", None).await.unwrap();
    assert_eq!(status, 200, "{keys}");
    assert_eq!(keys["keys"].as_array().unwrap().len(), 1, "{keys}");
    let first = keys["keys"][0].clone();
    assert!(first.get("private_sealed").is_none(), "the private half is never shown: {first}");
    let thp = first["signing_thumbprint"].as_str().unwrap().to_string();
    let by_thp = encrypt(&cfg(&format!(r#","thp":"{thp}""#)), "by thumbprint").unwrap();
    assert_eq!(decrypt(&by_thp).unwrap(), "by thumbprint");
    let wrong = encrypt(&cfg(r#","thp":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA""#), "x").unwrap_err();
    assert!(!wrong.is_empty(), "an unknown thumbprint is not trusted");

    // Hostile requests: unknown key, not a point, not JSON, too large; refused and counted.
    let kid = first["thumbprint"].as_str().unwrap();
    let ct = "content-type: application/jwk+json";
    let point = r#"{"kty":"EC","crv":"P-521","x":"AQ","y":"AQ"}"#;
    for (path, body, want) in [
        (format!("{base}/rec/nosuchkey"), point.to_string(), 404),
        (format!("{base}/rec/{kid}"), point.to_string(), 400),
        (format!("{base}/rec/{kid}"), "not json".to_string(), 400),
        (format!("{base}/rec/{kid}"), format!(r#"{{"kty":"EC","crv":"P-521","x":"{}"}}"#, "A".repeat(5000)), 400),
    ] {
        let (status, answer) = curl(&["-X", "POST", "-H", ct, "--data-binary", &body, &path]);
        assert_eq!(status, want, "{path}: {answer}");
    }
    let token = std::fs::read_to_string(data.join("admin.token")).unwrap();
    let ca = data.join("tls/ca.pem");
    let https = |path: &str, auth: bool| {
        let header = format!("authorization: Bearer {}", token.trim());
        let mut args = vec!["--cacert", ca.to_str().unwrap()];
        if auth {
            args.extend(["-H", header.as_str()]);
        }
        let url = format!("https://{}{path}", listening.https);
        args.push(&url);
        curl(&args)
    };
    let (_, metrics) = https("/metrics", true);
    assert!(metrics.contains(r#"rackboot_tang_recoveries_total{outcome="refused"} 4"#), "{metrics}");
    assert!(metrics.contains(r#"rackboot_tang_recoveries_total{outcome="ok"} 2"#), "{metrics}");

    // Rotation: a new advertised key; with no machine bound to the older one it is deleted by
    // the sweep, and what was bound to it cannot be unlocked any more.
    let (status, rotated) = api.call(Method::POST, "/tang/rotate", None).await.unwrap();
    assert_eq!(status, 201, "{rotated}");
    assert_eq!(rotated["jobs"], serde_json::json!([]), "no machine is bound: {rotated}");
    let new_id = rotated["key"]["id"].as_u64().unwrap();
    assert_ne!(new_id, first["id"].as_u64().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, keys) = api.call(Method::GET, "/tang/keys", None).await.unwrap();
        let ids: Vec<u64> = keys["keys"].as_array().unwrap().iter().filter_map(|k| k["id"].as_u64()).collect();
        if ids == [new_id] {
            break;
        }
        assert!(Instant::now() < deadline, "the older key was not deleted: {keys}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(decrypt(&jwe).is_err(), "the deleted key still unlocks");
    let (_, adv2) = curl(&[&format!("{base}/adv")]);
    assert_ne!(adv2, adv);
    std::fs::write(dir.path().join("adv.jws"), &adv2).unwrap();
    let jwe2 = encrypt(&cfg(&adv_file), "after the rotation").unwrap();
    assert_eq!(decrypt(&jwe2).unwrap(), "after the rotation");

    // The key API is an admin's; the protocol routes are not on the HTTPS API.
    let (status, _) = https("/api/v1/tang/keys", false);
    assert_eq!(status, 401);
    let (status, _) = curl(&[&format!("{base}/../api/v1/tang/keys")]);
    assert_ne!(status, 200);
    let audit: Value = api.call(Method::GET, "/audit?limit=100", None).await.unwrap().1;
    assert!(audit.to_string().contains("/tang/rotate"), "the rotation is audited: {audit}");
}
