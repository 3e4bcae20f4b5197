//! The appliance as a real process (the `rackboot` binary), for tests that kill it with SIGKILL.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hyper::Method;
use rackboot::client::ApiClient;

/// The running binary; dropping it kills it with SIGKILL (no shutdown, no flush).
pub struct Process {
    child: Child,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn free_udp() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub fn free_tcp() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts the binary on `config` and waits until its API answers on `https`; the API client.
pub async fn start(config: &Path, data: &Path, https: u16) -> (Process, ApiClient) {
    let child = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["serve", "--config"])
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let process = Process { child };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "the appliance did not come up");
        if let (Ok(token), Ok(ca)) =
            (std::fs::read_to_string(data.join("admin.token")), std::fs::read(data.join("tls/ca.pem")))
        {
            let api = ApiClient::new(&format!("https://127.0.0.1:{https}"), token.trim().to_string(), &ca).unwrap();
            if api.call(Method::GET, "/leases?limit=1", None).await.is_ok_and(|(s, _)| s == 200) {
                return (process, api);
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
