//! Shared helpers for the in-process provisioning tests (`provision_image`, `provision_installer`).

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::Value;

use super::appliance::Appliance;

/// The provisioning config of these tests: post-install scripts from `post`, hardware profile `lab`.
pub fn config(post: &std::path::Path) -> String {
    format!(
        "[provision]\npostinstall_dir = \"{}\"\n[[provision.hardware_profiles]]\nname = \"lab\"\nscripts = [\"echo configuring $RACKBOOT_DISK\"]\n",
        post.display()
    )
}

/// Waits until the task's single run satisfies `pred`; returns it.
pub async fn run_where(a: &Appliance, task: u64, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let t = a.api.ok(Method::GET, &format!("/tasks/{task}"), None).await.unwrap();
        let run = t["runs"][0].clone();
        if pred(&run) {
            return run;
        }
        assert!(Instant::now() < deadline, "run never got {what}: {run}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Hex SHA-256 of `b`.
pub fn sha256(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

/// Waits until the job `id` (a reboot) has succeeded.
pub async fn reboot_job_succeeds(a: &Appliance, id: &Value) {
    let job = a.get(&format!("/jobs/{id}")).await;
    assert_eq!(job["action"]["kind"], "reboot", "{job}");
    super::eventually(|| async {
        let j = a.api.ok(Method::GET, &format!("/jobs/{id}"), None).await?;
        anyhow::ensure!(j["state"] == "succeeded", "reboot job {}", j["state"]);
        Ok(())
    })
    .await;
}

/// Runs an identity script as an installer's late command does (`sh script ROOT`), off the
/// test's thread: the script downloads from the appliance running on it.
pub async fn run_identity(file: &std::path::Path, root: &std::path::Path) {
    let (f, r) = (file.to_path_buf(), root.to_path_buf());
    let out = tokio::task::spawn_blocking(move || std::process::Command::new("sh").arg(f).arg(r).output())
        .await
        .unwrap()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// The body of an HTTP/1.0 answer, which must be `status`.
pub fn body_of(r: &str, status: u16) -> String {
    let (head, body) = r.split_once("\r\n\r\n").unwrap_or((r, ""));
    assert!(head.starts_with(&format!("HTTP/1.1 {status}")) || head.starts_with(&format!("HTTP/1.0 {status}")), "{r}");
    body.to_string()
}
