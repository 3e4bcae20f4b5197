//! The layout step's script (`provision/layout.sh`): an image's root file system copied into a
//! declared disk layout (RAID 1, LVM, extra file systems) before the identity step; and the
//! rescue step's (`provision/rescue.sh`), which only reads the disks.

use rackboot_model::provision::Layout;
use serde::Serialize;

use super::{val, RenderError, Renderer};

/// What the layout script of one machine needs.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutVars {
    /// The root disk, holding the image as the install step wrote it.
    pub disk: String,
    /// The mirror's second disk; empty: not mirrored.
    pub mirror: String,
    /// "1": root on LVM.
    pub lvm: String,
    pub filesystems: Vec<LayoutFs>,
    pub volume_group: &'static str,
    pub mirror_device: &'static str,
    /// The Tang server encrypted file systems are bound to (empty: none is encrypted).
    pub tang_url: String,
    /// Its advertisement (a JWS in JSON), trusted as it is: the script needs no network to bind.
    pub tang_adv: String,
}

/// One extra file system, as the script takes it.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutFs {
    pub mount: String,
    pub fstype: &'static str,
    pub size_mib: u64,
    pub volume: String,
    /// "1": on LUKS2, bound to the Tang server.
    pub encrypted: &'static str,
}

impl LayoutVars {
    /// The script's values for `layout` on the disks the hints picked.
    pub fn new(layout: &Layout, disk: &str, mirror: Option<&str>) -> LayoutVars {
        let fs = |f: &rackboot_model::provision::FileSystem| LayoutFs {
            mount: f.mount.clone(),
            fstype: f.fstype.as_str(),
            size_mib: f.size_mib,
            volume: f.volume(),
            encrypted: if f.encrypted { "1" } else { "" },
        };
        LayoutVars {
            disk: disk.into(),
            mirror: mirror.unwrap_or_default().into(),
            lvm: if layout.lvm { "1" } else { "" }.into(),
            filesystems: layout.filesystems.iter().map(fs).collect(),
            volume_group: rackboot_model::provision::VOLUME_GROUP,
            mirror_device: rackboot_model::provision::MIRROR_DEVICE,
            tang_url: String::new(),
            tang_adv: String::new(),
        }
    }

    /// With the Tang server's URL and advertisement the encrypted file systems are bound to.
    pub fn with_tang(mut self, (url, adv): (String, String)) -> LayoutVars {
        (self.tang_url, self.tang_adv) = (url, adv);
        self
    }
}

/// What the commissioning script of one machine needs (empty: that test is not run).
#[derive(Debug, Clone, Serialize)]
pub struct CommissionVars {
    pub tools_url: String,
    pub tools_sha256: String,
    pub cpu_secs: String,
    pub memory_mib: String,
    pub disk_secs: String,
    /// "1": SMART health.
    pub smart: String,
    /// Kernel names (`vda nvme0n1`), blank-separated.
    pub disks: String,
    pub network_secs: String,
    /// The appliance's iperf3 server (its provisioning address), when the profile tests the
    /// network.
    pub iperf3_server: String,
    pub iperf3_port: String,
}

impl CommissionVars {
    pub fn new(
        p: &rackboot_model::commission::TestProfile,
        tools: (String, String),
        disks: &[String],
        iperf3: (String, u16),
    ) -> Self {
        let num = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
        CommissionVars {
            tools_url: tools.0,
            tools_sha256: tools.1,
            cpu_secs: num(p.cpu_secs),
            memory_mib: num(p.memory_mib),
            disk_secs: num(p.disk_secs),
            smart: if p.smart { "1" } else { "" }.into(),
            disks: disks.join(" "),
            network_secs: num(p.network_secs),
            iperf3_server: iperf3.0,
            iperf3_port: iperf3.1.to_string(),
        }
    }
}

/// A device path or mount point the script may take: letters, digits and `/ _ . -` only
/// (every value goes into double quotes or a here-string the script splits on blanks).
fn plain(v: &str) -> bool {
    !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c))
}

