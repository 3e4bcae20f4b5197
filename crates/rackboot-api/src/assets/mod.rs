//! Boot assets: the files a config needs in its boot directory (iPXE binaries, the discovery
//! profile's BootOS kernel and initrd), which of them are missing and how to get them.
//!
//! An appliance with an empty boot directory answers DHCP and hands out boot files that do not
//! exist, so machines fail to boot with nothing in rackboot's own logs. [`guard`] warns at start
//! and makes `/healthz` answer 503 naming each missing file and the command that fixes it;
//! [`install`] (`rackboot assets install`) copies them from Debian's `ipxe` package and a BootOS
//! build.

pub mod image;
pub mod install;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use tracing::{info, warn};

use crate::config::{Config, UefiLoader, GRUB_EFI};

/// Where Debian's `ipxe` package puts its binaries.
pub const IPXE_DIR: &str = "/usr/lib/ipxe";
/// Where Debian's signed shim and GRUB live, relative to the root they were unpacked into
/// (`/` when the packages `shim-signed` and `grub-efi-amd64-signed` are installed).
pub const SIGNED_SHIM: &str = "usr/lib/shim/shimx64.efi.signed";
pub const SIGNED_GRUB: &str = "usr/lib/grub/x86_64-efi-signed/grubnetx64.efi.signed";
/// The arm64 chain, from the arm64 packages of the same names (`shim-signed:arm64`,
/// `grub-efi-arm64-signed`), unpacked into the same root.
pub const SIGNED_SHIM_ARM64: &str = "usr/lib/shim/shimaa64.efi.signed";
pub const SIGNED_GRUB_ARM64: &str = "usr/lib/grub/arm64-efi-signed/grubnetaa64.efi.signed";
/// Where the rackboot Debian package puts a BootOS build, when it carries one.
pub const BOOTOS_DIR: &str = "/usr/share/rackboot/bootos";

/// Where an asset comes from, which decides how to get it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Debian's `ipxe` package (`--ipxe-dir`, default [`IPXE_DIR`]).
    Ipxe,
    /// A BootOS build (`--bootos`, default [`BOOTOS_DIR`]).
    Bootos,
    /// Debian's `shim-signed` and `grub-efi-amd64-signed` packages, installed or unpacked
    /// (`--signed-root`, default `/`).
    Signed,
}

/// One file the boot directory should hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// Path relative to the boot directory, as TFTP and `/boot/files/` clients ask for it.
    pub name: String,
    /// The file's name in its origin's directory.
    pub source: &'static str,
    pub origin: Origin,
    /// Who asks for it, for messages.
    pub purpose: &'static str,
}

/// A needed asset that is not in the boot directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    pub asset: Asset,
    /// Its full path in the boot directory.
    pub path: PathBuf,
    /// The command (or package) that provides it.
    pub fix: String,
}

/// The boot assets `cfg` needs: the iPXE binaries its DHCP answers name and the discovery
/// profile's kernel and initrd (unless they are `http://` URLs, served by someone else).
pub fn needed(cfg: &Config) -> Vec<Asset> {
    let b = &cfg.boot;
    let mut out = vec![
        Asset { name: b.bios.clone(), source: "undionly.kpxe", origin: Origin::Ipxe, purpose: "BIOS PXE clients" },
        Asset { name: b.uefi_x64.clone(), source: "ipxe.efi", origin: Origin::Ipxe, purpose: "UEFI x64 PXE clients" },
    ];
    if b.uefi_x64_snp {
        out.push(Asset {
            name: "snponly.efi".into(),
            source: "snponly.efi",
            origin: Origin::Ipxe,
            purpose: "UEFI x64 PXE clients (boot.uefi_x64_snp)",
        });
    }
    let shim =
        b.uefi_loader == UefiLoader::Shim || cfg.dhcp.subnets.iter().any(|s| s.uefi_loader == Some(UefiLoader::Shim));
    if shim {
        out.push(Asset {
            name: b.shim.clone(),
            source: SIGNED_SHIM,
            origin: Origin::Signed,
            purpose: "UEFI x64 PXE clients (signed chain: shim)",
        });
        out.push(Asset {
            name: GRUB_EFI.into(),
            source: SIGNED_GRUB,
            origin: Origin::Signed,
            purpose: "UEFI x64 PXE clients (signed chain: GRUB, loaded by shim)",
        });
    }
    // Config validation guarantees the discovery profile exists.
    if let Some(p) = b.profiles.get(&b.discovery_profile) {
        out.extend(bootos([
            (&p.kernel, "vmlinuz", "the discovery kernel (BootOS)"),
            (&p.initrd, "initrd.img", "the discovery initrd (BootOS)"),
        ]));
    }
    out
}

