//! BootOS as one UEFI image (see [`crate::uki`]): what the firmware's HTTPS boot is to load
//! over TLS, and (signed) what Secure Boot is to check as a whole. The appliance builds it from the
//! discovery profile's kernel and initrd, systemd's EFI stub (`boot.efi_stub`) and a command
//! line that names this appliance (its HTTPS URL and CA pin) and no machine: the agent asks for
//! its nonce over pinned TLS (`rackboot.nonce=tls`). Built at start, and again only when one of
//! its inputs changed (their sizes and times, and the command line, are kept beside it).

use std::path::{Path, PathBuf};

use anyhow::Context;
use tracing::{info, warn};

use crate::planner::{BootPlan, PlanContext};
use crate::render::ScriptVars;
use crate::uki::IMAGE_PATH;

/// What the image was built from, one line each: kept as `<image>.inputs`.
fn stamp(files: &[&Path], cmdline: &str) -> String {
    let mut s = String::new();
    for f in files {
        let meta = std::fs::metadata(f).ok();
        let when =
            meta.as_ref().and_then(|m| m.modified().ok()).and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        s.push_str(&format!("{} {} {}\n", f.display(), meta.map_or(0, |m| m.len()), when.map_or(0, |d| d.as_nanos())));
    }
    s.push_str(cmdline);
    s.push('\n');
    s
}

/// The image's command line: the discovery profile's, rendered for no machine, with the
/// nonce asked for over TLS.
pub fn cmdline(
    renderer: &crate::render::Renderer,
    boot: &crate::config::BootFiles,
    (https_base, ca_pin): (&str, &str),
) -> anyhow::Result<(String, String, String)> {
    let ctx =
        PlanContext { http_base: https_base, discovery_profile: &boot.discovery_profile, profiles: &boot.profiles };
    let mac = crate::mac::Mac([0; 6]);
    let BootPlan::Profile(p) = crate::planner::plan_boot(mac, None, &ctx)? else {
        anyhow::bail!("the discovery profile boots no kernel");
    };
    let (Some(kernel), Some(initrd)) = (p.kernel_path.clone(), p.initrd_path.clone()) else {
        anyhow::bail!("the discovery profile's kernel and initrd are not in the boot directory");
    };
    let vars = ScriptVars {
        mac: String::new(),
        hostname: None,
        uefi: true,
        http_base: https_base.to_string(),
        boot_nonce: Some(rackboot_agent::wire::NONCE_OVER_TLS.to_string()),
        agent_url: https_base.to_string(),
        ca_pin: ca_pin.to_string(),
    };
    let line = renderer.cmdline(&p, &vars)?;
    // No machine: no `rackboot.mac=` (the agent finds its boot MAC through the nonce).
    let line: Vec<&str> = line.split_whitespace().filter(|w| *w != "rackboot.mac=").collect();
    Ok((kernel, initrd, line.join(" ")))
}

/// Who signs the image: sbsign's path and the appliance's Secure Boot key.
pub type Signer<'a> = (&'a Path, &'a crate::secureboot::SigningKey);

/// Builds `<root>/bootos/bootos.efi` when its inputs changed, signed by `signer` when given;
/// `Ok(None)` when there is nothing to build it from (no BootOS in the boot directory, or no
/// stub: a warning names the package).
pub fn ensure(
    root: &Path,
    stub: &Path,
    (kernel, initrd, cmdline): (&str, &str, &str),
    signer: Option<Signer<'_>>,
) -> anyhow::Result<Option<PathBuf>> {
    let (kernel, initrd) = (root.join(kernel), root.join(initrd));
    if !kernel.is_file() || !initrd.is_file() {
        return Ok(None);
    }
    if !stub.is_file() {
        warn!(stub = %stub.display(), "no EFI stub: no UEFI image of BootOS (apt-get install systemd-boot-efi, or set boot.efi_stub)");
        return Ok(None);
    }
    let image = root.join(IMAGE_PATH);
    let inputs = image.with_extension("efi.inputs");
    let mut now = stamp(&[stub, &kernel, &initrd], cmdline);
    if let Some((_, key)) = signer {
        now.push_str(&format!("signed by {}\n", crate::tls::fingerprint(key.cert_pem.as_bytes())));
    }
    if image.is_file() && std::fs::read_to_string(&inputs).ok().as_deref() == Some(now.as_str()) {
        return Ok(Some(image));
    }
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let mut line = cmdline.as_bytes().to_vec();
    line.push(0);
    let osrel = b"ID=rackboot-bootos\nNAME=\"rackboot BootOS\"\n";
    let bytes = crate::uki::build(
        &read(stub)?,
        &[(".osrel", osrel), (".cmdline", &line), (".linux", &read(&kernel)?), (".initrd", &read(&initrd)?)],
    )
    .with_context(|| format!("building BootOS's UEFI image on {}", stub.display()))?;
    let tmp = image.with_extension("efi.new");
    std::fs::write(&tmp, &bytes).with_context(|| format!("writing {}", tmp.display()))?;
    if let Some((sbsign, key)) = signer {
        let signed = image.with_extension("efi.signed");
        let result = crate::secureboot::sign(sbsign, key, &tmp, &signed);
        let _ = std::fs::remove_file(&tmp);
        result.context("signing BootOS's image")?;
        std::fs::rename(&signed, &tmp)?;
    }
    std::fs::rename(&tmp, &image)?;
    std::fs::write(&inputs, now)?;
    info!(image = %image.display(), bytes = bytes.len(), signed = signer.is_some(), "UEFI image of BootOS built");
    Ok(Some(image))
}

