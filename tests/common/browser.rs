//! Headless Debian Chromium driven over WebDriver (chromedriver + fantoccini) for the UI tests.
//! The browser trusts the appliance's certificate by pinning its public key (SPKI), not by
//! ignoring certificate errors. `None` (with a SKIPPED line) where chromium is not installed.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A running chromedriver with one browser session.
pub struct Browser {
    pub client: fantoccini::Client,
    _driver: Driver,
    _profile: tempfile::TempDir,
}

/// chromedriver in a process group of its own; dropping it ends the group, so the browser it
/// started goes too, even when a failing test never closes its session.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Base64 SHA-256 of the SubjectPublicKeyInfo of the first certificate in `pem_path`: what
/// Chromium's `--ignore-certificate-errors-spki-list` pins.
pub fn spki_pin(pem_path: &Path) -> String {
    let pem = std::fs::read_to_string(pem_path).unwrap();
    let b64: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    base64::engine::general_purpose::STANDARD.encode(Sha256::digest(cert.tbs_certificate.subject_pki.raw))
}

/// Where screenshots go: `$CARGO_TARGET_DIR/ui-screenshots` (else `target/ui-screenshots`).
pub fn screenshot_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let dir = target.join("ui-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

impl Browser {
    /// Starts chromedriver and a headless Chromium that trusts only the certificate whose SPKI
    /// hash is `pin` (beside the public roots); `None` if the packages are not installed.
    pub async fn start(pin: &str) -> Option<Browser> {
        if !Path::new(CHROMIUM).exists() || !Path::new(CHROMEDRIVER).exists() {
            println!("SKIPPED: {CHROMIUM} or {CHROMEDRIVER} missing (apt-get install chromium chromium-driver)");
            return None;
        }
        // Port 0: chromedriver binds a free port itself and says which on its first lines. A
        // chromedriver that ends without saying (seen once in a loaded full run) is started
        // again, up to three times.
        let mut started = None;
        for _ in 0..3 {
            let mut child = Command::new(CHROMEDRIVER)
                .arg("--port=0")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .expect("chromedriver starts");
            let stdout = child.stdout.take().unwrap();
            let driver = Driver(child);
            let port = tokio::task::spawn_blocking(move || {
                use std::io::BufRead;
                let mut lines = std::io::BufReader::new(stdout).lines();
                let port = lines.by_ref().map_while(Result::ok).find_map(|l| {
                    l.split("started successfully on port ")
                        .nth(1)
                        .and_then(|p| p.trim_end_matches('.').parse::<u16>().ok())
                });
                // Keep reading (and dropping) what it prints, so a full pipe never blocks it.
                std::thread::spawn(move || lines.for_each(drop));
                port
            })
            .await
            .unwrap();
            if let Some(port) = port {
                started = Some((driver, port));
                break;
            }
        }
        let (driver, port) = started.expect("chromedriver says which port it listens on (three tries)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ready(port).await {
            assert!(Instant::now() < deadline, "chromedriver not ready after 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-gpu".into(),
            "--window-size=1400,1000".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            // The SPKI list is only honoured with a profile directory of the test's own.
            format!("--user-data-dir={}", profile.path().display()),
            format!("--ignore-certificate-errors-spki-list={pin}"),
        ];
        let mut caps = serde_json::Map::new();
        caps.insert("goog:chromeOptions".into(), serde_json::json!({"binary": CHROMIUM, "args": args}));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = fantoccini::ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a chromium session");
        Some(Browser { client, _driver: driver, _profile: profile })
    }

    /// Saves a screenshot of the current page as `<name>.png`.
    pub async fn shot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(screenshot_dir().join(format!("{name}.png")), png).unwrap();
    }

    /// Ends the session (the browser), then chromedriver's process group.
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

/// Whether chromedriver answers `GET /status` with ready.
async fn ready(port: u16) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else { return false };
    let req = "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    // chromedriver may keep the connection open: read until the answer says ready or stalls.
    let mut body = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&body);
        if text.contains("\"ready\":true") {
            return true;
        }
    }
    false
}

/// Logs `name` in through the login form and waits for the dashboard.
pub async fn login(c: &fantoccini::Client, origin: &str, name: &str, password: &str) {
    use fantoccini::Locator;
    c.goto(&format!("{origin}/ui/login")).await.unwrap();
    c.find(Locator::Id("username")).await.unwrap().send_keys(name).await.unwrap();
    c.find(Locator::Id("password")).await.unwrap().send_keys(password).await.unwrap();
    c.find(Locator::Css("form button[type=submit]")).await.unwrap().click().await.unwrap();
    wait_path(c, "/ui/dashboard").await;
}

/// Waits (up to 10 s) until the page's path is `path`.
pub async fn wait_path(c: &fantoccini::Client, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.current_url().await.unwrap().path() != path {
        let here = c.current_url().await.unwrap();
        assert!(Instant::now() < deadline, "still on {here}, not {path}: {}", c.source().await.unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Clicks the element at `loc` (a form's submit button or a link) and waits (up to 20 s) until
/// the page it leads to has loaded. Reading right after a click could otherwise find the old
/// page's element (a notice from the last submit, say) just before it goes stale.
pub async fn click_to_new_page(c: &fantoccini::Client, loc: fantoccini::Locator<'_>) {
    c.execute("window.rbOldPage = true; return null;", vec![]).await.unwrap();
    c.find(loc).await.unwrap().click().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let loaded = "return window.rbOldPage !== true && document.readyState === 'complete';";
    // While the browser is between pages the script can fail: that is "not yet".
    while !c.execute(loaded, vec![]).await.map(|v| v == true).unwrap_or(false) {
        assert!(Instant::now() < deadline, "{loc:?} did not lead to a new page within 20 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
