//! TFTP against the whole appliance on loopback: option negotiation, windowed transfers, path
//! confinement, client aborts, and the transfer landing on the machine's timeline.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::common::*;
use hyper::Method;
use tokio::net::UdpSocket;

fn rrq(name: &str, opts: &[(&str, &str)]) -> Vec<u8> {
    let mut p = vec![0, 1];
    for s in [name, "octet"].into_iter().chain(opts.iter().flat_map(|(k, v)| [*k, *v])) {
        p.extend_from_slice(s.as_bytes());
        p.push(0);
    }
    p
}

fn ack(block: u16) -> Vec<u8> {
    let mut p = vec![0, 4];
    p.extend_from_slice(&block.to_be_bytes());
    p
}

/// A small windowed TFTP client: returns the file and the OACK's options (if any).
async fn fetch(
    sock: &UdpSocket,
    server: SocketAddr,
    name: &str,
    opts: &[(&str, &str)],
) -> Result<(Vec<u8>, String), String> {
    sock.send_to(&rrq(name, opts), server).await.unwrap();
    let window: u16 = opts.iter().find(|(k, _)| *k == "windowsize").map_or(1, |(_, v)| v.parse().unwrap());
    let mut buf = vec![0u8; 70_000];
    let (mut data, mut oack, mut expect, mut blksize) = (Vec::new(), String::new(), 1u16, 512usize);
    let mut in_window = 0;
    loop {
        let (n, from) = tokio::time::timeout(Duration::from_secs(5), sock.recv_from(&mut buf))
            .await
            .map_err(|_| "timeout")?
            .unwrap();
        match u16::from_be_bytes([buf[0], buf[1]]) {
            6 => {
                oack = String::from_utf8_lossy(&buf[2..n]).replace('\0', " ").trim().to_string();
                if let Some(b) = oack.split(' ').collect::<Vec<_>>().windows(2).find(|w| w[0] == "blksize") {
                    blksize = b[1].parse().unwrap();
                }
                sock.send_to(&ack(0), from).await.unwrap();
            }
            3 => {
                let block = u16::from_be_bytes([buf[2], buf[3]]);
                assert_eq!(block, expect, "blocks arrive in order on loopback");
                data.extend_from_slice(&buf[4..n]);
                expect = expect.wrapping_add(1);
                in_window += 1;
                let last = n - 4 < blksize;
                if last || in_window == window {
                    sock.send_to(&ack(block), from).await.unwrap();
                    in_window = 0;
                }
                if last {
                    return Ok((data, oack));
                }
            }
            5 => return Err(String::from_utf8_lossy(&buf[4..n]).trim_end_matches('\0').to_string()),
            op => panic!("unexpected opcode {op}"),
        }
    }
}

fn tftp_addr(lab: &Lab) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, lab.app.as_ref().unwrap().tftp_addr.unwrap().port()))
}

