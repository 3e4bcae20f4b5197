//! Lab plumbing for end-to-end tests: network namespaces joined by a bridge on 198.18.0.0/24,
//! real client programs run inside them, and rackboot started as a real process. Everything is
//! deleted on drop, also when a test fails.
#![allow(dead_code)]

mod configs;
pub mod libvirt;

pub use configs::{full_config, ipv6_only_config, lab_discovery};

use std::fs::File;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Skips (by panicking with the reason) unless we are root with the named tools present.
/// e2e tests are `#[ignore]`d by default, so a plain `cargo test` reports them as skipped.
pub fn require(tools: &[&str]) {
    assert!(
        nix::unistd::geteuid().is_root(),
        "e2e tests need root (network namespaces); run as root or leave them ignored"
    );
    for t in tools {
        let found = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {t}"))
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(found, "e2e test needs `{t}` (see README: the test command installs it)");
    }
}

/// The lab lock: one end-to-end run at a time in this process (VMs under TCG take both cores,
/// libvirtd is one daemon per machine). [`Net`] holds it for its lifetime; a test that starts
/// libvirtd without a `Net` takes it itself. A test that failed holding it does not poison it.
pub fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LAB: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LAB.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `vm-lab/<script> <arg>` (assets.sh, os-image.sh: cached after the first run; one build of
/// a cache at a time).
pub fn vm_lab(script: &str, arg: &Path) {
    static CACHE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let out = Command::new(format!("{}/vm-lab/{script}", env!("CARGO_MANIFEST_DIR"))).arg(arg).output().unwrap();
    assert!(
        out.status.success(),
        "{script}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lab OS image (vm-lab/os-image.sh) in the directory `images`, as the VM tests serve it:
/// zstd, as the main job does (a third of the bytes to serve and to hash under TCG; the agent
/// writes the same 1 GiB). Its name, for a task's `image`.
pub fn lab_image(images: &Path) -> &'static str {
    std::fs::create_dir_all(images).unwrap();
    let raw = images.join("lab.img");
    vm_lab("os-image.sh", &raw);
    let out = Command::new("zstd")
        .args(["-q", "-3", "-T0", "-f", "--rm"])
        .arg(&raw)
        .arg("-o")
        .arg(images.join("lab.img.zst"))
        .output()
        .unwrap();
    assert!(out.status.success(), "zstd: {}", String::from_utf8_lossy(&out.stderr));
    "lab.img.zst"
}

/// Polls `f` every half second until it gives a value; fails with `what()` after `secs`.
pub fn wait_for<T>(secs: u64, what: impl Fn() -> String, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{}", what());
        std::thread::sleep(Duration::from_millis(500));
    }
}

pub fn sh(cmd: &str) -> Output {
    let out = Command::new("sh").arg("-c").arg(cmd).output().expect("sh runs");
    assert!(out.status.success(), "`{cmd}` failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// One lab: a server namespace holding bridge `br0` (198.18.0.1/24) and client namespaces.
pub struct Net {
    pub srv: String,
    prefix: String,
    namespaces: Vec<String>,
    children: Vec<Child>,
    pub dir: tempfile::TempDir,
    /// Held until the lab is gone (dropped after `Drop::drop` cleaned up).
    _lab: std::sync::MutexGuard<'static, ()>,
}

impl Net {
    pub fn new(tag: &str) -> Net {
        // The PID in the name tells tools/cleanup.sh whose namespaces these are.
        let prefix = format!("rbt{}-{tag}", std::process::id());
        let srv = format!("{prefix}-srv");
        let lab = exclusive();
        let mut net = Net {
            srv: srv.clone(),
            prefix,
            namespaces: vec![],
            children: vec![],
            dir: tempfile::tempdir().unwrap(),
            _lab: lab,
        };
        net.add_ns(&srv);
        sh(&format!(
            "ip -n {srv} link add br0 type bridge && ip -n {srv} link set br0 up && ip -n {srv} addr add 198.18.0.1/24 dev br0"
        ));
        net
    }

    fn add_ns(&mut self, name: &str) {
        let _ = Command::new("ip").args(["netns", "del", name]).output();
        sh(&format!("ip netns add {name} && ip -n {name} link set lo up"));
        self.namespaces.push(name.to_string());
    }

    /// A client namespace with `eth0` (MAC `mac`) plugged into the bridge.
    pub fn add_client(&mut self, name: &str, mac: &str) -> String {
        let srv = self.srv.clone();
        self.add_client_on(name, mac, &srv, "br0")
    }

    /// A client namespace with `eth0` (MAC `mac`) plugged into `bridge` in namespace `at` (a
    /// second segment behind a router namespace, say).
    pub fn add_client_on(&mut self, name: &str, mac: &str, at: &str, bridge: &str) -> String {
        let ns = format!("{}-{name}", self.prefix);
        self.add_ns(&ns);
        let host_end = format!("v{name}");
        sh(&format!(
            "ip -n {at} link add {host_end} type veth peer name eth0 netns {ns} && \
             ip -n {at} link set {host_end} master {bridge} up && \
             ip -n {ns} link set eth0 address {mac} && ip -n {ns} link set eth0 up"
        ));
        ns
    }

    /// A tap device `name` on the bridge, for a qemu VM started in the server namespace.
    pub fn add_tap(&self, name: &str) {
        sh(&format!(
            "ip -n {srv} tuntap add {name} mode tap && ip -n {srv} link set {name} master br0 up",
            srv = self.srv
        ));
    }

    /// Stops the daemon whose pid file is `pid_file`, in namespace `ns`. dhclient forks into the
    /// background once bound and its child writes the file: on a busy machine the parent has
    /// returned before it exists, so this waits up to 5 s for it.
    pub fn kill_pid_file(&self, ns: &str, pid_file: &Path) {
        let p = pid_file.display();
        self.run(
            ns,
            &format!("for i in $(seq 50); do [ -s {p} ] && break; sleep 0.1; done; kill $(cat {p}) 2>/dev/null; true"),
        );
    }

    /// Whether a spawned program has exited (and with what), without waiting.
    pub fn exited(&mut self, idx: usize) -> Option<std::process::ExitStatus> {
        self.children[idx].try_wait().unwrap()
    }

    /// Starts a long-running program inside `ns`; it is killed when the lab is dropped.
    pub fn spawn(&mut self, ns: &str, args: &[&str], log: &str) -> usize {
        let log = File::create(self.dir.path().join(log)).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.children.push(child);
        self.children.len() - 1
    }

    /// Stops a spawned program with SIGTERM and returns its exit status.
    pub fn stop(&mut self, idx: usize) -> std::process::ExitStatus {
        let child = &mut self.children[idx];
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return st;
            }
            assert!(Instant::now() < deadline, "process did not stop within 10 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills a spawned program with SIGKILL (no chance to clean up) and reaps it.
    pub fn kill9(&mut self, idx: usize) {
        let child = &mut self.children[idx];
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Runs a command to completion inside `ns`.
    pub fn run(&self, ns: &str, cmd: &str) -> Output {
        Command::new("ip").args(["netns", "exec", ns, "sh", "-c", cmd]).output().unwrap()
    }

    /// The file `name` in the lab's directory (a process's log, a VM's serial console), read
    /// lossily: firmware writes bytes that are not UTF-8, and a strict read would give nothing,
    /// on which an assertion that something is absent would pass. Empty while it does not exist.
    pub fn log(&self, name: &str) -> String {
        std::fs::read(self.dir.path().join(name)).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Starts rackboot in the server namespace with `config` and waits for /healthz to answer (200,
    /// or 503 while boot assets are missing: most tests serve an empty boot directory).
    pub fn start_rackboot(&mut self, config: &str) -> usize {
        let cfg = self.path("rackboot.toml");
        std::fs::write(&cfg, config).unwrap();
        let bin = env!("CARGO_BIN_EXE_rackboot");
        let srv = self.srv.clone();
        let idx = self.spawn(&srv, &[bin, "serve", "--config", cfg.to_str().unwrap()], "rackboot.log");
        let deadline = Instant::now() + Duration::from_secs(15);
        while !self.run(&srv, "curl -s -o /dev/null http://198.18.0.1:8080/healthz").status.success() {
            assert!(Instant::now() < deadline, "rackboot did not come up:\n{}", self.log("rackboot.log"));
            std::thread::sleep(Duration::from_millis(100));
        }
        idx
    }

    /// The appliance CA (PEM) in the lab's data dir: what curl and the CLI trust over HTTPS.
    pub fn ca(&self) -> PathBuf {
        self.path("data/tls/ca.pem")
    }

    /// GETs `path` over HTTPS with the admin token (`/metrics`) from the server namespace.
    pub fn https_get(&self, path: &str) -> String {
        let token = std::fs::read_to_string(self.path("data/admin.token")).unwrap();
        let out = self.run(
            &self.srv,
            &format!(
                "curl -s --cacert {} -H 'authorization: Bearer {}' 'https://198.18.0.1{}'",
                self.ca().display(),
                token.trim(),
                path.replace('\'', r"'\''")
            ),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Like [`Net::api`], but `None` on an error status (e.g. 404 before a machine is known).
    pub fn try_api(&self, method: &str, path: &str) -> Option<serde_json::Value> {
        let token = std::fs::read_to_string(self.path("data/admin.token")).ok()?;
        let out = self.run(
            &self.srv,
            &format!(
                "curl -sS -f --cacert {} -X {method} -H 'authorization: Bearer {}' 'https://198.18.0.1/api/v1{}'",
                self.ca().display(),
                token.trim(),
                path.replace('\'', r"'\''")
            ),
        );
        out.status.success().then(|| serde_json::from_slice(&out.stdout).ok()).flatten()
    }

    /// Calls the REST API with curl from the server namespace; returns the JSON body.
    pub fn api(&self, method: &str, path: &str, body: Option<&str>) -> serde_json::Value {
        let token = std::fs::read_to_string(self.path("data/admin.token")).unwrap();
        // (Quoted for the shell: a body may hold single quotes, a script's for one; a path its
        // query's `&`, which would put curl in the background and drop the rest.)
        let data = body
            .map(|b| format!("-d '{}' -H 'content-type: application/json'", b.replace('\'', r"'\''")))
            .unwrap_or_default();
        let out = self.run(
            &self.srv,
            &format!(
                "curl -sS -f --cacert {} -X {method} -H 'authorization: Bearer {}' {data} 'https://198.18.0.1/api/v1{}'",
                self.ca().display(),
                token.trim(),
                path.replace('\'', r"'\''")
            ),
        );
        assert!(out.status.success(), "api {method} {path}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    /// VM `name`'s disk files as [`Net::qemu_args`] makes them (vda, vdb, ...).
    pub fn disk_files(&self, name: &str, count: usize) -> Vec<PathBuf> {
        (0..count)
            .map(|i| self.path(&if i == 0 { format!("{name}.disk") } else { format!("{name}.d{i}.disk") }))
            .collect()
    }

    /// qemu arguments for a lab VM `name` (TCG, 512 MiB, iPXE on virtio-net with `mac` on tap
    /// `tap-<name>`, serial to `<name>.serial`) with sparse virtio disks of `disks` bytes
    /// (`<name>.disk`, `<name>.d1.disk`, ...; serials `RBLAB-VDA`, ...); OVMF when `uefi`. `no_reboot`: a reboot ends qemu.
    pub fn qemu_args(&self, name: &str, mac: &str, uefi: bool, disks: &[u64], no_reboot: bool) -> Vec<String> {
        let mut a: Vec<String> = ["qemu-system-x86_64", "-accel", "tcg", "-m", "512", "-display", "none", "-boot", "n"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if no_reboot {
            a.push("-no-reboot".into());
        }
        a.extend(["-serial".into(), format!("file:{}", self.path(&format!("{name}.serial")).display())]);
        a.extend(["-netdev".into(), format!("tap,id=n0,ifname=tap-{name},script=no,downscript=no")]);
        a.extend(["-device".into(), format!("virtio-net-pci,netdev=n0,mac={mac}")]);
        // A hardware RNG, as servers have (RDRAND, a TPM): qemu64 has none, and BootOS's first
        // TLS handshake waited about a second for the kernel's random pool.
        a.extend(["-device".into(), "virtio-rng-pci".into()]);
        for (i, size) in disks.iter().enumerate() {
            let file = if i == 0 { format!("{name}.disk") } else { format!("{name}.d{i}.disk") };
            let disk = self.path(&file);
            std::fs::File::create(&disk).unwrap().set_len(*size).unwrap();
            // Serials as libvirt.sh gives them (RBLAB-VDA, ...), for root-device hints.
            let serial = format!("RBLAB-VD{}", (b'A' + i as u8) as char);
            a.extend(["-drive".into(), format!("file={},if=none,id=disk{i},format=raw", disk.display())]);
            a.extend(["-device".into(), format!("virtio-blk-pci,drive=disk{i},serial={serial}")]);
        }
        if uefi {
            let vars = self.path(&format!("{name}.vars.fd"));
            std::fs::copy("/usr/share/OVMF/OVMF_VARS_4M.fd", &vars).unwrap();
            a.extend(["-machine".into(), "q35".into()]);
            a.extend(["-drive".into(), "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.fd".into()]);
            a.extend(["-drive".into(), format!("if=pflash,format=raw,file={}", vars.display())]);
            // No IPv6 in the firmware, as libvirt.sh's domains: the lab has no DHCPv6.
            a.extend(["-fw_cfg".into(), "name=opt/org.tianocore/IPv6Support,string=no".into()]);
        }
        a
    }

    /// Arguments for an OVMF VM with Secure Boot on and enforcing: SMM, the secure-boot firmware
    /// build, a copy of the variable store with Microsoft's keys enrolled, and no option ROM on
    /// the NIC (qemu's unsigned iPXE ROM would take over PXE, and shim hangs behind it).
    pub fn qemu_args_secure_boot(&self, name: &str, mac: &str, disks: &[u64], no_reboot: bool) -> Vec<String> {
        let mut a = self.qemu_args(name, mac, false, disks, no_reboot);
        for arg in a.iter_mut().filter(|a| a.starts_with("virtio-net-pci,")) {
            arg.push_str(",romfile=");
        }
        let vars = self.path(&format!("{name}.vars.fd"));
        std::fs::copy("/usr/share/OVMF/OVMF_VARS_4M.ms.fd", &vars).unwrap();
        a.extend(["-machine".into(), "q35,smm=on".into()]);
        a.extend(["-global".into(), "driver=cfi.pflash01,property=secure,value=on".into()]);
        a.extend([
            "-drive".into(),
            "if=pflash,format=raw,readonly=on,file=/usr/share/OVMF/OVMF_CODE_4M.secboot.fd".into(),
        ]);
        a.extend(["-drive".into(), format!("if=pflash,format=raw,file={}", vars.display())]);
        a
    }

    /// Runs `f` on a thread that has entered namespace `ns` (sockets it opens live there).
    pub fn in_ns<T: Send + 'static>(&self, ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = Path::new("/run/netns").join(ns);
        std::thread::spawn(move || {
            let fd = File::open(&path).unwrap();
            nix::sched::setns(fd.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            f()
        })
        .join()
        .unwrap()
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in self.namespaces.iter().rev() {
            // Anything still running inside (a daemonised client) goes with its namespace.
            let _ = Command::new("sh").arg("-c").arg(format!("ip netns pids {ns} | xargs -r kill -9")).output();
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
    }
}
