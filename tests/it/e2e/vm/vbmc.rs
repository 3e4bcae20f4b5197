//! IPMI through a real VirtualBMC (PyPI virtualbmc 3.3.0) in front of a libvirt domain (qemu
//! TCG, no disk), with Debian's ipmitool: status, on and off read back from libvirt, PXE once in
//! UEFI mode, a cycle VirtualBMC refuses (0xcc) done as off + on, a graceful off the guest
//! ignores forced after the soft-off timeout, wrong credentials refused at once. Needs root,
//! libvirtd, ipmitool and vbmc (`RACKBOOT_VBMC`, or target/validators/vbmc/bin/vbmc); skipped
//! with "SKIPPED:" otherwise. Starts virtlogd and libvirtd by hand when they are not running
//! (no systemd here) and stops what it started, by PID.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use rackboot::bmc::power::{Caller, PowerError};
use rackboot::bmc::{Bmc, BmcError, Power, PowerAction, PowerState, Protocol, TlsPolicy};
use rackboot::cmdb::{Cmdb, NewMachine};
use rackboot::config::BmcConfig;

const PASSWORD: &str = "vbmc-Secret-5";

fn vbmc() -> Option<PathBuf> {
    let p = std::env::var_os("RACKBOOT_VBMC")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/validators/vbmc/bin/vbmc"));
    p.exists().then_some(p)
}

