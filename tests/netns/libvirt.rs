//! The lab's libvirt half for end-to-end tests, through vm-lab/libvirt.sh (the same script
//! `vm-lab/run.sh --libvirt` uses): VMs defined as libvirt domains, powered off, behind
//! sushy-emulator (Redfish) and VirtualBMC (IPMI) in the lab's server namespace, so that only
//! rackboot, through their BMCs, powers them on. Everything is undone on drop, also on failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Net;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/vm-lab/libvirt.sh");

pub struct Libvirt {
    pub state: PathBuf,
    /// Where the BMC emulators listen (the lab's server address).
    pub addr: String,
    ns: String,
}

/// Why the libvirt lab cannot run here, if it cannot.
pub fn missing() -> Option<&'static str> {
    let validators = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/validators");
    if !Path::new("/usr/sbin/libvirtd").exists() {
        return Some("libvirtd (libvirt-daemon-system)");
    }
    if !Path::new("/usr/bin/ipmitool").exists() {
        return Some("ipmitool");
    }
    if !validators.join("vbmc/bin/vbmcd").exists() {
        return Some("VirtualBMC (tools/setup.sh --libvirt)");
    }
    let sushy = validators.join("sushy/bin/python3");
    let with_libvirt = Command::new(&sushy).args(["-c", "import libvirt, sushy_tools"]).output();
    if !with_libvirt.is_ok_and(|o| o.status.success()) {
        return Some("sushy-tools with libvirt-python (tools/setup.sh --libvirt)");
    }
    None
}

impl Libvirt {
    /// Starts libvirt if it is not running; domains get the prefix `rb<pid>-`.
    pub fn up(net: &Net) -> Libvirt {
        let state = net.path("libvirt");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join("prefix"), format!("rb{}-", std::process::id())).unwrap();
        let lv = Libvirt { state, addr: "198.18.0.1".into(), ns: net.srv.clone() };
        lv.run(&["up"]);
        lv
    }

    fn run(&self, args: &[&str]) -> String {
        self.run_env(args, &[])
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> String {
        let mut cmd = Command::new(SCRIPT);
        cmd.arg(args[0]).arg(&self.state).args(&args[1..]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "libvirt.sh {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Defines VM `name` (powered off) with disks of `sizes` bytes, its NIC plugged into the
    /// lab's bridge (port `p-<name>`); with `nic2`, a second NIC with that MAC on port
    /// `p-<name>b`.
    pub fn vm(&self, name: &str, mac: &str, nic2: Option<&str>, uefi: bool, sizes: &[u64]) {
        let port = format!("p-{name}");
        let sizes: Vec<String> = sizes.iter().map(u64::to_string).collect();
        let mut args = vec!["vm", name, mac, if uefi { "1" } else { "0" }, &self.ns, &port];
        args.extend(sizes.iter().map(String::as_str));
        self.run_env(&args, &[("NIC2_MAC", nic2.unwrap_or(""))]);
        super::sh(&format!("ip -n {ns} link set {port} master br0 up", ns = self.ns));
        if nic2.is_some() {
            super::sh(&format!("ip -n {ns} link set {port}b master br0 up", ns = self.ns));
        }
    }

    /// VM `name`'s disk files (vda, vdb, ...), as libvirt.sh made them.
    pub fn disk_files(&self, name: &str, count: usize) -> Vec<PathBuf> {
        let prefix = std::fs::read_to_string(self.state.join("prefix")).unwrap();
        let dir = PathBuf::from(format!("/var/lib/libvirt/images/{prefix}{name}"));
        (0..count).map(|i| dir.join(format!("vd{}.img", (b'a' + i as u8) as char))).collect()
    }

    /// Sets the link of VM `name`'s NIC with `mac` up or down, as the guest sees it (a cable
    /// pulled).
    pub fn set_link(&self, name: &str, mac: &str, up: bool) {
        let prefix = std::fs::read_to_string(self.state.join("prefix")).unwrap();
        let state = if up { "up" } else { "down" };
        let out = Command::new("virsh")
            .args(["-c", "qemu:///system", "domif-setlink", &format!("{prefix}{name}"), mac, state])
            .output()
            .unwrap();
        assert!(out.status.success(), "domif-setlink: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// Starts the BMC emulators; returns the Redfish certificate's SHA-256.
    pub fn bmcs(&self) -> String {
        self.run(&["bmcs", &self.ns, &self.addr])
    }

    /// A VirtualBMC for `name` on `port`.
    pub fn ipmi(&self, name: &str, port: u16) {
        self.run(&["ipmi", name, &self.addr, &port.to_string()]);
    }

    /// The domain's UUID (its Redfish system id).
    pub fn uuid(&self, name: &str) -> String {
        self.run(&["uuid", name])
    }

    /// The BMCs' password (made by `bmcs`).
    pub fn password(&self) -> String {
        std::fs::read_to_string(self.state.join("bmc.password")).unwrap().trim().to_string()
    }

    /// `running`, `shut off`, ... as virsh says.
    pub fn state_of(&self, name: &str) -> String {
        let prefix = std::fs::read_to_string(self.state.join("prefix")).unwrap();
        let out = Command::new("virsh").args(["-c", "qemu:///system", "domstate", &format!("{prefix}{name}")]).output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
    }

    /// The VM's serial console so far (firmware writes bytes that are not UTF-8: read lossily).
    pub fn serial(&self, name: &str) -> String {
        String::from_utf8_lossy(&std::fs::read(self.state.join(format!("{name}.serial"))).unwrap_or_default())
            .into_owned()
    }
}

impl Drop for Libvirt {
    fn drop(&mut self) {
        let _ = Command::new(SCRIPT).arg("down").arg(&self.state).output();
    }
}