impl Renderer {
    /// Renders the layout script; a value that is not a plain path is refused.
    pub fn layout(&self, vars: &LayoutVars) -> Result<String, RenderError> {
        let paths = [&vars.disk].into_iter().chain((!vars.mirror.is_empty()).then_some(&vars.mirror));
        let fs = vars.filesystems.iter().flat_map(|f| [&f.mount, &f.volume]);
        if let Some(bad) = paths.chain(fs).find(|v| !plain(v)) {
            return Err(RenderError::Unsafe(bad.clone()));
        }
        // The advertisement goes into single quotes: JSON of base64url strings only.
        let adv_ok = vars.tang_adv.chars().all(|c| c.is_ascii_alphanumeric() || "_-{}\":,[].".contains(c));
        let url_ok = vars.tang_url.is_empty()
            || (vars.tang_url.starts_with("http")
                && vars.tang_url.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-:[]".contains(c)));
        if !adv_ok || !url_ok {
            return Err(RenderError::Unsafe(format!("{} {}", vars.tang_url, vars.tang_adv)));
        }
        let encrypts = vars.filesystems.iter().any(|f| !f.encrypted.is_empty());
        if encrypts && (vars.tang_url.is_empty() || vars.tang_adv.is_empty()) {
            return Err(RenderError::Unsafe("an encrypted file system without a Tang server to bind to".into()));
        }
        self.render("provision/layout.sh", val(vars))
    }

    /// Renders a commissioning run's script; a disk name or URL that is not plain is refused.
    pub fn commission(&self, vars: &CommissionVars) -> Result<String, RenderError> {
        let url_ok = vars.tools_url.starts_with("http://")
            && vars.tools_url.chars().all(|c| c.is_ascii_alphanumeric() || "/_.-:[]".contains(c));
        if !url_ok {
            return Err(RenderError::Unsafe(vars.tools_url.clone()));
        }
        let values = vars.disks.split(' ').chain([vars.tools_sha256.as_str(), vars.iperf3_server.as_str()]);
        if let Some(bad) = values.filter(|v| !v.is_empty()).find(|v| !plain(v)) {
            return Err(RenderError::Unsafe(bad.to_string()));
        }
        self.render("provision/commission.sh", val(vars))
    }

    /// Renders a rescue's script: the disks listed, and with `mount` their file systems
    /// mounted read-only.
    pub fn rescue(&self, mount: bool) -> Result<String, RenderError> {
        let vars = serde_json::json!({ "mount": if mount { "1" } else { "" } });
        self.render("provision/rescue.sh", val(&vars))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Layout {
        serde_json::from_str(
            r#"{"mirror":{"serial":"S2"},"lvm":true,"filesystems":[{"mount":"/srv/data","fstype":"xfs","size_mib":320}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn the_script_names_the_disks_and_file_systems_and_parses() {
        let r = Renderer::new(None).unwrap();
        let script = r.layout(&LayoutVars::new(&sample(), "/dev/vda", Some("/dev/vdd"))).unwrap();
        for want in [
            "DISK=\"/dev/vda\"",
            "MIRROR=\"/dev/vdd\"",
            "LVM=\"1\"",
            "FILESYSTEMS=\"/srv/data xfs 320 srv_data\n\"",
            "VG=\"rackboot\" MD=\"/dev/md100\"",
        ] {
            assert!(script.contains(want), "{want} in\n{script}");
        }
        let plain = r.layout(&LayoutVars::new(&Layout { lvm: true, ..Layout::default() }, "/dev/sda", None)).unwrap();
        assert!(plain.contains("MIRROR=\"\"") && plain.contains("FILESYSTEMS=\"\""), "{plain}");
        // sh reads both without running them.
        for s in [&script, &plain] {
            let out = std::process::Command::new("sh").args(["-n", "-c", s]).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
    }

    #[test]
    fn a_value_that_is_not_a_plain_path_is_refused() {
        let r = Renderer::new(None).unwrap();
        for (disk, mirror) in [("/dev/vda\"; reboot; \"", None), ("/dev/vda", Some("/dev/vdb $(reboot)")), ("", None)] {
            let got = r.layout(&LayoutVars::new(&sample(), disk, mirror));
            assert!(matches!(got, Err(RenderError::Unsafe(_))), "{disk:?} {mirror:?}: {got:?}");
        }
        let mut vars = LayoutVars::new(&sample(), "/dev/vda", Some("/dev/vdd"));
        vars.filesystems[0].mount = "/srv\n/ etc".into();
        assert!(matches!(r.layout(&vars), Err(RenderError::Unsafe(_))));
        // An encrypted file system needs the Tang server; its advertisement stays in its quotes.
        let mut vars = LayoutVars::new(&sample(), "/dev/vda", None);
        vars.filesystems[0].encrypted = "1";
        assert!(matches!(r.layout(&vars), Err(RenderError::Unsafe(_))), "no tang server");
        let tang = |adv: &str| vars.clone().with_tang(("http://198.18.0.1:8080/tang".into(), adv.into()));
        assert!(matches!(r.layout(&tang(r#"{"payload":"a'; reboot; '"}"#)), Err(RenderError::Unsafe(_))));
        let script =
            r.layout(&tang(r#"{"payload":"eyJr","signatures":[{"protected":"eyJh","signature":"AB-_"}]}"#)).unwrap();
        assert!(script.contains("/srv/data xfs 320 srv_data 1\n"), "{script}");
        assert!(script.contains(r#"TANG_ADV='{"payload":"eyJr","#), "{script}");
    }
}
