//! An image that reads the appliance's files: a qcow2 whose backing file, or external data file,
//! is the data directory's `admin.token`, named by a task. The task is refused with the reason,
//! nothing is converted, and nothing is served. Skips where qemu-img (qemu-utils) is missing.

use crate::common::appliance::Appliance;
use crate::common::provision::config;
use hyper::Method;
use serde_json::json;

#[tokio::test]
async fn a_qcow2_naming_an_appliance_file_is_refused_and_nothing_is_served() {
    if !std::process::Command::new("qemu-img").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: no qemu-img (qemu-utils)");
        return;
    }
    let post = tempfile::tempdir().unwrap();
    let a = Appliance::start(&config(post.path())).await;
    let images = a.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    let token = a.dir.path().join("admin.token");
    assert!(token.is_file(), "the appliance's admin token is where the attack expects it");
    for (name, opts) in [("evil.qcow2", vec!["-F", "raw", "-b"]), ("evil-data.qcow2", vec!["-o"])] {
        let mut cmd = std::process::Command::new("qemu-img");
        cmd.args(["create", "-q", "-f", "qcow2"]).args(&opts);
        if name == "evil.qcow2" {
            cmd.arg(&token);
        } else {
            cmd.arg(format!("data_file={}", token.display()));
        }
        assert!(cmd.arg(images.join(name)).arg("1M").status().unwrap().success());

        let task = json!({"select": {"next": 1}, "image": name});
        let (status, body) = a.api.call(Method::POST, "/tasks", Some(task)).await.unwrap();
        assert_eq!(status, 400, "{name}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains("the image is refused") && detail.contains("reads another file"), "{detail}");
    }
    let converted = images.join("converted");
    let left: Vec<_> =
        std::fs::read_dir(&converted).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "nothing converted: {left:?}");
    let listed = a.api.ok(Method::GET, "/tasks", None).await.unwrap();
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(0), "nothing queued: {listed}");
}
