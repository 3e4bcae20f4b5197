//! The boot listener (`https.boot_port`), which firmware's HTTPS boot fetches BootOS's image
//! from, as EDK2's TLS needs it and no more: a TLS 1.2 client offering only DHE-RSA suites and
//! RSA signatures (what OVMF sends) completes a handshake against the boot CA (RSA) over
//! ffdhe2048; plain RSA key exchange (no forward secrecy) is refused; the boot CA is not the
//! appliance CA; only `/boot` and `/healthz` are served; `rackboot ca efi` writes the boot CA
//! as the EFI signature list firmware takes. e2e::vm::vmlab boots OVMF through it.

use std::process::Command;

use rackboot::config::Config;

fn have(tool: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().is_ok_and(|o| o.status.success())
}

/// `openssl s_client` against `addr` trusting `ca` with `args`: whether the handshake verified,
/// and what it printed.
fn handshake(addr: std::net::SocketAddr, ca: &std::path::Path, args: &str) -> (bool, String) {
    let cmd =
        format!("echo | openssl s_client -connect {addr} -CAfile {} -verify_return_error {args} 2>&1", ca.display());
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (text.contains("Verify return code: 0 (ok)") && !text.contains(":error:"), text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn firmware_tls_is_spoken_on_the_boot_listener_and_nothing_weaker() {
    if !have("openssl") || !have("curl") {
        eprintln!("SKIPPED: openssl and curl are needed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = crate::common::config_text(dir.path(), 0, "");
    let mut cfg = Config::parse(&conf).unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    cfg.https.boot_listen = Some(free);
    let app = rackboot::app::start(cfg).await.unwrap();
    let addr = app.boot_addr.expect("the boot listener runs");
    let tls = dir.path().join("tls");
    let (boot_ca, appliance_ca) = (tls.join("boot-ca.pem"), tls.join("ca.pem"));
    std::fs::create_dir_all(dir.path().join("boot")).unwrap();
    std::fs::write(dir.path().join("boot/probe.txt"), b"over the boot listener\n").unwrap();

    let run = move |ca: std::path::PathBuf, args: &'static str| {
        tokio::task::spawn_blocking(move || handshake(addr, &ca, args))
    };
    // What OVMF offers: TLS 1.2, DHE-RSA with AES-GCM, RSA signatures, no curves.
    let edk2 = "-tls1_2 -cipher DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384 -sigalgs RSA+SHA256:RSA-PSS+SHA256";
    let (ok, text) = run(boot_ca.clone(), edk2).await.unwrap();
    assert!(ok && text.contains("DH") && text.contains("2048 bits"), "EDK2's offer refused:\n{text}");
    let (ok, text) = run(boot_ca.clone(), "").await.unwrap();
    assert!(ok, "a modern client refused:\n{text}");
    // Plain RSA key exchange, which EDK2 offers too: no forward secrecy, refused.
    let (ok, text) = run(boot_ca.clone(), "-tls1_2 -cipher AES128-GCM-SHA256:AES256-SHA").await.unwrap();
    assert!(!ok, "RSA key exchange accepted:\n{text}");
    // The boot CA is the firmware's alone: the appliance CA does not vouch for this listener.
    let (ok, text) = run(appliance_ca, "").await.unwrap();
    assert!(!ok, "the boot listener verified against the appliance CA:\n{text}");

    let ca = boot_ca.clone();
    let curl = move |path: &str| {
        let url = format!("https://{addr}{path}");
        let out = Command::new("curl")
            .args(["-s", "--cacert"])
            .arg(&ca)
            .args(["-w", "\n%{http_code}", &url])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let got = tokio::task::spawn_blocking({
        let curl = curl.clone();
        move || (curl("/boot/files/probe.txt"), curl("/api/v1/machines"), curl("/agent/v1/enroll"))
    })
    .await
    .unwrap();
    assert!(got.0.ends_with("\n200") && got.0.starts_with("over the boot listener"), "{}", got.0);
    assert!(got.1.ends_with("\n404") && got.2.ends_with("\n404"), "{got:?}");

    // The boot CA as firmware takes it: one X.509 entry holding its DER.
    let out = dir.path().join("cacerts.esl");
    let cfg_file = dir.path().join("rackboot.toml");
    std::fs::write(&cfg_file, &conf).unwrap();
    let cli = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["ca", "efi", "--config"])
        .arg(&cfg_file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    let der = rackboot::tls::read_certs(&boot_ca).unwrap().pop().unwrap();
    let list = std::fs::read(&out).unwrap();
    assert!(list.len() == 44 + der.len() && list.ends_with(&der), "{} bytes", list.len());
    // Without a boot CA: the reason, nothing written.
    let empty = tempfile::tempdir().unwrap();
    let other = crate::common::config_text(empty.path(), 0, "");
    std::fs::write(empty.path().join("rackboot.toml"), other).unwrap();
    let cli = Command::new(env!("CARGO_BIN_EXE_rackboot"))
        .args(["ca", "efi", "--config"])
        .arg(empty.path().join("rackboot.toml"))
        .arg("--out")
        .arg(empty.path().join("x.esl"))
        .output()
        .unwrap();
    assert!(!cli.status.success() && String::from_utf8_lossy(&cli.stderr).contains("boot_port"));
    assert!(!empty.path().join("x.esl").exists());
    app.wait(async {}).await.unwrap();
}
