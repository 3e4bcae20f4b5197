//! Importing Windows media into the boot directory: all or nothing, names lowercased (Windows
//! asks in any case; TFTP and the share then match by lowering the request), the boot files
//! checked and hashed.

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{valid_media_name, wim, BOOTMGR, DIR};

/// The manifest written beside the media.
pub const MANIFEST: &str = "rackboot-media.json";
/// The UEFI BCD and the BIOS one, in the order a UEFI client's `\Boot\BCD` is looked up.
pub const BCDS: [&str; 2] = ["efi/microsoft/boot/bcd", "boot/bcd"];
const SDI: &str = "boot/boot.sdi";
const WIM: &str = "sources/boot.wim";
/// Most files one media may hold (an install ISO has about 1,000).
const MAX_FILES: usize = 100_000;

/// What an import found and did, also kept as [`MANIFEST`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    pub name: String,
    /// The directory imported from.
    pub source: String,
    pub files: usize,
    pub bytes: u64,
    /// Where `bootmgfw.efi` came from: the media's top, `boot.wim`, or `efi/boot/bootx64.efi`.
    pub bootmgr_from: String,
    /// `startnet.cmd` put into `boot.wim` (with `wimupdate` and a share address).
    pub startnet: bool,
    /// SHA-256 of the boot files, by path in the media.
    pub sha256: Vec<(String, String)>,
}

/// What an import needs besides the media.
pub struct ImportOptions {
    /// Replace media already imported under the name.
    pub replace: bool,
    /// The share's address, for the `startnet.cmd` put into `boot.wim`; `None`: left out.
    pub share_address: Option<Ipv4Addr>,
}

/// Copies `from` into `<root>/windows/<name>/` and checks it; on any failure nothing is left
/// behind and media already there is untouched.
pub fn import(root: &Path, name: &str, from: &Path, opts: &ImportOptions) -> anyhow::Result<Manifest> {
    anyhow::ensure!(valid_media_name(name), "media name {name:?} must be letters, digits and '-' (not \"unattend\")");
    let meta = std::fs::metadata(from).with_context(|| format!("reading {}", from.display()))?;
    anyhow::ensure!(
        meta.is_dir(),
        "{} is not a directory: mount the ISO first (mount -o loop,ro FILE.iso /mnt) and import /mnt",
        from.display()
    );
    let base = root.join(DIR);
    let dest = base.join(name);
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    // One import of a name at a time; what an import killed half-way left is swept under it.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(base.join(format!(".{name}.lock")))?;
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, e)| anyhow::anyhow!("another import of {name} is running ({e})"))?;
    sweep(&base, name);
    anyhow::ensure!(opts.replace || !dest.exists(), "media {name} is imported already (--replace replaces it)");
    let tmp = base.join(format!(".import-{name}-{}", std::process::id()));
    let built = build(&tmp, name, from, opts);
    let manifest = match built {
        Ok(m) => m,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    let old = base.join(format!(".replaced-{name}-{}", std::process::id()));
    if dest.exists() {
        std::fs::rename(&dest, &old).context("moving the old media aside")?;
    }
    if let Err(e) = std::fs::rename(&tmp, &dest) {
        let _ = std::fs::rename(&old, &dest);
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e).context("moving the media into place");
    }
    let _ = std::fs::remove_dir_all(&old);
    Ok(manifest)
}