/// BootOS files a profile names (path, file in the BootOS build, purpose), but those served
/// from elsewhere (`http://` URLs) or not named.
fn bootos<'a>(files: [(&'a String, &'static str, &'static str); 2]) -> impl Iterator<Item = Asset> + 'a {
    files.into_iter().filter(|(path, _, _)| !is_url(path) && !path.is_empty()).map(|(path, source, purpose)| Asset {
        name: path.clone(),
        source,
        origin: Origin::Bootos,
        purpose,
    })
}

/// What arm64 machines boot from (`boot.arm64`, the signed arm64 chain, and the discovery
/// profile's arm64 BootOS), when `boot.arm64` names a file. Optional: a rack of x86 machines
/// needs none of it, so these never make `/healthz` degraded; `rackboot assets check` lists
/// them apart, and `install` copies them when its sources have them.
pub fn arm64(cfg: &Config) -> Vec<Asset> {
    let b = &cfg.boot;
    if b.arm64.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Asset {
            name: b.arm64.clone(),
            source: SIGNED_SHIM_ARM64,
            origin: Origin::Signed,
            purpose: "arm64 UEFI PXE clients (shim)",
        },
        Asset {
            name: crate::config::GRUB_EFI_ARM64.into(),
            source: SIGNED_GRUB_ARM64,
            origin: Origin::Signed,
            purpose: "arm64 UEFI PXE clients (GRUB, loaded by shim)",
        },
    ];
    if let Some(a) = b.profiles.get(&b.discovery_profile).and_then(|p| p.arm64.as_ref()) {
        out.extend(bootos([
            (&a.kernel, "arm64/vmlinuz", "the arm64 discovery kernel (BootOS)"),
            (&a.initrd, "arm64/initrd.img", "the arm64 discovery initrd (BootOS)"),
        ]));
    }
    out
}

fn is_url(path: &str) -> bool {
    path.starts_with("http://") || path.starts_with("https://")
}

/// The assets of `needed` that are not a non-empty file under `root`, each with its fix.
pub fn missing(root: &Path, needed: &[Asset]) -> Vec<Missing> {
    needed
        .iter()
        .filter(|a| !std::fs::metadata(root.join(&a.name)).is_ok_and(|m| m.is_file() && m.len() > 0))
        .map(|a| Missing { asset: a.clone(), path: root.join(&a.name), fix: fix(a.origin) })
        .collect()
}

/// How to get an asset of `origin` into the boot directory.
pub fn fix(origin: Origin) -> String {
    match origin {
        Origin::Ipxe => "apt-get install ipxe; rackboot assets install (with serve's --config)".into(),
        Origin::Bootos => format!(
            "rackboot assets install --bootos DIR (with serve's --config; DIR defaults to {BOOTOS_DIR}, \
             which the rackboot .deb fills when built with BootOS; build one with bootos/build.sh --kernel generic DIR)"
        ),
        Origin::Signed => "apt-get download shim-signed grub-efi-amd64-signed (for arm64: shim-signed:arm64 \
             grub-efi-arm64-signed); dpkg-deb -x each into DIR; rackboot assets install --signed-root DIR \
             (with serve's --config)"
            .into(),
    }
}

