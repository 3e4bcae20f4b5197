//! Boot assets end to end on loopback: an appliance with an empty boot directory says so on
//! `/healthz` (503, naming each missing file and its fix), and `rackboot assets install` (the
//! real binary, from a fake ipxe package directory and a dummy BootOS build) makes it ok without
//! a restart.

use std::path::Path;
use std::process::Command;

use crate::common::*;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rackboot"))
}

fn fake_sources(dir: &Path) {
    for (sub, f) in [
        ("ipxe", "undionly.kpxe"),
        ("ipxe", "ipxe.efi"),
        ("ipxe", "snponly.efi"),
        ("bootos", "vmlinuz"),
        ("bootos", "initrd.img"),
    ] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join(f), format!("dummy {f}")).unwrap();
    }
}

#[tokio::test]
async fn healthz_names_missing_assets_until_assets_install_provides_them() {
    let lab = Lab::start("").await;
    let addr = lab.app.as_ref().unwrap().http_addr;
    let boot = lab.dir.path().join("boot");

    let degraded = http_get(addr, "/healthz").await;
    assert!(degraded.starts_with("HTTP/1.0 503"), "{degraded}");
    for name in ["undionly.kpxe", "ipxe.efi", "bootos/vmlinuz", "bootos/initrd.img"] {
        let line = format!("missing {}", boot.join(name).display());
        assert!(degraded.contains(&line), "/healthz lacks {line:?}:\n{degraded}");
    }
    assert!(degraded.contains("rackboot assets install"), "{degraded}");
    assert!(degraded.contains("apt-get install ipxe"), "{degraded}");

    let cfg = lab.dir.path().join("rackboot.toml");
    std::fs::write(&cfg, config_text(lab.dir.path(), 67, "")).unwrap();
    let src = tempfile::tempdir().unwrap();

    let install = || {
        bin()
            .args(["assets", "install", "--config"])
            .arg(&cfg)
            .arg("--ipxe-dir")
            .arg(src.path().join("ipxe"))
            .arg("--bootos")
            .arg(src.path().join("bootos"))
            .output()
            .unwrap()
    };
    // A missing source: refused, naming it and the package, and nothing is copied.
    fake_sources(src.path());
    std::fs::remove_file(src.path().join("ipxe/ipxe.efi")).unwrap();
    let out = install();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("ipxe/ipxe.efi (for ipxe.efi): install Debian's ipxe package"), "{stderr}");
    assert!(!boot.join("undionly.kpxe").exists(), "nothing may be copied when a source is missing");
    let check = bin().args(["assets", "check", "--config"]).arg(&cfg).output().unwrap();
    assert_eq!(check.status.code(), Some(1), "{}", String::from_utf8_lossy(&check.stdout));

    fake_sources(src.path());
    let out = install();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("installed {}", boot.join("bootos/initrd.img").display())), "{stdout}");
    assert_eq!(std::fs::read_to_string(boot.join("bootos/vmlinuz")).unwrap(), "dummy vmlinuz");

    let ok = http_get(addr, "/healthz").await;
    assert!(ok.starts_with("HTTP/1.0 200") && ok.ends_with("\r\n\r\nok\n"), "{ok}");
    let check = bin().args(["assets", "check", "--config"]).arg(&cfg).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
    // The installed iPXE binary is what TFTP and /boot/files serve.
    let served = http_get(addr, "/boot/files/undionly.kpxe").await;
    assert!(served.ends_with("\r\n\r\ndummy undionly.kpxe"), "{served}");
}
