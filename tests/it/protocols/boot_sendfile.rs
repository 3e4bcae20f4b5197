//! Boot files over plain HTTP go out with sendfile: bodies byte for byte, one range, ETag and
//! keep-alive; pipelined requests the fast path does not take are handed to the router on the
//! same connection and answered in order; both paths count under one metric; curl gets what is
//! on disk; a client that stops reading is cut after the idle timeout instead of holding its
//! connection for ever.

use std::time::Duration;

use crate::common::https_get_with;
use rackboot::app::{self, Running};
use rackboot::config::Config;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn start(dir: &std::path::Path) -> Running {
    let text = format!(
        "[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n[http]\nlisten = \"127.0.0.1:0\"\n\
         header_timeout_secs = 1\nidle_timeout_secs = 2\n[https]\nlisten = \"127.0.0.1:0\"\n\
         [dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n",
        dir.display()
    );
    std::fs::create_dir_all(dir.join("boot")).unwrap();
    app::start(Config::parse(&text).unwrap()).await.unwrap()
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 253) as u8).collect()
}

/// One response off a kept-alive connection: status, head, body (`head_only`: HEAD or 304).
async fn response(s: &mut TcpStream, pending: &mut Vec<u8>, head_only: bool) -> (u16, String, Vec<u8>) {
    let split = loop {
        if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 65536];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed before a full head: {:?}", String::from_utf8_lossy(pending));
        pending.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&pending[..split]).to_string();
    pending.drain(..split + 4);
    let status = head[9..12].parse().unwrap();
    let len: usize = match head_only {
        true => 0,
        false => header(&head, "content-length").expect("content-length").parse().unwrap(),
    };
    while pending.len() < len {
        let mut chunk = vec![0u8; 1 << 20];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-body");
        pending.extend_from_slice(&chunk[..n]);
    }
    let body = pending.drain(..len).collect();
    (status, head, body)
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path()).await;
    let kernel = pattern(3_000_000);
    std::fs::create_dir_all(dir.path().join("boot/bootos")).unwrap();
    std::fs::write(dir.path().join("boot/bootos/vmlinuz"), &kernel).unwrap();
    let mut s = TcpStream::connect(app.http_addr).await.unwrap();
    let mut pending = Vec::new();

    s.write_all(b"GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let (status, head, body) = response(&mut s, &mut pending, false).await;
    assert_eq!((status, body == kernel), (200, true), "{head}");
    assert_eq!(header(&head, "accept-ranges"), Some("bytes"));
    assert_eq!(header(&head, "content-type"), Some("application/octet-stream"));
    assert!(header(&head, "last-modified").is_some() && header(&head, "date").is_some(), "{head}");
    let etag = header(&head, "etag").expect("etag").to_string();

    // All at once: the fast path's kinds, then one it hands to the router (If-Modified-Since),
    // then a boot file again (now on the router's side of the same connection), then close.
    let batch = format!(
        "GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\nRange: bytes=1000-1999\r\n\r\n\
         GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\nRange: bytes=-10\r\n\r\n\
         GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\nIf-None-Match: {etag}\r\n\r\n\
         HEAD /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\n\r\n\
         GET /boot/files/bootos/vmlinuz?x=1 HTTP/1.1\r\nHost: x\r\nRange: bytes=2999990-5000000\r\n\r\n\
         GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\nIf-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n\r\n\
         GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\nRange: bytes=5-9\r\nConnection: close\r\n\r\n"
    );
    s.write_all(batch.as_bytes()).await.unwrap();
    let (status, head, body) = response(&mut s, &mut pending, false).await;
    assert_eq!((status, body.as_slice()), (206, &kernel[1000..2000]), "{head}");
    assert_eq!(header(&head, "content-range"), Some("bytes 1000-1999/3000000"));
    let (status, _, body) = response(&mut s, &mut pending, false).await;
    assert_eq!((status, body.as_slice()), (206, &kernel[kernel.len() - 10..]));
    let (status, head, _) = response(&mut s, &mut pending, true).await;
    assert_eq!((status, header(&head, "etag")), (304, Some(etag.as_str())), "{head}");
    let (status, head, _) = response(&mut s, &mut pending, true).await;
    assert_eq!((status, header(&head, "content-length")), (200, Some("3000000")), "{head}");
    let (status, head, body) = response(&mut s, &mut pending, false).await;
    assert_eq!((status, body.as_slice()), (206, &kernel[2_999_990..]), "a range past the end is cut: {head}");
    let (status, head, body) = response(&mut s, &mut pending, false).await;
    assert_eq!((status, body == kernel), (200, true), "the router's answer: {head}");
    assert_eq!(header(&head, "etag"), Some(etag.as_str()), "both paths give one ETag");
    let (status, _, body) = response(&mut s, &mut pending, false).await;
    assert_eq!((status, body.as_slice()), (206, &kernel[5..10]));
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).await.unwrap();
    assert!(pending.is_empty() && rest.is_empty(), "nothing after the last answer");

    let (_, metrics) = https_get_with(app.https_addr, &app.ca_pem, "/metrics", Some(&app.admin_token)).await;
    let series: Vec<&str> = metrics.lines().filter(|l| l.starts_with("rackboot_http_requests_total{")).collect();
    let count = |method: &str, status: u16| -> f64 {
        let want = format!("method=\"{method}\",route=\"/boot/files\",status=\"{status}\"");
        series.iter().filter(|l| l.contains(&want)).filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum()
    };
    assert_eq!(
        (count("GET", 200), count("GET", 206), count("GET", 304), count("HEAD", 200)),
        (2.0, 4.0, 1.0, 1.0),
        "{series:#?}"
    );
    assert!(series.iter().all(|l| !l.contains("boot/files/")), "one route label for both paths: {series:#?}");
    app.token.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_gets_what_is_on_disk() {
    if std::process::Command::new("curl").arg("--version").output().is_err() {
        eprintln!("SKIPPED: curl is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path()).await;
    let image = pattern(20 << 20);
    std::fs::write(dir.path().join("boot/image with space.img"), &image).unwrap();
    let url = format!("http://{}/boot/files/image%20with%20space.img", app.http_addr);
    let out = dir.path().join("got");
    let curl = |args: &[&str]| {
        let st = std::process::Command::new("curl").args(["-sSf", "--max-time", "30"]).args(args).output().unwrap();
        assert!(st.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&st.stderr));
        st.stdout
    };
    curl(&["-o", out.to_str().unwrap(), &url]);
    assert!(std::fs::read(&out).unwrap() == image, "the whole file, byte for byte");
    assert_eq!(curl(&["-r", "1048576-1048675", &url]), image[1 << 20..(1 << 20) + 100].to_vec());
    let head = String::from_utf8(curl(&["-I", &url])).unwrap();
    assert!(head.to_ascii_lowercase().contains(&format!("content-length: {}", 20 << 20)), "{head}");
    // Two files on one connection (curl reuses it).
    let two = curl(&["-r", "0-3", &url, "-r", "0-3", &url]);
    assert_eq!(two, [&image[..4], &image[..4]].concat());
    app.token.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_after_the_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let app = start(dir.path()).await;
    let size = 96usize << 20;
    std::fs::write(dir.path().join("boot/big.img"), vec![1u8; size]).unwrap();
    let mut s = TcpStream::connect(app.http_addr).await.unwrap();
    s.write_all(b"GET /boot/files/big.img HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    // Reads nothing for well past the 2 s idle timeout: the server's socket buffer fills and
    // its send stalls.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    let cut = loop {
        match tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => got += n,
            Err(_) => break false,
        }
    };
    assert!(cut && got < size, "the connection stayed open ({got} of {size} bytes read)");
    // The server still serves others.
    let mut other = TcpStream::connect(app.http_addr).await.unwrap();
    other.write_all(b"GET /boot/files/big.img HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let (status, _, body) = response(&mut other, &mut Vec::new(), false).await;
    assert_eq!((status, body.len()), (200, size));
    app.token.cancel();
}
