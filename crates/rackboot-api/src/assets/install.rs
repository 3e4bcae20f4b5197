//! `rackboot assets install`: copies the iPXE binaries and a BootOS build into the boot
//! directory, each atomically (temp file, fsync, verify, rename), after checking every source.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use super::{needed, Origin, BOOTOS_DIR};
use crate::config::Config;

/// Where `install` takes its files from.
#[derive(Debug, Clone)]
pub struct Sources {
    /// Debian's `ipxe` package directory (`/usr/lib/ipxe`).
    pub ipxe_dir: PathBuf,
    /// A BootOS build: `vmlinuz`, `initrd.img`, optionally `rackboot-agent` and its unit.
    pub bootos_dir: PathBuf,
    /// The root Debian's signed shim and GRUB packages are installed or unpacked in (`/`).
    pub signed_root: PathBuf,
}

/// One file copied (or found already up to date).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub from: PathBuf,
    pub to: PathBuf,
    pub bytes: u64,
    pub sha256: String,
    /// The boot directory already had identical bytes.
    pub unchanged: bool,
}

struct Copy {
    from: PathBuf,
    name: String,
    required: bool,
    origin: Origin,
}

/// Copies every asset `cfg` needs into its boot directory, plus the optional extras its sources
/// have (snponly.efi; the arm64 chain and BootOS, see [`super::arm64`]; the agent binary and
/// unit that installer answer files fetch from `bootos/`). Refuses, copying nothing, when a
/// needed source is missing.
pub fn install(cfg: &Config, src: &Sources) -> anyhow::Result<Vec<Installed>> {
    let dir = |o: Origin| match o {
        Origin::Ipxe => &src.ipxe_dir,
        Origin::Bootos => &src.bootos_dir,
        Origin::Signed => &src.signed_root,
    };
    let mut plan: Vec<Copy> = needed(cfg)
        .into_iter()
        .map(|a| Copy { from: dir(a.origin).join(a.source), name: a.name, required: true, origin: a.origin })
        .collect();
    // Extras, copied when their source is there: the signed chain too, so that a machine set
    // to it (`uefi_loader` on the machine) finds it even while the config's default is iPXE.
    let shim = cfg.boot.shim.as_str();
    for a in super::arm64(cfg) {
        if !plan.iter().any(|c| c.name == a.name) {
            plan.push(Copy { from: dir(a.origin).join(a.source), name: a.name, required: false, origin: a.origin });
        }
    }
    for (origin, source, name) in [
        (Origin::Ipxe, "snponly.efi", "snponly.efi"),
        (Origin::Signed, super::SIGNED_SHIM, shim),
        (Origin::Signed, super::SIGNED_GRUB, crate::config::GRUB_EFI),
        (Origin::Bootos, "rackboot-agent", "bootos/rackboot-agent"),
        (Origin::Bootos, "rackboot-agent.service", "bootos/rackboot-agent.service"),
    ] {
        if !plan.iter().any(|c| c.name == name) {
            plan.push(Copy { from: dir(origin).join(source), name: name.into(), required: false, origin });
        }
    }
    let absent: Vec<String> = plan
        .iter()
        .filter(|c| c.required && !usable(&c.from))
        .map(|c| format!("  {} (for {}): {}", c.from.display(), c.name, how_to_get(c.origin, src)))
        .collect();
    anyhow::ensure!(absent.is_empty(), "nothing installed; missing or empty source file(s):\n{}", absent.join("\n"));

    let root = &cfg.tftp.root;
    let mut done = Vec::new();
    for c in plan.iter().filter(|c| usable(&c.from)) {
        let to = root.join(&c.name);
        done.push(copy_verified(&c.from, &to).with_context(|| format!("installing {}", to.display()))?);
    }
    Ok(done)
}

fn usable(source: &Path) -> bool {
    std::fs::metadata(source).is_ok_and(|m| m.is_file() && m.len() > 0)
}

fn how_to_get(origin: Origin, src: &Sources) -> String {
    match origin {
        Origin::Ipxe => format!(
            "install Debian's ipxe package (apt-get install ipxe){}",
            if src.ipxe_dir == Path::new(super::IPXE_DIR) { String::new() } else { " or fix --ipxe-dir".into() }
        ),
        Origin::Bootos => format!(
            "build BootOS from the rackboot source (bootos/build.sh --kernel generic {}) or pass --bootos DIR \
             with vmlinuz and initrd.img (the rackboot .deb carries a build in {BOOTOS_DIR} only when one \
             was built before packaging)",
            src.bootos_dir.display()
        ),
        Origin::Signed => super::fix(Origin::Signed),
    }
}

