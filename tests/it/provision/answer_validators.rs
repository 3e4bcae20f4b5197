//! The rendered installer answer files pass their distributions' own validators: pykickstart's
//! `ksvalidator` (RHEL 9 syntax), cloud-init's schema check (which knows the `autoinstall` key),
//! and debconf's parser for the preseed. `tools/setup.sh` puts the first two under
//! `target/validators` (a venv, and cloud-init's Debian package unpacked); without them the
//! test says SKIPPED. A broken copy of each file must fail, so a validator that checks nothing
//! cannot pass the test.

use std::path::{Path, PathBuf};
use std::process::Command;

use rackboot::render::{AnswerVars, Renderer};

fn validators() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/validators")
}

fn render(kind: &str) -> String {
    let config = rackboot::config::Config::load(None).unwrap();
    let repo_url = config.provision.answer_repos[kind].clone();
    let vars = AnswerVars {
        mac: "52:54:00:12:34:56".into(),
        hostname: "node-01".into(),
        domain: "rack.internal".into(),
        disk: "/dev/sda".into(),
        disk_name: "sda".into(),
        ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake ops@example".into(), "ssh-rsa AAAAB3Nza ci".into()],
        appliance_url: "http://198.18.0.1".into(),
        repo_host: repo_url.split('/').nth(2).unwrap().into(),
        repo_path: format!("/{}", repo_url.splitn(4, '/').nth(3).unwrap_or("")),
        repo_url,
        proxy: "http://198.18.0.1:3142/".into(),
        finish_url: "http://198.18.0.1/boot/installed?mac=52:54:00:12:34:56".into(),
        finish_token: "00ff".into(),
        network: Default::default(),
    };
    Renderer::new(None).unwrap().answer(kind, &vars).unwrap()
}

/// Runs `cmd` on `text` written to a file; Ok(output) when it accepts it.
fn check(cmd: &[&str], env: &[(&str, PathBuf)], text: &str, strict_quiet: bool) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answer");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(cmd[0])
        .args(&cmd[1..])
        .arg(&file)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", cmd[0]));
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // debconf-set-selections only warns (exit 0) about some malformed lines: any word is a no.
    if out.status.success() && (!strict_quiet || said.trim().is_empty()) {
        Ok(said)
    } else {
        Err(said)
    }
}

#[test]
fn kickstart_passes_ksvalidator() {
    let ks = validators().join("venv/bin/ksvalidator");
    if !ks.exists() {
        eprintln!("SKIPPED: {} is missing (tools/setup.sh installs it)", ks.display());
        return;
    }
    let ks = ks.to_str().unwrap();
    let text = render("kickstart");
    check(&[ks, "-v", "RHEL9"], &[], &text, false).unwrap_or_else(|e| panic!("ksvalidator refused:\n{e}\n{text}"));
    let broken = text.replace("%end", "");
    assert!(check(&[ks, "-v", "RHEL9"], &[], &broken, false).is_err(), "ksvalidator accepted a file without %end");
}

#[test]
fn autoinstall_passes_cloud_inits_schema_check() {
    let lib = validators().join("cloud-init/usr/lib/python3/dist-packages");
    if !lib.join("cloudinit").is_dir() {
        eprintln!("SKIPPED: cloud-init is not unpacked under {} (tools/setup.sh does it)", lib.display());
        return;
    }
    let cmd = ["/usr/bin/python3", "-m", "cloudinit.cmd.main", "schema", "--config-file"];
    let env = [("PYTHONPATH", lib)];
    let text = render("autoinstall");
    let said = check(&cmd, &env, &text, false).unwrap_or_else(|e| panic!("cloud-init schema refused:\n{e}\n{text}"));
    assert!(said.contains("Valid cloud-config"), "{said}");
    let broken = text.replace("  version: 1\n", "  version: \"1\"\n");
    assert!(check(&cmd, &env, &broken, false).is_err(), "cloud-init accepted autoinstall.version \"1\"");
}

#[test]
fn preseed_passes_debconf() {
    if Command::new("debconf-set-selections").arg("--help").output().is_err() {
        eprintln!("SKIPPED: debconf-set-selections is not installed");
        return;
    }
    let cmd = ["debconf-set-selections", "--checkonly"];
    let text = render("preseed");
    check(&cmd, &[], &text, true).unwrap_or_else(|e| panic!("debconf refused:\n{e}\n{text}"));
    let broken = format!("{text}d-i partman-auto/method\n");
    assert!(check(&cmd, &[], &broken, true).is_err(), "debconf accepted a line without a type");
}
