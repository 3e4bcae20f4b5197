//! The appliance as a real process (the `rackboot` binary), for tests that kill it with SIGKILL
//! or stop it with SIGTERM. Its listeners bind what the config says (port 0 in these tests) and
//! the addresses they got come back from `--listening-file`: no test picks a port for it.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use hyper::Method;
use rackboot::client::ApiClient;

/// The running binary; dropping it kills it with SIGKILL (no shutdown, no flush).
pub struct Process {
    child: Child,
    /// Where its stderr (its log) goes, appended across restarts on the same data directory.
    log: PathBuf,
}

impl Process {
    /// Sends SIGTERM and waits up to `limit` for the process to exit: its status and how long
    /// it took, or `None` if it was still running (then it is killed when dropped).
    pub fn terminate(&mut self, limit: Duration) -> Option<(ExitStatus, Duration)> {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let sent = Instant::now();
        while sent.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some((status, sent.elapsed()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        None
    }

    /// The last `lines` lines of its log, for a failure message.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read(&self.log).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the started appliance's listeners are.
#[derive(Debug, Clone, Copy)]
pub struct Listening {
    pub https: SocketAddr,
    pub http: Option<SocketAddr>,
    pub dhcp: Option<SocketAddr>,
}

/// Starts the binary on `config` and waits until its API answers; the API client and where its
/// listeners are.
pub async fn start(config: &Path, data: &Path) -> (Process, ApiClient, Listening) {
    let file = data.with_extension("listening.json");
    let _ = std::fs::remove_file(&file);
    let log = data.with_extension("log");
    let stderr = std::fs::File::options().create(true).append(true).open(&log).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["serve", "--config"])
        .arg(config)
        .arg("--listening-file")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut process = Process { child, log };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "the appliance did not come up");
        if let Some(status) = process.child.try_wait().unwrap() {
            panic!("the appliance exited at start: {status}");
        }
        if let (Ok(text), Ok(token), Ok(ca)) = (
            std::fs::read_to_string(&file),
            std::fs::read_to_string(data.join("admin.token")),
            std::fs::read(data.join("tls/ca.pem")),
        ) {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let addr = |k: &str| v[k].as_str().map(|a| a.parse::<SocketAddr>().unwrap());
            let listening = Listening { https: addr("https").unwrap(), http: addr("http"), dhcp: addr("dhcp") };
            let api = ApiClient::new(&format!("https://{}", listening.https), token.trim().to_string(), &ca).unwrap();
            if api.call(Method::GET, "/leases?limit=1", None).await.is_ok_and(|(s, _)| s == 200) {
                return (process, api, listening);
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The acknowledged leases (MAC -> the address its ACK gave it) that the appliance behind `api`
/// does not hold, each as "mac -> ip (stored: what is)".
pub async fn lost_leases(api: &ApiClient, acked: &HashMap<[u8; 6], Ipv4Addr>) -> Vec<String> {
    let leases = api.ok(Method::GET, "/leases?limit=10000", None).await.unwrap();
    let stored: HashMap<String, String> = leases["leases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["ip"].as_str().unwrap().to_string(), l["mac"].as_str().unwrap().to_string()))
        .collect();
    let mut lost = Vec::new();
    for (mac, ip) in acked {
        let mac = mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
        let held = stored.get(&ip.to_string());
        if held != Some(&mac) {
            lost.push(format!("{mac} -> {ip} (stored: {held:?})"));
        }
    }
    lost
}
