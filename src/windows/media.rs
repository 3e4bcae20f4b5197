//! Importing Windows media into the boot directory: all or nothing, names lowercased (Windows
//! asks in any case; TFTP and the share then match by lowering the request), the boot files
//! checked and hashed.

use std::net::Ipv4Addr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use super::{valid_media_name, BOOTMGR, DIR};

/// The manifest written beside the media.
pub const MANIFEST: &str = "rackboot-media.json";
/// The UEFI BCD and the BIOS one, in the order a UEFI client's `\Boot\BCD` is looked up.
pub const BCDS: [&str; 2] = ["efi/microsoft/boot/bcd", "boot/bcd"];
const SDI: &str = "boot/boot.sdi";
const WIM: &str = "sources/boot.wim";
/// Where WinPE keeps its boot manager, inside `boot.wim`.
const WIM_BOOTMGR: &str = "/Windows/Boot/EFI/bootmgfw.efi";
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
    anyhow::ensure!(opts.replace || !dest.exists(), "media {name} is imported already (--replace replaces it)");
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    let tmp = base.join(format!(".import-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
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
    let (mut files, mut bytes) = (0usize, 0u64);
    copy_lowercased(from, tmp, &mut files, &mut bytes)?;
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
    let bootmgr_from = place_bootmgr(tmp)?;
    let startnet = match opts.share_address {
        Some(addr) if have("wimupdate") => {
            inject_startnet(&tmp.join(WIM), &startnet_cmd(addr, name))?;
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

/// Copies a tree with every name lowercased; two names that differ only in case are refused.
fn copy_lowercased(from: &Path, to: &Path, files: &mut usize, bytes: &mut u64) -> anyhow::Result<()> {
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
            copy_lowercased(&entry.path(), &target, files, bytes)?;
        } else if kind.is_file() {
            *files += 1;
            anyhow::ensure!(*files <= MAX_FILES, "more than {MAX_FILES} files: is this install media?");
            *bytes +=
                std::fs::copy(entry.path(), &target).with_context(|| format!("copying {}", entry.path().display()))?;
            // Readable by the share's guest account, whatever the media's modes were.
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644))?;
        }
        // Symlinks and special files are not part of install media: left out.
    }
    Ok(())
}

/// Puts the boot manager at the media's top: the one already there, else WinPE's own from
/// `boot.wim`, else the media's removable-boot copy (`efi/boot/bootx64.efi`, also bootmgfw).
fn place_bootmgr(tmp: &Path) -> anyhow::Result<String> {
    let target = tmp.join(BOOTMGR);
    if target.is_file() {
        return Ok("the media's top".into());
    }
    if have("wimextract") {
        let index = boot_index(&tmp.join(WIM)).unwrap_or(1).to_string();
        let out = Command::new("wimextract")
            .arg(tmp.join(WIM))
            .args([index.as_str(), WIM_BOOTMGR, "--no-acls", "--dest-dir"])
            .arg(tmp)
            .output()
            .context("running wimextract")?;
        if out.status.success() && target.is_file() {
            return Ok(format!("boot.wim image {index}"));
        }
    }
    let removable = tmp.join("efi/boot/bootx64.efi");
    anyhow::ensure!(
        removable.is_file(),
        "the media has no {BOOTMGR}: not at its top, not in boot.wim ({WIM_BOOTMGR}), no efi/boot/bootx64.efi"
    );
    std::fs::copy(&removable, &target)?;
    Ok("efi/boot/bootx64.efi".into())
}

/// The WIM's bootable image (`Boot Index` in `wiminfo`), when it names one.
fn boot_index(wim: &Path) -> Option<u32> {
    let out = Command::new("wiminfo").arg(wim).arg("--header").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.trim_start().starts_with("Boot Index"))?;
    line.split_whitespace().last()?.parse().ok().filter(|&n| n > 0)
}

/// WinPE's start-up script: networking up, the share mapped, Setup run with this machine's
/// answer file (by the MAC `getmac` reports, as the share names them).
pub fn startnet_cmd(addr: Ipv4Addr, name: &str) -> String {
    format!(
        "@echo off\r\n\
         rem rackboot: put here by `rackboot windows import {name}`.\r\n\
         wpeinit\r\n\
         net use R: \\\\{addr}\\rackboot\r\n\
         for /f \"tokens=1 delims=,\" %%m in ('getmac /nh /fo csv') do (set MAC=%%~m& goto mapped)\r\n\
         :mapped\r\n\
         R:\\{name}\\setup.exe /unattend:R:\\unattend\\%MAC%.xml\r\n"
    )
}

fn inject_startnet(wim: &Path, script: &str) -> anyhow::Result<()> {
    let index = boot_index(wim).unwrap_or(1).to_string();
    let dir = tempfile_dir(wim)?;
    let file = dir.join("startnet.cmd");
    std::fs::write(&file, script)?;
    let cmd = format!("add '{}' /Windows/System32/startnet.cmd", file.display());
    let out = Command::new("wimupdate").arg(wim).arg(&index).arg(format!("--command={cmd}")).output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.context("running wimupdate")?;
    anyhow::ensure!(
        out.status.success(),
        "wimupdate could not add startnet.cmd to boot.wim: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

fn tempfile_dir(beside: &Path) -> anyhow::Result<PathBuf> {
    let dir = beside.with_extension(format!("startnet-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// The media imported so far, by their manifests.
pub fn list(root: &Path) -> Vec<Manifest> {
    let Ok(dir) = std::fs::read_dir(root.join(DIR)) else { return Vec::new() };
    let mut out: Vec<Manifest> = dir
        .flatten()
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