/// Copies `from` to `to` through a temporary file in `to`'s directory, fsyncs it, reads it back
/// and compares its SHA-256 with the source's before renaming it into place.
fn copy_verified(from: &Path, to: &Path) -> anyhow::Result<Installed> {
    let parent = to.parent().context("destination has no directory")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let (src_hash, bytes) = sha256_of(from)?;
    anyhow::ensure!(bytes > 0, "{} is empty", from.display());
    let done = |unchanged| Installed { from: from.into(), to: to.into(), bytes, sha256: src_hash.clone(), unchanged };
    if to.is_file() && sha256_of(to)?.0 == src_hash {
        return Ok(done(true));
    }
    let tmp = parent.join(format!(".{}.rackboot-tmp", to.file_name().and_then(|n| n.to_str()).unwrap_or("asset")));
    let result = (|| {
        let mut out = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let mut input = File::open(from).with_context(|| format!("opening {}", from.display()))?;
        std::io::copy(&mut input, &mut out)?;
        out.flush()?;
        out.sync_all()?;
        let (tmp_hash, tmp_bytes) = sha256_of(&tmp)?;
        anyhow::ensure!(
            tmp_hash == src_hash && tmp_bytes == bytes,
            "copy of {} does not match it (source changed while copying?)",
            from.display()
        );
        std::fs::rename(&tmp, to).with_context(|| format!("renaming into {}", to.display()))?;
        File::open(parent)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    result.map(|()| done(false))
}

fn sha256_of(path: &Path) -> anyhow::Result<(String, u64)> {
    let mut f = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf).with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        total += n as u64;
    }
    Ok((h.finalize().iter().map(|b| format!("{b:02x}")).collect(), total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assets::missing;

    struct Fixture {
        _dir: tempfile::TempDir,
        cfg: Config,
        src: Sources,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let cfg = Config::parse(&format!("[server]\ndata_dir = \"{}/data\"", d.display())).unwrap();
        let src = Sources { ipxe_dir: d.join("ipxe"), bootos_dir: d.join("bootos"), signed_root: d.join("signed") };
        for (sub, f) in
            [("ipxe", "undionly.kpxe"), ("ipxe", "ipxe.efi"), ("bootos", "vmlinuz"), ("bootos", "initrd.img")]
        {
            std::fs::create_dir_all(d.join(sub)).unwrap();
            std::fs::write(d.join(sub).join(f), format!("{f} bytes")).unwrap();
        }
        Fixture { _dir: dir, cfg, src }
    }

    #[test]
    fn installs_every_needed_asset_and_then_reports_them_unchanged() {
        let f = fixture();
        std::fs::write(f.src.ipxe_dir.join("snponly.efi"), b"snp").unwrap();
        let done = install(&f.cfg, &f.src).unwrap();
        let names: Vec<_> = done.iter().map(|i| i.to.strip_prefix(&f.cfg.tftp.root).unwrap().to_owned()).collect();
        assert_eq!(
            names,
            ["undionly.kpxe", "ipxe.efi", "bootos/vmlinuz", "bootos/initrd.img", "snponly.efi"].map(PathBuf::from)
        );
        assert!(done.iter().all(|i| !i.unchanged));
        assert_eq!(std::fs::read(f.cfg.tftp.root.join("bootos/vmlinuz")).unwrap(), b"vmlinuz bytes");
        assert!(missing(&f.cfg.tftp.root, &needed(&f.cfg)).is_empty());
        // No temporary files are left behind.
        assert!(!std::fs::read_dir(&f.cfg.tftp.root).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with('.')));

        std::fs::write(f.src.bootos_dir.join("initrd.img"), b"a newer initrd").unwrap();
        let again = install(&f.cfg, &f.src).unwrap();
        let changed: Vec<_> = again.iter().filter(|i| !i.unchanged).map(|i| i.to.clone()).collect();
        assert_eq!(changed, [f.cfg.tftp.root.join("bootos/initrd.img")]);
        assert_eq!(std::fs::read(f.cfg.tftp.root.join("bootos/initrd.img")).unwrap(), b"a newer initrd");
    }

    #[test]
    fn the_signed_chain_is_copied_when_at_hand_and_required_when_configured() {
        let mut f = fixture();
        // At hand, not configured: copied anyway (a machine may be set to it).
        for (rel, bytes) in [(crate::assets::SIGNED_SHIM, "shim"), (crate::assets::SIGNED_GRUB, "grub")] {
            let p = f.src.signed_root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        install(&f.cfg, &f.src).unwrap();
        assert_eq!(std::fs::read(f.cfg.tftp.root.join("shimx64.efi")).unwrap(), b"shim");
        assert_eq!(std::fs::read(f.cfg.tftp.root.join("grubx64.efi")).unwrap(), b"grub");
        // Configured and missing: refused, naming the packages.
        f.cfg.boot.uefi_loader = crate::config::UefiLoader::Shim;
        std::fs::remove_file(f.src.signed_root.join(crate::assets::SIGNED_GRUB)).unwrap();
        let err = format!("{:#}", install(&f.cfg, &f.src).unwrap_err());
        assert!(err.contains("(for grubx64.efi)") && err.contains("grub-efi-amd64-signed"), "{err}");
    }

    #[test]
    fn refuses_and_copies_nothing_when_a_needed_source_is_missing() {
        let f = fixture();
        std::fs::remove_file(f.src.bootos_dir.join("initrd.img")).unwrap();
        std::fs::remove_file(f.src.ipxe_dir.join("ipxe.efi")).unwrap();
        let err = format!("{:#}", install(&f.cfg, &f.src).unwrap_err());
        assert!(err.contains("ipxe/ipxe.efi (for ipxe.efi): install Debian's ipxe package"), "{err}");
        assert!(err.contains("bootos/initrd.img (for bootos/initrd.img): build BootOS"), "{err}");
        assert!(!f.cfg.tftp.root.exists(), "nothing may be copied");
    }

    #[test]
    fn an_empty_source_is_refused() {
        let f = fixture();
        std::fs::write(f.src.bootos_dir.join("vmlinuz"), b"").unwrap();
        let err = format!("{:#}", install(&f.cfg, &f.src).unwrap_err());
        assert!(err.contains("bootos/vmlinuz (for bootos/vmlinuz): build BootOS"), "{err}");
        assert!(!f.cfg.tftp.root.exists(), "nothing may be copied");
    }
}