fn build(tmp: &Path, name: &str, from: &Path, opts: &ImportOptions) -> anyhow::Result<Manifest> {
    let base = tmp.parent().context("the import's directory has no parent")?;
    let free = nix::sys::statvfs::statvfs(base)
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()))
        .with_context(|| format!("reading the free space of {}", base.display()))?;
    // Room left for the boot manager taken out of boot.wim and for what else runs here.
    let room = Room { free, keep: MAX_BOOTMGR_ROOM };
    let (mut files, mut bytes) = (0usize, 0u64);
    copy_lowercased(from, tmp, &room, &mut files, &mut bytes)?;
    let missing: Vec<&str> = [SDI, WIM].into_iter().filter(|p| !tmp.join(p).is_file()).collect();
    anyhow::ensure!(
        missing.is_empty(),
        "the media has no {}: is it a Windows install or WinPE tree?",
        missing.join(", ")
    );
    let bcd = BCDS
        .into_iter()
        .find(|p| tmp.join(p).is_file())
        .with_context(|| format!("the media has no BCD ({})", BCDS.join(" or ")))?;
    let bootmgr_from = wim::place_bootmgr(tmp, &tmp.join(WIM))?;
    let startnet = match opts.share_address {
        Some(addr) if wim::have("wimupdate") => {
            wim::inject_startup(&tmp.join(WIM), &wim::startnet_cmd(addr, name))?;
            true
        }
        _ => false,
    };
    let mut sha256 = Vec::new();
    for p in [BOOTMGR, bcd, SDI, WIM] {
        let sum = crate::provision::sha256_file(&tmp.join(p)).with_context(|| format!("hashing {p}"))?;
        sha256.push((p.to_string(), sum));
    }
    let manifest = Manifest {
        name: name.to_string(),
        source: from.display().to_string(),
        files,
        bytes,
        bootmgr_from,
        startnet,
        sha256,
    };
    std::fs::write(tmp.join(MANIFEST), serde_json::to_vec_pretty(&manifest)?)?;
    Ok(manifest)
}

/// What a copy may fill: the free space when it began, less what must stay free.
struct Room {
    free: u64,
    keep: u64,
}

/// Space kept free by an import, beyond the media itself.
const MAX_BOOTMGR_ROOM: u64 = 256 << 20;

/// Copies a tree with every name lowercased; two names that differ only in case are refused,
/// and so is a tree larger than the room there is (refused before the file that would pass it).
fn copy_lowercased(from: &Path, to: &Path, room: &Room, files: &mut usize, bytes: &mut u64) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name();
        let lower = name.to_str().with_context(|| format!("{:?}: not UTF-8", entry.path()))?.to_lowercase();
        let target = to.join(&lower);
        anyhow::ensure!(!target.exists(), "{} and another name differ only in case", entry.path().display());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_lowercased(&entry.path(), &target, room, files, bytes)?;
        } else if kind.is_file() {
            *files += 1;
            anyhow::ensure!(*files <= MAX_FILES, "more than {MAX_FILES} files: is this install media?");
            let len = entry.metadata()?.len();
            let need = bytes.saturating_add(len).saturating_add(room.keep);
            anyhow::ensure!(
                need <= room.free,
                "the media needs more than the {} MB free here (at {}, {} MB copied, {} MB kept free)",
                room.free >> 20,
                entry.path().display(),
                *bytes >> 20,
                room.keep >> 20
            );
            *bytes +=
                std::fs::copy(entry.path(), &target).with_context(|| format!("copying {}", entry.path().display()))?;
            // Readable by the share's guest account, whatever the media's modes were.
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644))?;
        }
        // Symlinks and special files are not part of install media: left out.
    }
    Ok(())
}

/// Removes the half-built and set-aside copies of `name` earlier imports left (killed ones).
fn sweep(base: &Path, name: &str) {
    let Ok(dir) = std::fs::read_dir(base) else { return };
    let prefixes = [format!(".import-{name}-"), format!(".replaced-{name}-")];
    for e in dir.flatten() {
        let file = e.file_name();
        let Some(file) = file.to_str() else { continue };
        let rest = prefixes.iter().find_map(|p| file.strip_prefix(p.as_str()));
        if rest.is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit())) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The media imported so far, by their manifests.
pub fn list(root: &Path) -> Vec<Manifest> {
    let Ok(dir) = std::fs::read_dir(root.join(DIR)) else { return Vec::new() };
    let mut out: Vec<Manifest> = dir
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| std::fs::read(e.path().join(MANIFEST)).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The path in the boot directory for a name a Windows boot asked for (`\Boot\BCD`): slashes
/// turned, case lowered, inside `media`'s directory when the client boots one. A UEFI client's
/// BCD is the media's UEFI one when it has one.
pub fn tftp_path(root: &Path, media: Option<&str>, asked: &str) -> String {
    let rel = asked.replace('\\', "/").trim_start_matches('/').to_lowercase();
    let Some(media) = media else { return rel };
    let dir = format!("{DIR}/{media}");
    if rel == "boot/bcd" {
        if let Some(bcd) = BCDS.iter().find(|p| root.join(&dir).join(p).is_file()) {
            return format!("{dir}/{bcd}");
        }
    }
    format!("{dir}/{rel}")
}

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
