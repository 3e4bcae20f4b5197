//! Virtual-media boot against the fake Redfish BMC (its virtual CD takes an image URL with
//! credentials, as sushy-emulator's and real BMCs' do): a task's power-up of a machine whose
//! BMC is set to `virtual-media` makes a BootOS ISO with the machine's static address and a
//! one-time nonce, has the BMC insert it and boot it once, and cycles the power. The ISO goes
//! to the BMC alone (its credentials, its address; ranges served); the machine's BootOS enrolls
//! with the nonce from the ISO, and the CD is ejected; the nonce does not work twice. A BMC
//! without virtual media, and an insert that fails, are on the timeline. Needs grub-mkrescue,
//! xorriso and mtools (`tools/setup.sh`); skipped with a note without them.

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::bmc_fake::{self, Fake, Mode};
use crate::common::appliance::Appliance;

const MAC: &str = "52:54:00:d1:00:01";

/// A raw GET of `path` over TLS from `source`: status, head, body.
async fn fetch(a: &Appliance, source: &str, path: &str, headers: &[(&str, String)]) -> (u16, String, Vec<u8>) {
    let ca = std::fs::read(a.dir.path().join("tls/ca.pem")).unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(rackboot::tls::client_config(&ca).unwrap()));
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let tcp = sock.connect(format!("127.0.0.1:{}", a.tls_port).parse().unwrap()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1".to_string()).unwrap();
    let mut s = tls.connect(name, tcp).await.unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out)).await;
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").map_or(out.len(), |i| i + 4);
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head, out[split..].to_vec())
}