fn put_file(lab: &Lab, name: &str, len: usize) -> Vec<u8> {
    let bytes: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
    let path = lab.dir.path().join("boot").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, &bytes).unwrap();
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_arrive_intact_with_and_without_options() {
    let lab = Lab::start("").await;
    let file = put_file(&lab, "undionly.kpxe", 300_000);
    let exact = put_file(&lab, "efi/exact.bin", 1428 * 10);
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let (got, oack) = fetch(&sock, tftp_addr(&lab), "undionly.kpxe", &[]).await.unwrap();
    assert_eq!((got == file, oack.as_str()), (true, ""));
    let (got, oack) =
        fetch(&sock, tftp_addr(&lab), "undionly.kpxe", &[("tsize", "0"), ("blksize", "1428"), ("windowsize", "16")])
            .await
            .unwrap();
    assert!(got == file);
    assert_eq!(oack, "tsize 300000 blksize 1428 windowsize 16");
    // A file that is an exact multiple of the block size ends with an empty block.
    let (got, _) =
        fetch(&sock, tftp_addr(&lab), "efi/exact.bin", &[("blksize", "1428"), ("windowsize", "4")]).await.unwrap();
    assert!(got == exact);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_paths_get_an_error_and_no_bytes() {
    let lab = Lab::start("").await;
    put_file(&lab, "ok.bin", 10);
    std::fs::write(lab.dir.path().join("secret"), b"outside the boot dir").unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    for (name, why) in [
        ("../secret", "'..'"),
        // A leading slash means the boot directory's root (GRUB asks that way): no /etc here.
        ("/etc/passwd", "not found"),
        ("/../secret", "'..'"),
        // Backslashes are Windows' separators: turned, then confined like any name.
        ("ok\\bin", "not found"),
        ("..\\secret", "'..'"),
        ("\\..\\secret", "'..'"),
        ("missing.bin", "not found"),
        (&"x".repeat(300), "too long"),
    ] {
        let err = fetch(&sock, tftp_addr(&lab), name, &[]).await.unwrap_err();
        assert!(err.contains(why), "{name}: {err}");
    }
    for name in ["/ok.bin", "//ok.bin", "\\OK.BIN"] {
        let (got, _) = fetch(&sock, tftp_addr(&lab), name, &[]).await.unwrap();
        assert_eq!(got.len(), 10, "{name} is the root's ok.bin");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_error_ends_the_transfer_at_once_and_is_on_the_timeline() {
    let lab = Lab::start("").await;
    put_file(&lab, "big.bin", 2_000_000);
    // A machine with a lease: TFTP knows it only by address, and finds it through the lease.
    let ip = four_way(&lab, [0x52, 0x54, 0, 0, 9, 1], 900).await.yiaddr();
    let sock = UdpSocket::bind((ip, 0)).await.unwrap();
    // A PXE ROM's tsize probe: ask, read the OACK, answer with an ERROR.
    sock.send_to(&rrq("big.bin", &[("tsize", "0"), ("blksize", "1428")]), tftp_addr(&lab)).await.unwrap();
    let mut buf = [0u8; 1500];
    let (n, from) = sock.recv_from(&mut buf).await.unwrap();
    assert_eq!(&buf[..2], &[0, 6], "OACK first");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("2000000"));
    sock.send_to(b"\x00\x05\x00\x08tsize probe\x00", from).await.unwrap();
    // Then the real download, which must not be blocked by the aborted one.
    let (got, _) = fetch(&sock, tftp_addr(&lab), "big.bin", &[("blksize", "1428"), ("windowsize", "8")]).await.unwrap();
    assert_eq!(got.len(), 2_000_000);
    let events = eventually(|| async {
        let ev = lab.api.ok(Method::GET, "/machines/52:54:00:00:09:01/events", None).await?;
        let tftp: Vec<serde_json::Value> =
            ev["events"].as_array().unwrap().iter().filter(|e| e["kind"] == "tftp.transfer").cloned().collect();
        anyhow::ensure!(tftp.len() == 2, "{} tftp events so far", tftp.len());
        Ok(tftp)
    })
    .await;
    assert_eq!(events[0]["detail"]["outcome"], "aborted");
    assert_eq!(
        (events[1]["detail"]["outcome"].as_str(), events[1]["detail"]["bytes"].as_u64()),
        (Some("complete"), Some(2_000_000))
    );
    assert_eq!(events[1]["detail"]["windowsize"], 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_acks_do_not_double_the_data_sent() {
    let lab = Lab::start("").await;
    put_file(&lab, "dup.bin", 512 * 40 + 7);
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.send_to(&rrq("dup.bin", &[]), tftp_addr(&lab)).await.unwrap();
    let mut buf = [0u8; 600];
    let mut data_packets = 0;
    loop {
        let Ok(Ok((n, from))) = tokio::time::timeout(Duration::from_millis(500), sock.recv_from(&mut buf)).await else {
            break;
        };
        assert_eq!(&buf[..2], &[0, 3]);
        data_packets += 1;
        let block = u16::from_be_bytes([buf[2], buf[3]]);
        // A confused client (or a duplicated packet on the wire) ACKs every block twice.
        sock.send_to(&ack(block), from).await.unwrap();
        sock.send_to(&ack(block), from).await.unwrap();
        if n - 4 < 512 {
            break;
        }
    }
    assert_eq!(data_packets, 41, "each block sent once, none doubled by the duplicate ACKs");
}
