//! Power through a real Redfish BMC emulator: `sushy-emulator --fake` (PyPI sushy-tools 2.2.0,
//! `tools/setup.sh` puts it in target/validators/sushy) over HTTPS with a self-signed
//! certificate pinned by its SHA-256 and basic auth from an htpasswd file. Through the API:
//! status, on, PXE once (UEFI and legacy) read back, cycle, off, each verified by reading the
//! state back and on the machine's timeline; the password is never shown nor stored in the
//! clear; wrong credentials fail at once and are not tried again.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::*;
use hyper::Method;
use serde_json::{json, Value};

const PASSWORD: &str = "sushy-Secret-81";

fn sushy() -> Option<PathBuf> {
    let p = std::env::var_os("RACKBOOT_SUSHY").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/validators/sushy/bin/sushy-emulator")
    });
    p.exists().then_some(p)
}

struct Sushy {
    child: Child,
    port: u16,
    fingerprint: String,
    _dir: tempfile::TempDir,
}

impl Drop for Sushy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the emulator with one fake system (off) on a free loopback port.
async fn start_sushy(bin: &std::path::Path) -> Sushy {
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), ck.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), ck.signing_key.serialize_pem()).unwrap();
    let fingerprint = rackboot::tls::fingerprint(ck.cert.der());
    // htpasswd with a bcrypt digest (the only kind sushy accepts), made by the venv's bcrypt.
    let python = bin.parent().unwrap().join("python3");
    let out = Command::new(&python)
        .args(["-c", &format!("import bcrypt;print('admin:'+bcrypt.hashpw(b'{PASSWORD}',bcrypt.gensalt()).decode())")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::write(dir.path().join("htpasswd"), &out.stdout).unwrap();
    let d = dir.path().display();
    std::fs::write(
        dir.path().join("sushy.conf"),
        format!(
            "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\nSUSHY_EMULATOR_LISTEN_PORT = 0\n\
             SUSHY_EMULATOR_SSL_CERT = '{d}/cert.pem'\nSUSHY_EMULATOR_SSL_KEY = '{d}/key.pem'\n\
             SUSHY_EMULATOR_AUTH_FILE = '{d}/htpasswd'\nSUSHY_EMULATOR_STATE_DIR = '{d}/state'\n\
             SUSHY_EMULATOR_FAKE_SYSTEMS = [{{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'node1',\n\
             'power_state': 'Off', 'nics': [{{'mac': '52:54:00:aa:bb:01', 'ip': '198.18.0.10'}}]}}]\n"
        ),
    )
    .unwrap();
    // Port 0: the emulator (werkzeug) binds a free port itself and logs it ("Running on
    // https://127.0.0.1:PORT").
    let mut child = Command::new(bin)
        .args(["--fake", "--config"])
        .arg(dir.path().join("sushy.conf"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut s = Sushy { child, port: 0, fingerprint, _dir: dir };
    let port = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let port = lines.by_ref().map_while(Result::ok).find_map(|l| {
            l.split("Running on http")
                .nth(1)
                .and_then(|r| r.rsplit(':').next())
                .and_then(|p| p.trim().parse::<u16>().ok())
        });
        // Keep reading (and dropping) its log, so a full pipe never blocks it.
        std::thread::spawn(move || lines.for_each(drop));
        port
    })
    .await
    .unwrap()
    .expect("sushy-emulator says where it listens within its first lines");
    s.port = port;
    s
}

const FAST: &str = "[bmc]\npoll_interval_ms = 250\nretry_backoff_ms = 100\nrequest_timeout_secs = 10\n\
                    soft_off_timeout_secs = 20\naction_deadline_secs = 60\nauth_hold_secs = 300\nrefresh_interval_secs = 0\n";

async fn power(lab: &Lab, id: &str, action: &str, uefi: bool) -> (u16, Value) {
    lab.api
        .call(Method::POST, &format!("/machines/{id}/power"), Some(json!({"action": action, "uefi": uefi})))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn power_through_sushy_emulator_is_verified_by_reading_back() {
    let Some(bin) = sushy() else {
        eprintln!("SKIPPED: sushy-emulator not found (run tools/setup.sh, or set RACKBOOT_SUSHY)");
        return;
    };
    let sushy = start_sushy(&bin).await;
    let lab = Lab::start(FAST).await;
    let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:aa:bb:01"]}))).await.unwrap();
    let id = m["id"].to_string();

    let bmc = json!({"address": format!("127.0.0.1:{}", sushy.port), "protocol": "redfish", "username": "admin",
        "password": PASSWORD, "fingerprint": format!("sha256:{}", sushy.fingerprint)});
    let v = lab.api.ok(Method::PUT, &format!("/machines/{id}/bmc"), Some(bmc.clone())).await.unwrap();
    assert_eq!(v["tls"], json!({"mode": "fingerprint", "sha256": sushy.fingerprint}));
    assert_eq!(v["password_set"], true);
    let shown = lab.api.ok(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap().to_string();
    assert!(!shown.contains(PASSWORD) && !shown.contains("sealed"), "{shown}");
    lab.api.ok(Method::GET, "/machines", None).await.unwrap();

    let (st, v) = power(&lab, &id, "status", false).await;
    assert_eq!((st, v["state"].as_str()), (200, Some("off")), "{v}");

    let (st, v) = power(&lab, &id, "pxe-once", true).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!((v["boot_target"].as_str(), v["boot_mode"].as_str()), (Some("Pxe"), Some("UEFI")), "{v}");
    let (st, v) = power(&lab, &id, "pxe-once", false).await;
    assert_eq!((st, v["boot_mode"].as_str()), (200, Some("Legacy")), "{v}");

    let (st, v) = power(&lab, &id, "on", false).await;
    assert_eq!((st, v["state"].as_str()), (200, Some("on")), "on is read back: {v}");
    let (st, v) = power(&lab, &id, "cycle", false).await;
    assert_eq!((st, v["state"].as_str()), (200, Some("on")), "{v}");
    assert!(v["fallback"].is_null(), "ForceRestart is advertised and works: {v}");
    let (st, v) = power(&lab, &id, "off", false).await;
    assert_eq!((st, v["state"].as_str()), (200, Some("off")), "{v}");

    // The reading is stored with its age; the timeline has every action.
    let v = lab.api.ok(Method::GET, &format!("/machines/{id}/bmc"), None).await.unwrap();
    assert_eq!(v["power"]["state"], "off");
    assert!(v["power_age_secs"].as_u64().unwrap() < 60, "{v}");
    let events = lab.api.ok(Method::GET, &format!("/machines/{id}/events"), None).await.unwrap();
    let actions: Vec<String> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "power.action")
        .map(|e| e["detail"]["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(actions, ["status", "pxe-once", "pxe-once", "on", "cycle", "off"]);

    // Firmware: the fake driver offers no BIOS and no firmware inventory, and the report says
    // so; it is kept for GET.
    let (st, v) = lab.api.call(Method::GET, &format!("/machines/{id}/firmware"), None).await.unwrap();
    assert_eq!(st, 404, "never read yet: {v}");
    let v = lab.api.ok(Method::POST, &format!("/machines/{id}/firmware"), None).await.unwrap();
    assert!(v.get("bios").is_none() && v.get("inventory").is_none() && v["read_at_ms"].is_u64(), "{v}");
    assert_eq!(lab.api.ok(Method::GET, &format!("/machines/{id}/firmware"), None).await.unwrap(), v);

    // The password is sealed in the CMDB file, not in the clear.
    let db = std::fs::read(lab.dir.path().join("rackboot.redb")).unwrap();
    assert!(!db.windows(PASSWORD.len()).any(|w| w == PASSWORD.as_bytes()), "password in the clear in the CMDB");

    // Wrong credentials: a clear 502 at once, and the next attempt does not reach the BMC.
    let mut wrong = bmc.clone();
    wrong["password"] = json!("not-the-password");
    lab.api.ok(Method::PUT, &format!("/machines/{id}/bmc"), Some(wrong)).await.unwrap();
    let t = std::time::Instant::now();
    let (st, v) = power(&lab, &id, "on", false).await;
    assert_eq!(st, 502, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("refused the credentials"), "{v}");
    assert!(t.elapsed() < Duration::from_secs(5), "no retries on refused credentials: {:?}", t.elapsed());
    let (st, v) = power(&lab, &id, "status", false).await;
    assert_eq!(st, 502);
    assert!(v["detail"].as_str().unwrap().contains("not tried again"), "held off: {v}");
    // Setting the right password again lifts the hold.
    lab.api.ok(Method::PUT, &format!("/machines/{id}/bmc"), Some(bmc)).await.unwrap();
    let (st, v) = power(&lab, &id, "status", false).await;
    assert_eq!((st, v["state"].as_str()), (200, Some("off")), "{v}");
}