/// What the test started, undone on drop (also when it fails).
#[derive(Default)]
struct Cleanup {
    /// Daemons it started (SIGTERM).
    pids: Vec<i32>,
    /// vbmcd (killed: it does not end on SIGTERM).
    children: Vec<std::process::Child>,
    domain: Option<String>,
    /// `vbmc delete` first: vbmcd's per-domain worker outlives vbmcd otherwise.
    vbmc_delete: Option<Command>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(cmd) = &mut self.vbmc_delete {
            let _ = cmd.output();
        }
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(d) = &self.domain {
            let _ = Command::new("virsh").args(["-c", "qemu:///system", "destroy", d]).output();
            let _ = Command::new("virsh").args(["-c", "qemu:///system", "undefine", d]).output();
        }
        for pid in self.pids.iter().rev() {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), nix::sys::signal::Signal::SIGTERM);
        }
    }
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Starts `daemon -d` unless its socket is there; returns its PID from `pid_file`.
fn daemon(bin: &str, socket: &str, pid_file: &str) -> Option<i32> {
    // A socket that answers, not one that exists: a daemon killed earlier leaves its file behind.
    let answers = || std::os::unix::net::UnixStream::connect(socket).is_ok();
    if answers() {
        return None;
    }
    run(Command::new(bin).arg("-d"));
    for _ in 0..100 {
        if answers() {
            return std::fs::read_to_string(pid_file).ok().and_then(|p| p.trim().parse().ok());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{bin} did not come up");
}

fn domain_state(name: &str) -> String {
    let out = Command::new("virsh").args(["-c", "qemu:///system", "domstate", name]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[tokio::test(flavor = "multi_thread")]
// The lab lock is held for the whole test on purpose: no other test may start or stop libvirtd
// meanwhile, and nothing in this runtime waits for it.
#[allow(clippy::await_holding_lock)]
async fn ipmi_through_virtualbmc_and_libvirt() {
    let missing = [
        (!nix::unistd::geteuid().is_root()).then_some("root"),
        (!Path::new("/usr/sbin/libvirtd").exists()).then_some("libvirtd (libvirt-daemon-system)"),
        (!Path::new("/usr/bin/ipmitool").exists()).then_some("ipmitool"),
        vbmc().is_none().then_some("vbmc (tools/setup.sh --libvirt, or RACKBOOT_VBMC)"),
    ];
    if let Some(what) = missing.iter().flatten().next() {
        eprintln!("SKIPPED: needs {what}");
        return;
    }
    let vbmc = vbmc().unwrap();
    // libvirtd is one daemon per machine: not beside an end-to-end run that starts or stops it.
    let _lab = crate::netns::exclusive();
    let dir = tempfile::tempdir().unwrap();
    let mut clean = Cleanup::default();
    clean.pids.extend(daemon("/usr/sbin/virtlogd", "/run/libvirt/virtlogd-sock", "/run/virtlogd.pid"));
    clean.pids.extend(daemon("/usr/sbin/libvirtd", "/run/libvirt/libvirt-sock", "/run/libvirtd.pid"));

    let name = format!("rb-vbmc-{}", std::process::id());
    let xml = dir.path().join("domain.xml");
    std::fs::write(
        &xml,
        format!(
            "<domain type='qemu'><name>{name}</name><memory unit='MiB'>64</memory>\
             <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='network'/></os>\
             <devices><emulator>/usr/bin/qemu-system-x86_64</emulator></devices></domain>"
        ),
    )
    .unwrap();
    run(Command::new("virsh").args(["-c", "qemu:///system", "define"]).arg(&xml));
    clean.domain = Some(name.clone());

    // vbmcd with a config of its own (its port, its state in the temp dir), ended by PID.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let zmq = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let d = dir.path().display();
    std::fs::create_dir_all(dir.path().join("conf")).unwrap();
    let conf = dir.path().join("vbmc.conf");
    std::fs::write(&conf, format!("[default]\nserver_port = {zmq}\nconfig_dir = {d}/conf\npid_file = {d}/vbmcd.pid\n"))
        .unwrap();
    let vbmcd = Command::new(vbmc.with_file_name("vbmcd"))
        .arg("--foreground")
        .env("VIRTUALBMC_CONFIG", &conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    clean.children.push(vbmcd);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let vb = |args: &[&str]| run(Command::new(&vbmc).args(args).env("VIRTUALBMC_CONFIG", &conf));
    vb(&[
        "add",
        &name,
        "--port",
        &port.to_string(),
        "--address",
        "127.0.0.1",
        "--username",
        "admin",
        "--password",
        PASSWORD,
        "--libvirt-uri",
        "qemu:///system",
    ]);
    vb(&["start", &name]);
    let mut delete = Command::new(&vbmc);
    delete.args(["delete", &name]).env("VIRTUALBMC_CONFIG", &conf);
    clean.vbmc_delete = Some(delete);

    let cmdb = Cmdb::open(&dir.path().join("cmdb.redb"), 64).unwrap();
    let cfg = BmcConfig {
        request_timeout: Duration::from_secs(10),
        soft_off_timeout: Duration::from_secs(3),
        poll_interval: Duration::from_millis(300),
        retry_backoff: Duration::from_millis(200),
        ..BmcConfig::default()
    };
    let power = Power::new(cfg, cmdb.clone(), Arc::new(rackboot::secrets::Sealer::from_key(&[4u8; 32])), String::new());
    let mut ids = Vec::new();
    for (n, pw) in [(1u8, PASSWORD), (2, "wrong-password")] {
        let m = cmdb
            .create_machine(NewMachine {
                macs: vec![format!("52:54:00:f0:00:{n:02x}").parse().unwrap()],
                ..Default::default()
            })
            .await
            .unwrap();
        let b = Bmc {
            machine_id: m.id,
            address: format!("127.0.0.1:{port}"),
            protocol: Protocol::Ipmi,
            username: "admin".into(),
            password_sealed: power.seal(m.id, pw).unwrap(),
            tls: TlsPolicy::Ca,
            system_id: None,
            boot_mode: None,
            power: None,
            updated_at: 0,
            firmware: None,
            inband: None,
            boot_via: Default::default(),
        };
        cmdb.put_bmc(b, false).await.unwrap();
        ids.push(m.id);
    }
    let act = |id, action, uefi| {
        let power = &power;
        async move {
            power.act(id, action, uefi, Caller::Operator).await.map_err(|e| match e {
                PowerError::Bmc { error, .. } => error,
                other => panic!("{other}"),
            })
        }
    };
    let id = ids[0];
    assert_eq!(act(id, PowerAction::Status, false).await.unwrap().state, PowerState::Off);
    act(id, PowerAction::PxeOnce, true).await.unwrap();
    assert_eq!(act(id, PowerAction::On, false).await.unwrap().state, PowerState::On);
    assert_eq!(domain_state(&name), "running", "libvirt agrees");
    let out = act(id, PowerAction::Cycle, false).await.unwrap();
    assert_eq!(out.state, PowerState::On);
    assert!(out.fallback.as_deref().unwrap_or_default().contains("restart failed"), "0xcc: off + on: {out:?}");
    let out = act(id, PowerAction::Off, false).await.unwrap();
    assert_eq!(out.state, PowerState::Off);
    assert!(out.fallback.as_deref().unwrap_or_default().contains("graceful shutdown timed out"), "{out:?}");
    assert_eq!(domain_state(&name), "shut off");

    let t = std::time::Instant::now();
    let e = act(ids[1], PowerAction::Status, false).await.unwrap_err();
    assert!(matches!(e, BmcError::Auth(_)), "{e}");
    assert!(t.elapsed() < Duration::from_secs(8), "no retries: {:?}", t.elapsed());
    drop(clean);
}