/// What `/healthz` checks: the boot directory and the assets the running config needs.
#[derive(Debug, Clone)]
pub struct Check {
    pub root: PathBuf,
    pub needed: Vec<Asset>,
}

/// Logs a warning for each asset `cfg` needs that is missing, and attaches the check to `router`
/// so `/healthz` reports them (and turns ok once they are installed, without a restart).
pub fn guard(router: Router, cfg: &Config) -> Router {
    let check = Check { root: cfg.tftp.root.clone(), needed: needed(cfg) };
    let gaps = missing(&check.root, &check.needed);
    for m in &gaps {
        warn!(file = %m.path.display(), purpose = m.asset.purpose, fix = %m.fix, "boot asset missing: machines cannot boot");
    }
    if gaps.is_empty() {
        info!(root = %check.root.display(), assets = check.needed.len(), "boot assets present");
    }
    router.layer(Extension(Arc::new(check)))
}

/// `GET /healthz`: 200 `ok` when the CMDB takes writes and every needed boot asset is present,
/// else 503 with one line per problem and its fix. Without a [`guard`] (a router built by hand)
/// boot assets are not checked.
pub async fn healthz(State(s): State<crate::api::ApiState>, req: Request) -> Response {
    if let Some(fault) = s.cmdb.storage_fault() {
        // A shared store's fault names its host and database: the log has it, not this
        // unauthenticated answer.
        let text = if s.cmdb.shared() {
            "degraded: changes cannot be stored: the shared CMDB does not answer (the appliance's log says why)\nfix: bring the shared store back; writes resume by themselves\n".to_string()
        } else {
            format!("degraded: changes cannot be stored: {fault}\nfix: free space in the data dir (or fix its disk); writes resume by themselves\n")
        };
        return (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text)
            .into_response();
    }
    let quarantined = s.cmdb.quarantined();
    if quarantined > 0 {
        let text = format!(
            "degraded: {quarantined} CMDB record(s) did not decode at start and were moved to the quarantine\n\
             fix: GET /api/v1/quarantine lists them; restore what they held (e.g. from a backup), then DELETE /api/v1/quarantine\n"
        );
        return (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text)
            .into_response();
    }
    let Some(check) = req.extensions().get::<Arc<Check>>().cloned() else {
        return "ok\n".into_response();
    };
    let gaps = match tokio::task::spawn_blocking(move || missing(&check.root, &check.needed)).await {
        Ok(gaps) => gaps,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, format!("asset check failed: {e}\n")).into_response(),
    };
    if gaps.is_empty() {
        return "ok\n".into_response();
    }
    (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], report(&gaps))
        .into_response()
}

