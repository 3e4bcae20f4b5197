//! End-to-end TFTP with real clients (atftp, tftp-hpa, curl) in network namespaces: the same
//! files, with and without blksize/windowsize, arrive with matching checksums; a refused path
//! gets an error and no bytes. `#[ignore]`d like every root-only test; CI runs them.

use crate::netns::{full_config, require, Net};

fn sha(net: &Net, ns: &str, path: &str) -> String {
    let out = net.run(ns, &format!("sha256sum {path}"));
    String::from_utf8_lossy(&out.stdout).split(' ').next().unwrap_or("").to_string()
}

#[test]
#[ignore = "e2e: needs root, ip netns, atftp, tftp (tftp-hpa), curl"]
fn atftp_tftp_hpa_and_curl_fetch_identical_files() {
    require(&["ip", "atftp", "tftp", "curl", "sha256sum"]);
    let mut net = Net::new("tf");
    let cli = net.add_client("tfc", "52:54:00:e3:00:01");
    net.run(&cli, "ip addr add 198.18.0.20/24 dev eth0");
    let data = net.path("data");
    std::fs::create_dir_all(data.join("boot/efi")).unwrap();
    let big: Vec<u8> = (0..5_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(data.join("boot/big.bin"), &big).unwrap();
    std::fs::write(data.join("boot/efi/small.efi"), b"tiny").unwrap();
    std::fs::write(net.path("secret"), b"never served").unwrap();
    net.start_rackboot(&full_config(&data));
    let want = sha(&net, &net.srv.clone(), &data.join("boot/big.bin").display().to_string());
    let out = net.path("out");
    let o = out.display();
    let cases = [
        ("atftp lockstep", format!("atftp -g -r big.bin -l {o} 198.18.0.1")),
        ("atftp blksize 1428", format!("atftp -g -r big.bin -l {o} --option 'blksize 1428' 198.18.0.1")),
        (
            "atftp blksize 1428 windowsize 16",
            format!("atftp -g -r big.bin -l {o} --option 'blksize 1428' --option 'windowsize 16' 198.18.0.1"),
        ),
        ("atftp tsize", format!("atftp -g -r big.bin -l {o} --option 'tsize 0' 198.18.0.1")),
        ("tftp-hpa", format!("tftp 198.18.0.1 -m binary -c get big.bin {o}")),
        ("curl", format!("curl -sS -o {o} tftp://198.18.0.1/big.bin")),
        ("curl blksize 1428", format!("curl -sS -o {o} --tftp-blksize 1428 tftp://198.18.0.1/big.bin")),
    ];
    for (name, cmd) in &cases {
        let _ = std::fs::remove_file(&out);
        let r = net.run(&cli, &format!("timeout 60 {cmd}"));
        assert!(r.status.success(), "{name}: {}\n{}", String::from_utf8_lossy(&r.stderr), net.log("rackboot.log"));
        assert_eq!(sha(&net, &cli, &o.to_string()), want, "{name}: checksum differs");
    }
    let r =
        net.run(&cli, &format!("timeout 20 curl -sS -o {o}.small tftp://198.18.0.1/efi/small.efi && cat {o}.small"));
    assert_eq!(String::from_utf8_lossy(&r.stdout), "tiny");

    // Refused: no bytes, an error the client reports.
    for bad in ["../secret", "/etc/passwd", "efi/../../secret", "missing.bin"] {
        let _ = std::fs::remove_file(&out);
        let r = net.run(&cli, &format!("timeout 20 curl -sS -o {o} tftp://198.18.0.1/{bad}"));
        assert!(!r.status.success(), "{bad} was served");
        assert!(std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0) == 0, "{bad}: bytes were written");
    }
    let m = net.https_get("/metrics");
    assert!(m.contains("rackboot_tftp_transfers_active 0"), "{m}");
    assert!(m.contains(&format!("rackboot_tftp_transfers_total{{outcome=\"complete\"}} {}", cases.len() + 1)), "{m}");
}