fn basic(user: &str, password: &str) -> String {
    use base64::Engine;
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

async fn events(a: &Appliance, mac: &str) -> Vec<Value> {
    let v = a.api.ok(Method::GET, &format!("/machines/{mac}/events?limit=1000"), None).await.unwrap();
    v["events"].as_array().unwrap().clone()
}

async fn with_bmc(a: &Appliance, mac: &str, fake: &Fake, address: &str) {
    a.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    let spec = json!({"ethernets": [{"name": "nic0", "mac": mac, "network": "edge", "address": address}]});
    a.api.ok(Method::PUT, &format!("/machines/{mac}/network"), Some(spec)).await.unwrap();
    let bmc = json!({"address": format!("127.0.0.1:{}", fake.port), "protocol": "redfish", "username": bmc_fake::USER,
        "password": bmc_fake::PASSWORD, "fingerprint": fake.fingerprint, "boot_via": "virtual-media"});
    a.api.ok(Method::PUT, &format!("/machines/{mac}/bmc"), Some(bmc)).await.unwrap();
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "disk": "/dev/null"});
    a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_machine_boots_bootos_from_a_virtual_cd_only_its_bmc_can_fetch() {
    for tool in ["/usr/bin/grub-mkrescue", "/usr/bin/xorriso", "/usr/bin/mformat"] {
        if !std::path::Path::new(tool).exists() {
            eprintln!("SKIPPED: no {tool} (tools/setup.sh installs grub-efi-amd64-bin, xorriso, mtools)");
            return;
        }
    }
    let config = "[bmc]\npoll_interval_ms = 100\nretry_backoff_ms = 50\nrefresh_interval_secs = 0\n[provision]\n[[provision.networks]]\nname = \"edge\"\ncidr = \"198.18.5.0/24\"\ngateway = \"198.18.5.1\"\n";
    let a = Appliance::start(config).await;
    let boot = a.dir.path().join("boot");
    std::fs::create_dir_all(boot.join("bootos")).unwrap();
    std::fs::create_dir_all(boot.join("images")).unwrap();
    std::fs::write(boot.join("bootos/vmlinuz"), vec![0x4d; 64 << 10]).unwrap();
    std::fs::write(boot.join("bootos/initrd.img"), vec![0x1f; 256 << 10]).unwrap();
    std::fs::write(boot.join("images/lab.img"), b"image").unwrap();
    let cert = bmc_fake::cert();
    let fake = bmc_fake::start(Mode::Good, Default::default(), Duration::ZERO, &cert).await;
    with_bmc(&a, MAC, &fake, "198.18.5.20").await;

    // The power-up: the ISO inserted (with its one-time credentials), a CD boot once, power on.
    let deadline = Instant::now() + Duration::from_secs(60);
    let insert = loop {
        let cd = fake.cd.lock().unwrap().0.clone();
        if !cd.is_null() && fake.power_state() == "On" {
            break cd;
        }
        assert!(Instant::now() < deadline, "no insert: {:?}", events(&a, MAC).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let url = insert["Image"].as_str().unwrap().to_string();
    assert_eq!(url, format!("https://127.0.0.1:{}/vmedia/1.iso", a.tls_port));
    assert_eq!(
        (insert["UserName"].as_str(), insert["WriteProtected"].as_bool()),
        (Some("rackboot-vmedia"), Some(true))
    );
    let password = insert["Password"].as_str().unwrap().to_string();
    assert!(password.len() >= 32, "a one-time password: {password}");
    let boot_override = a.get(&format!("/machines/{MAC}/bmc")).await;
    assert_eq!(boot_override["boot_via"], "virtual-media", "{boot_override}");
    assert_eq!(*fake.resets.lock().unwrap(), ["On"]);
    let path = "/vmedia/1.iso";

    // The BMC fetches it: whole, and in ranges.
    let auth = [("authorization", basic("rackboot-vmedia", &password))];
    let (status, head, iso) = fetch(&a, "127.0.0.1", path, &auth).await;
    assert_eq!(status, 200, "{head}");
    assert_eq!(&iso[0x8001..0x8006], b"CD001", "an ISO 9660 image");
    let ranged = [auth[0].clone(), ("range", "bytes=32768-32774".to_string())];
    let (status, _, part) = fetch(&a, "127.0.0.1", path, &ranged).await;
    assert_eq!((status, &part[..]), (206, &iso[32768..32775]));
    // Its GRUB config boots BootOS with the machine's address and a nonce.
    let text = String::from_utf8_lossy(&iso);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("linux /bootos/vmlinuz"))
        .expect("the GRUB config")
        .to_string();
    println!("the ISO boots: {line}");
    assert!(line.contains(&format!("rackboot.mac={MAC}")) && line.contains("rackboot.url=https://"), "{line}");
    assert!(line.contains("ip=198.18.5.20::198.18.5.1:255.255.255.0:::off"), "{line}");
    let nonce = line.split_whitespace().find_map(|w| w.strip_prefix("rackboot.nonce=")).expect("a nonce").to_string();

    // Anyone else: refused.
    let (status, _, _) = fetch(&a, "127.0.0.1", path, &[]).await;
    assert_eq!(status, 401, "no credentials");
    let (status, _, _) = fetch(&a, "127.0.0.1", path, &[("authorization", basic("rackboot-vmedia", "guess"))]).await;
    assert_eq!(status, 401, "a wrong password");
    let (status, _, _) = fetch(&a, "127.0.0.2", path, &auth).await;
    assert_eq!(status, 403, "the right password from another address than the BMC's");
    let (status, _, _) = fetch(&a, "127.0.0.1", "/vmedia/2.iso", &auth).await;
    assert_eq!(status, 404, "another machine's");

    // BootOS enrolls with the nonce on the ISO: the CD is ejected.
    let enroll = json!({"macs": [MAC], "mode": "bootos", "version": "test", "nonce": nonce}).to_string();
    let (status, text) =
        crate::raw::raw(&a, "POST", "/agent/v1/enroll", &[("content-type", "application/json")], &enroll).await;
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("\"approved\":true"), "enrolled by its boot's nonce: {text}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while fake.cd.lock().unwrap().1 == 0 {
        assert!(Instant::now() < deadline, "not ejected: {:?}", events(&a, MAC).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The event is written once the BMC's answer is in: it may trail the eject the fake BMC saw.
    let ev = loop {
        let ev = events(&a, MAC).await;
        if ev.iter().any(|e| e["kind"] == "bmc.vmedia_ejected") {
            break ev;
        }
        assert!(Instant::now() < deadline, "the eject is not on the timeline: {ev:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let ejected = ev.iter().find(|e| e["kind"] == "bmc.vmedia_ejected").unwrap();
    assert_eq!((ejected["detail"]["why"].as_str(), ejected["detail"]["fetches"].as_u64()), (Some("enrolled"), Some(2)));
    let inserted = ev.iter().find(|e| e["kind"] == "bmc.vmedia_inserted").unwrap();
    assert_eq!(inserted["detail"]["address"], "198.18.5.20/24");
    assert!(!ev.iter().any(|e| e.to_string().contains(&password)), "the one-time password is on no event");
    let (status, _, _) = fetch(&a, "127.0.0.1", path, &auth).await;
    assert_eq!(status, 404, "ejected: nothing to fetch");
    // The nonce is spent.
    let (status, text) =
        crate::raw::raw(&a, "POST", "/agent/v1/enroll", &[("content-type", "application/json")], &enroll).await;
    assert!(status == 409 || !text.contains("\"approved\":true"), "the nonce a second time: {status} {text}");

    // A BMC without virtual media, and one whose insert fails: said on the timeline.
    for (mac, mode, why, address) in [
        ("52:54:00:d1:00:02", Mode::NoMedia, "no virtual CD", "198.18.5.21"),
        ("52:54:00:d1:00:03", Mode::InsertFails, "inserting the virtual CD", "198.18.5.22"),
    ] {
        let fake = bmc_fake::start(mode, Default::default(), Duration::ZERO, &cert).await;
        with_bmc(&a, mac, &fake, address).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let failed = loop {
            if let Some(e) = events(&a, mac).await.into_iter().find(|e| e["kind"] == "bmc.vmedia_failed") {
                break e;
            }
            assert!(Instant::now() < deadline, "{mode:?}: no failure recorded");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(failed["detail"]["error"].as_str().unwrap().contains(why), "{mode:?}: {failed}");
        assert!(fake.resets.lock().unwrap().is_empty(), "{mode:?}: not powered on without its CD");
    }
}