/// The text `/healthz` and `rackboot assets check` show for missing assets.
pub fn report(gaps: &[Missing]) -> String {
    let mut s = format!("degraded: {} boot asset(s) missing; machines cannot PXE-boot\n", gaps.len());
    for m in gaps {
        s.push_str(&format!("missing {} ({}): fix: {}\n", m.path.display(), m.asset.purpose, m.fix));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(extra: &str) -> Config {
        Config::parse(&format!("[server]\ndata_dir = \"/srv/rb\"\n{extra}")).unwrap()
    }

    fn names(assets: &[Asset]) -> Vec<&str> {
        assets.iter().map(|a| a.name.as_str()).collect()
    }

    #[test]
    fn the_embedded_default_needs_ipxe_and_bootos() {
        let c = Config::load(None).unwrap();
        assert_eq!(names(&needed(&c)), ["undionly.kpxe", "ipxe.efi", "bootos/vmlinuz", "bootos/initrd.img"]);
    }

    #[test]
    fn configured_names_snp_and_a_custom_discovery_profile_are_followed() {
        let c = cfg(r#"
[boot]
bios = "custom.kpxe"
uefi_x64_snp = true
discovery_profile = "disc"
[[boot.profiles]]
name = "disc"
kernel = "os/k"
initrd = "http://mirror.example/initrd"
"#);
        let n = needed(&c);
        assert_eq!(names(&n), ["custom.kpxe", "ipxe.efi", "snponly.efi", "os/k"]);
        assert_eq!(n[0].source, "undionly.kpxe");
        assert_eq!(n[3].source, "vmlinuz");
    }

    #[test]
    fn the_signed_chain_needs_shim_and_grub_whether_chosen_globally_or_by_a_subnet() {
        let signed = ["undionly.kpxe", "ipxe.efi", "shimx64.efi", "grubx64.efi", "bootos/vmlinuz", "bootos/initrd.img"];
        assert_eq!(names(&needed(&cfg("[boot]\nuefi_loader = \"shim\""))), signed);
        let subnet = "interface = \"br0\"\n[dhcp]\nmode = \"full\"\n[[dhcp.subnets]]\ncidr = \"198.18.0.0/24\"\npools = [\"198.18.0.10-198.18.0.20\"]\nuefi_loader = \"shim\"";
        let n = needed(&cfg(subnet));
        assert_eq!(names(&n), signed);
        assert_eq!((n[2].origin, n[3].source), (Origin::Signed, SIGNED_GRUB));
        assert!(fix(Origin::Signed).contains("grub-efi-amd64-signed"));
        let err = format!("{:#}", Config::parse("[boot]\nuefi_loader = \"grub\"").unwrap_err());
        assert!(err.contains("uefi_loader"), "{err}");
    }

    #[test]
    fn arm64_assets_are_the_signed_arm64_chain_and_bootos_for_arm64_and_never_required() {
        let c = Config::load(None).unwrap();
        let a = arm64(&c);
        assert_eq!(names(&a), ["shimaa64.efi", "grubaa64.efi", "bootos/arm64/vmlinuz", "bootos/arm64/initrd.img"]);
        assert_eq!((a[1].origin, a[1].source, a[3].source), (Origin::Signed, SIGNED_GRUB_ARM64, "arm64/initrd.img"));
        assert!(needed(&c).iter().all(|n| !n.name.contains("aa64") && !n.name.contains("arm64")), "not required");
        assert!(arm64(&cfg("[boot]\narm64 = \"\"")).is_empty(), "arm64 not served");
    }

    #[test]
    fn missing_names_each_absent_or_empty_file_with_its_fix() {
        let dir = tempfile::tempdir().unwrap();
        let c = cfg(&format!("[tftp]\nroot = \"{}\"", dir.path().display()));
        let all = needed(&c);
        assert_eq!(missing(dir.path(), &all).len(), 4);

        std::fs::write(dir.path().join("undionly.kpxe"), b"x").unwrap();
        std::fs::write(dir.path().join("ipxe.efi"), b"").unwrap(); // empty: a failed copy, not an asset
        std::fs::create_dir_all(dir.path().join("bootos/vmlinuz")).unwrap(); // a directory is not a file
        let gaps = missing(dir.path(), &all);
        assert_eq!(
            gaps.iter().map(|m| m.asset.name.as_str()).collect::<Vec<_>>(),
            ["ipxe.efi", "bootos/vmlinuz", "bootos/initrd.img"]
        );
        assert!(gaps[0].fix.contains("apt-get install ipxe"));
        assert!(gaps[1].fix.contains("--bootos"));
        let text = report(&gaps);
        assert!(text.starts_with("degraded: 3 boot asset(s) missing"), "{text}");
        assert!(text.contains(&format!("missing {}", dir.path().join("bootos/initrd.img").display())), "{text}");

        for f in ["ipxe.efi", "bootos/initrd.img"] {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        std::fs::remove_dir(dir.path().join("bootos/vmlinuz")).unwrap();
        std::fs::write(dir.path().join("bootos/vmlinuz"), b"x").unwrap();
        assert!(missing(dir.path(), &all).is_empty());
    }
}
