//! `/boot` over real HTTP: per-MAC iPXE scripts from the planner, and boot assets with HEAD,
//! Range and ETag, each recorded on the machine's timeline.

use std::net::{IpAddr, SocketAddr};

use crate::common::*;
use hyper::Method;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.0 request from `from` (a leased address, so the server can tell who asked).
async fn http(lab: &Lab, from: IpAddr, req: &str) -> (u16, String, Vec<u8>) {
    let addr = lab.app.as_ref().unwrap().http_addr;
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    sock.bind(SocketAddr::new(from, 0)).unwrap();
    let mut s = sock.connect(addr).await.unwrap();
    s.write_all(format!("{req}\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let split = out.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&out[..split]).to_string();
    let status = head[9..12].parse().unwrap();
    (status, head, out[split + 4..].to_vec())
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_follow_the_planner() {
    let lab = Lab::start("").await;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    let (status, _, body) = http(&lab, lo, "GET /boot/ipxe?mac=52:54:00:0b:00:01 HTTP/1.0").await;
    let body = String::from_utf8(body).unwrap();
    assert_eq!(status, 200);
    assert!(body.starts_with("#!ipxe\n"), "{body}");
    assert!(body.contains("/boot/files/bootos/vmlinuz console=tty0"), "BIOS: no initrd= on the kernel line: {body}");
    let (_, _, efi) = http(&lab, lo, "GET /boot/ipxe?mac=52:54:00:0b:00:01&platform=efi HTTP/1.0").await;
    assert!(String::from_utf8(efi).unwrap().contains("vmlinuz initrd=initrd.img "));

    let m = eventually(|| lab.api.ok(Method::GET, "/machines/52:54:00:0b:00:01", None)).await;
    let id = m["id"].as_u64().unwrap();
    lab.api.ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"state": "installed"}))).await.unwrap();
    let (_, _, local) = http(&lab, lo, "GET /boot/ipxe?mac=52:54:00:0b:00:01 HTTP/1.0").await;
    assert!(String::from_utf8(local).unwrap().contains("sanboot --no-describe --drive 0x80"));

    let (status, err) =
        lab.api.call(Method::PATCH, &format!("/machines/{id}"), Some(json!({"boot_profile": "nope"}))).await.unwrap();
    assert_eq!(status, 404, "no such profile: {err}");
    lab.api.ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"boot_profile": "discovery"}))).await.unwrap();
    let (_, _, pinned) = http(&lab, lo, "GET /boot/ipxe?mac=52:54:00:0b:00:01 HTTP/1.0").await;
    assert!(String::from_utf8(pinned).unwrap().contains("boots profile discovery"), "a pin wins over installed");

    let (status, _, _) = http(&lab, lo, "GET /boot/ipxe?mac=garbage HTTP/1.0").await;
    assert_eq!(status, 400);
    lab.app.as_ref().unwrap().cmdb.flush().await.unwrap();
    let ev = lab.api.ok(Method::GET, &format!("/machines/{id}/events"), None).await.unwrap();
    let plans: Vec<&str> = ev["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "boot.script")
        .map(|e| e["detail"]["plan"].as_str().unwrap())
        .collect();
    assert_eq!(plans, ["profile", "profile", "local-disk", "profile"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_args_end_bootos_command_line() {
    let lab = Lab::start("[boot]\ndiscovery_args = \"console=ttyS1,115200n8 norandmaps\"").await;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    for platform in ["", "&platform=efi"] {
        let (status, _, body) =
            http(&lab, lo, &format!("GET /boot/ipxe?mac=52:54:00:0b:00:02{platform} HTTP/1.0")).await;
        let body = String::from_utf8(body).unwrap();
        assert_eq!(status, 200);
        let kernel = body.lines().find(|l| l.starts_with("kernel ")).unwrap_or_else(|| panic!("{body}"));
        assert!(kernel.ends_with("rackboot.mac=52:54:00:0b:00:02 console=ttyS1,115200n8 norandmaps"), "{kernel}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assets_support_head_range_etag_and_land_on_the_timeline() {
    let lab = Lab::start("").await;
    let boot = lab.dir.path().join("boot/bootos");
    std::fs::create_dir_all(&boot).unwrap();
    let kernel: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(boot.join("vmlinuz"), &kernel).unwrap();
    std::fs::write(lab.dir.path().join("secret"), b"outside").unwrap();
    let ip = four_way(&lab, [0x52, 0x54, 0, 0x0b, 0, 2], 1000).await.yiaddr();
    let from = IpAddr::V4(ip);

    let (status, head, body) = http(&lab, from, "GET /boot/files/bootos/vmlinuz HTTP/1.0").await;
    assert_eq!((status, body == kernel), (200, true));
    let etag = header(&head, "etag").expect("etag").to_string();
    assert_eq!(header(&head, "accept-ranges"), Some("bytes"));
    let (status, head, body) = http(&lab, from, "HEAD /boot/files/bootos/vmlinuz HTTP/1.0").await;
    assert_eq!((status, body.len(), header(&head, "content-length")), (200, 0, Some("100000")));
    let (status, head, body) =
        http(&lab, from, "GET /boot/files/bootos/vmlinuz HTTP/1.0\r\nRange: bytes=1000-1999").await;
    assert_eq!((status, body.as_slice()), (206, &kernel[1000..2000]));
    assert_eq!(header(&head, "content-range"), Some("bytes 1000-1999/100000"));
    let (status, _, body) =
        http(&lab, from, &format!("GET /boot/files/bootos/vmlinuz HTTP/1.0\r\nIf-None-Match: {etag}")).await;
    assert_eq!((status, body.len()), (304, 0));
    for bad in ["/boot/files/../secret", "/boot/files/bootos/../../secret", "/boot/files/missing"] {
        let (status, _, body) = http(&lab, from, &format!("GET {bad} HTTP/1.0")).await;
        assert!(status == 404 || status == 400, "{bad}: {status}");
        assert!(!body.windows(7).any(|w| w == b"outside"), "{bad} leaked");
    }
    let ev = eventually(|| async {
        let ev = lab.api.ok(Method::GET, "/machines/52:54:00:0b:00:02/events", None).await?;
        let assets: Vec<serde_json::Value> =
            ev["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "boot.asset").cloned().collect();
        anyhow::ensure!(assets.len() == 2, "{} asset events", assets.len());
        Ok(assets)
    })
    .await;
    assert_eq!(
        (ev[0]["detail"]["path"].as_str(), ev[0]["detail"]["bytes"].as_u64()),
        (Some("bootos/vmlinuz"), Some(100_000))
    );
    assert_eq!(ev[1]["detail"]["range"], "bytes=1000-1999");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_defined_through_the_api_can_be_pinned_and_are_validated() {
    let lab = Lab::start("").await;
    let api = &lab.api;
    let rescue = json!({"kernel": "rescue/vmlinuz", "initrd": "http://198.18.0.9/rescue.img", "cmdline": "rescue mac={{ mac }}"});
    api.ok(Method::PUT, "/profiles/rescue", Some(rescue)).await.unwrap();
    let (status, err) = api
        .call(Method::PUT, "/profiles/bad", Some(json!({"kernel": "k", "initrd": "i", "cmdline": "{{ nope }}"})))
        .await
        .unwrap();
    assert_eq!(status, 400, "{err}");
    assert!(err["detail"].as_str().unwrap().contains("undefined"), "{err}");
    let (status, _) =
        api.call(Method::PUT, "/profiles/discovery", Some(json!({"kernel": "k", "initrd": "i"}))).await.unwrap();
    assert_eq!(status, 409, "config profiles are read-only");
    let (status, _) =
        api.call(Method::PUT, "/profiles/no_good", Some(json!({"kernel": "k", "initrd": "i"}))).await.unwrap();
    assert_eq!(status, 400);
    let list = api.ok(Method::GET, "/profiles", None).await.unwrap();
    let names: Vec<(String, String)> = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p["source"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(names, [("discovery".to_string(), "config".to_string()), ("rescue".to_string(), "api".to_string())]);

    let m = api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:0b:00:03"]}))).await.unwrap();
    let id = m["id"].as_u64().unwrap();
    api.ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"boot_profile": "rescue"}))).await.unwrap();
    let (_, _, script) =
        http(&lab, "127.0.0.1".parse().unwrap(), "GET /boot/ipxe?mac=52:54:00:0b:00:03 HTTP/1.0").await;
    let script = String::from_utf8(script).unwrap();
    assert!(script.contains("/boot/files/rescue/vmlinuz rescue mac=52:54:00:0b:00:03"), "{script}");
    assert!(script.contains("initrd http://198.18.0.9/rescue.img"), "{script}");
    let (status, _) = api.call(Method::DELETE, "/profiles/rescue", None).await.unwrap();
    assert_eq!(status, 409, "a pinned profile cannot be deleted");
    api.ok(Method::PATCH, &format!("/machines/{id}"), Some(json!({"boot_profile": null}))).await.unwrap();
    let (status, _) = api.call(Method::DELETE, "/profiles/rescue", None).await.unwrap();
    assert_eq!(status, 204);
    let (status, _) = api.call(Method::DELETE, "/profiles/rescue", None).await.unwrap();
    assert_eq!(status, 404);
}