/// Builds BootOS's image where it is missing or stale, signed with the appliance's Secure
/// Boot key when sbsign is there (the key made only for an image to sign); a failure is
/// logged, and there is then no image.
pub fn at_start(
    cfg: &crate::config::Config,
    renderer: &crate::render::Renderer,
    appliance: (&str, &str),
    sealer: &crate::secrets::Sealer,
) {
    let root = &cfg.tftp.root;
    let built = cmdline(renderer, &cfg.boot, appliance).and_then(|(k, i, line)| {
        let sbsign = Path::new(crate::secureboot::SBSIGN);
        let key = match root.join(&k).is_file() && root.join(&i).is_file() && cfg.boot.efi_stub.is_file() {
            true if sbsign.exists() => Some(crate::secureboot::ensure(&cfg.data_dir, sealer)?),
            true => {
                warn!("no sbsign (apt-get install sbsigntool): BootOS's image is not signed");
                None
            }
            false => None,
        };
        let signer = key.as_ref().map(|key| (sbsign, key));
        ensure(root, &cfg.boot.efi_stub, (&k, &i, &line), signer)
    });
    if let Err(error) = built {
        warn!(error = format!("{error:#}"), "no UEFI image of BootOS");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_built_once_and_again_when_an_input_changes() {
        let stub = Path::new(crate::config::EFI_STUB);
        if !stub.is_file() {
            eprintln!("SKIPPED: {} is missing (systemd-boot-efi)", stub.display());
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let line = ("bootos/vmlinuz", "bootos/initrd.img", "console=ttyS0 rackboot.nonce=tls");
        assert_eq!(ensure(root, stub, line, None).unwrap(), None, "no BootOS: nothing to build");
        std::fs::create_dir_all(root.join("bootos")).unwrap();
        std::fs::write(root.join("bootos/vmlinuz"), b"kernel").unwrap();
        std::fs::write(root.join("bootos/initrd.img"), b"initrd").unwrap();
        assert_eq!(ensure(root, Path::new("/nonexistent.stub"), line, None).unwrap(), None, "no stub");
        let image = ensure(root, stub, line, None).unwrap().unwrap();
        let built = std::fs::metadata(&image).unwrap().modified().unwrap();
        let all = std::fs::read(&image).unwrap();
        let sections = crate::uki::sections(&all).unwrap();
        let find = |n: &str| sections.iter().find(|(x, _)| x == n).map(|(_, b)| b.to_vec());
        assert_eq!(find(".linux").unwrap(), b"kernel");
        assert_eq!(find(".cmdline").unwrap(), b"console=ttyS0 rackboot.nonce=tls\0");
        // Unchanged: not built again; another command line: built again.
        std::thread::sleep(std::time::Duration::from_millis(20));
        ensure(root, stub, line, None).unwrap();
        assert_eq!(std::fs::metadata(&image).unwrap().modified().unwrap(), built);
        ensure(root, stub, (line.0, line.1, "console=ttyS1 rackboot.nonce=tls"), None).unwrap();
        let again = std::fs::read(&image).unwrap();
        let sections = crate::uki::sections(&again).unwrap();
        assert_eq!(sections.iter().find(|(n, _)| n == ".cmdline").unwrap().1, b"console=ttyS1 rackboot.nonce=tls\0");
    }

    #[test]
    fn a_rotated_key_signs_the_image_again() {
        let (stub, sbsign) = (Path::new(crate::config::EFI_STUB), Path::new(crate::secureboot::SBSIGN));
        if !stub.is_file() || !sbsign.exists() {
            eprintln!("SKIPPED: systemd-boot-efi or sbsigntool is missing");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let (root, data) = (dir.path().join("boot"), dir.path().join("data"));
        std::fs::create_dir_all(root.join("bootos")).unwrap();
        std::fs::write(root.join("bootos/vmlinuz"), b"kernel").unwrap();
        std::fs::write(root.join("bootos/initrd.img"), b"initrd").unwrap();
        let line = ("bootos/vmlinuz", "bootos/initrd.img", "console=ttyS0");
        let sealer = crate::secrets::Sealer::from_key(&[3u8; 32]);
        let verifies = |cert: &str| {
            let c = dir.path().join("cert.pem");
            std::fs::write(&c, cert).unwrap();
            let out = std::process::Command::new("sbverify").arg("--cert").arg(&c).arg(root.join(IMAGE_PATH)).output();
            out.unwrap().status.success()
        };
        let old = crate::secureboot::ensure(&data, &sealer).unwrap();
        ensure(&root, stub, line, Some((sbsign, &old))).unwrap().unwrap();
        assert!(verifies(&old.cert_pem));
        let new = crate::secureboot::rotate(&data, &sealer).unwrap();
        ensure(&root, stub, line, Some((sbsign, &new))).unwrap().unwrap();
        assert!(verifies(&new.cert_pem), "signed again with the new key");
        assert!(!verifies(&old.cert_pem), "and no longer with the old one");
    }
}
