//! Images in every format through the whole appliance in-process, with real agents (the
//! `rackboot-agent` library) on loopback: a gzip, an xz, a zstd and a qcow2 image (qemu-img
//! converts it on the appliance when the task is created) each land on a machine's disk byte
//! for byte as the raw image is, the agent telling the format by the first bytes whatever the
//! file is called. A qcow2 whose given checksum is not its own is refused with nothing queued,
//! and a damaged one is refused with the reason its header gives. No root; the qcow2 part skips with a
//! message where qemu-img (qemu-utils) is missing.

use std::io::Write;

use crate::common::appliance::Appliance;
use crate::common::provision::{config, run_where, sha256};
use hyper::Method;
use serde_json::json;

fn qemu_img() -> bool {
    std::process::Command::new("qemu-img").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[tokio::test]
async fn gzip_xz_zstd_and_qcow2_images_land_byte_for_byte() {
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    let raw: Vec<u8> = (0..3_145_728u32).map(|i| ((i.wrapping_mul(2_654_435_761) >> 13) % 11) as u8).collect();
    std::fs::write(images.join("raw.img"), &raw).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(&raw).unwrap();
    // Names that say nothing true: the agent goes by the bytes.
    let mut formats = vec![
        ("gzip", "lab-gzip.img", gz.finish().unwrap()),
        ("xz", "lab-xz.bin", xz.finish().unwrap()),
        ("zstd", "lab-zstd.img.gz", zstd::stream::encode_all(&raw[..], 19).unwrap()),
    ];
    if qemu_img() {
        let made = std::process::Command::new("qemu-img")
            .args(["convert", "-f", "raw", "-O", "qcow2"])
            .arg(images.join("raw.img"))
            .arg(images.join("lab.qcow2"))
            .status()
            .unwrap();
        assert!(made.success());
        formats.push(("qcow2", "lab.qcow2", std::fs::read(images.join("lab.qcow2")).unwrap()));
    } else {
        eprintln!("SKIPPED (qcow2 only): no qemu-img (qemu-utils)");
    }
    let work = tempfile::tempdir().unwrap();
    let mut agents = Vec::new();
    let mut tasks = Vec::new();
    for (i, (format, name, bytes)) in formats.iter().enumerate() {
        std::fs::write(images.join(name), bytes).unwrap();
        let mac = format!("52:54:00:b1:00:{:02x}", i + 1);
        agents.push(a.agent(&mac, work.path()));
        let disk = work.path().join(format!("{format}.disk"));
        let spec = json!({"select": {"macs": [mac]}, "image": name, "disk": disk, "retries": 0});
        let created = a.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap();
        // The task's checksum is the file's as the operator has it, qcow2 included.
        assert_eq!(created["task"]["spec"]["image_sha256"], sha256(bytes), "{format}");
        tasks.push((*format, created["task"]["id"].as_u64().unwrap(), disk));
    }
    for (format, task, disk) in &tasks {
        let run = run_where(&a, *task, 60, "past install", |r| {
            r["state"] != "active"
                || !["wait_agent", "check", "configure", "install"].contains(&r["step"]["step"].as_str().unwrap_or(""))
        })
        .await;
        // Past install: still active, or (the runs go on while the others are checked) failed
        // later, at identity, which a file standing for a disk cannot pass.
        let later = run["state"] == "failed" && run["error"].as_str().is_some_and(|e| e.starts_with("identity:"));
        assert!(run["state"] == "active" || later, "{format}: {run}");
        let on_disk = std::fs::read(disk).unwrap();
        // qemu-img's raw is the image rounded up to whole sectors (already whole here).
        assert!(on_disk == raw, "{format}: the disk holds the raw image byte for byte ({} bytes)", on_disk.len());
    }

    if qemu_img() {
        let mac = "52:54:00:b1:00:10";
        let wrong = json!({"select": {"macs": [mac]}, "image": "lab.qcow2", "image_sha256": "0".repeat(64)});
        let (status, body) = a.api.call(Method::POST, "/tasks", Some(wrong)).await.unwrap();
        assert_eq!(status, 400, "{body}");
        assert!(body["detail"].as_str().unwrap().contains("not the image_sha256 given"), "{body}");
        let mut bad = b"QFI\xfb\0\0\0\x03".to_vec();
        bad.extend(std::iter::repeat_n(0x5a_u8, 8192));
        std::fs::write(images.join("bad.qcow2"), &bad).unwrap();
        let (status, body) = a
            .api
            .call(Method::POST, "/tasks", Some(json!({"select": {"macs": [mac]}, "image": "bad.qcow2"})))
            .await
            .unwrap();
        assert_eq!(status, 400, "{body}");
        assert!(body["detail"].as_str().unwrap().contains("the image is refused"), "{body}");
        let listed = a.api.ok(Method::GET, "/tasks", None).await.unwrap();
        assert_eq!(
            listed["tasks"].as_array().map(Vec::len),
            Some(tasks.len()),
            "nothing queued for the refusals: {listed}"
        );
    }
    agents.into_iter().for_each(|a| a.abort());
}
