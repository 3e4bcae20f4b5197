//! What an import does inside `boot.wim`, with wimlib's tools (Debian's `wimtools`): take
//! WinPE's boot manager out, and put in the start-up that maps the share and runs Setup.

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;

use super::BOOTMGR;

/// Where WinPE keeps its boot manager, inside `boot.wim`.
const WIM_BOOTMGR: &str = "/Windows/Boot/EFI/bootmgfw.efi";

/// The largest boot manager taken from a WIM (Windows' is about 3 MB).
pub const MAX_BOOTMGR: u64 = 64 << 20;

/// Whether `p` is a regular file itself (not a link to one) of at most `max` bytes.
pub fn regular_file(p: &Path, max: u64) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file() && m.len() <= max)
}

/// Whether `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(tool).is_file()))
}

/// Puts the boot manager at the media's top (`dir`): the one already there, else WinPE's own
/// from `wim`, else the media's removable-boot copy (`efi/boot/bootx64.efi`, also bootmgfw).
pub fn place_bootmgr(dir: &Path, wim: &Path) -> anyhow::Result<String> {
    let target = dir.join(BOOTMGR);
    if target.is_file() {
        return Ok("the media's top".into());
    }
    if have("wimextract") {
        let index = boot_index(wim).unwrap_or(1).to_string();
        let out = Command::new("wimextract")
            .arg(wim)
            .args([index.as_str(), WIM_BOOTMGR, "--no-acls", "--dest-dir"])
            .arg(dir)
            .output()
            .context("running wimextract")?;
        if out.status.success() && regular_file(&target, MAX_BOOTMGR) {
            return Ok(format!("boot.wim image {index}"));
        }
        // A WIM is the media's word: what it put there (a link to an appliance file, a tree, a
        // file too large to be a boot manager) is not served.
        let _ = std::fs::remove_file(&target).or_else(|_| std::fs::remove_dir_all(&target));
    }
    let removable = dir.join("efi/boot/bootx64.efi");
    anyhow::ensure!(
        removable.is_file(),
        "the media has no {BOOTMGR}: not at its top, not in boot.wim ({WIM_BOOTMGR}), no efi/boot/bootx64.efi"
    );
    std::fs::copy(&removable, &target)?;
    Ok("efi/boot/bootx64.efi".into())
}

/// The WIM's bootable image (`Boot Index` in `wiminfo`), when it names one.
pub fn boot_index(wim: &Path) -> Option<u32> {
    let out = Command::new("wiminfo").arg(wim).arg("--header").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.trim_start().starts_with("Boot Index"))?;
    line.split_whitespace().last()?.parse().ok().filter(|&n| n > 0)
}

/// WinPE's start-up script: networking up, the share mapped, Setup run with this machine's
/// answer file. The answer files are named by MAC as `getmac` prints them; a server has several
/// NICs, so the first MAC that has one is this machine's.
pub fn startnet_cmd(addr: Ipv4Addr, name: &str) -> String {
    format!(
        "@echo off\r\n\
         rem rackboot: put here by `rackboot windows import {name}`.\r\n\
         wpeinit\r\n\
         net use R: \\\\{addr}\\rackboot\r\n\
         for /f \"tokens=1 delims=,\" %%m in ('getmac /nh /fo csv') do (if exist R:\\unattend\\%%~m.xml (set MAC=%%~m& goto mapped))\r\n\
         echo rackboot: no answer file on \\\\{addr}\\rackboot\\unattend for this machine's MACs\r\n\
         goto :eof\r\n\
         :mapped\r\n\
         R:\\{name}\\setup.exe /unattend:R:\\unattend\\%MAC%.xml\r\n"
    )
}

/// WinPE's shell launcher: with it, WinPE runs `startnet.cmd` even in a Setup image (whose
/// `X:\setup.exe` would otherwise start, interactively).
pub const WINPESHL_INI: &str =
    "[LaunchApps]\r\n%SYSTEMROOT%\\System32\\cmd.exe, /c %SYSTEMROOT%\\System32\\startnet.cmd\r\n";

/// Puts `startnet` and [`WINPESHL_INI`] into the bootable image of `wim`.
pub fn inject_startup(wim: &Path, startnet: &str) -> anyhow::Result<()> {
    let index = boot_index(wim).unwrap_or(1).to_string();
    let dir = wim.with_extension(format!("startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let run = || -> anyhow::Result<()> {
        std::fs::write(dir.join("startnet.cmd"), startnet)?;
        std::fs::write(dir.join("winpeshl.ini"), WINPESHL_INI)?;
        // Commands on stdin, one per line (wimupdate's own syntax; paths in double quotes).
        let commands = format!(
            "add \"{d}/startnet.cmd\" /Windows/System32/startnet.cmd\nadd \"{d}/winpeshl.ini\" /Windows/System32/winpeshl.ini\n",
            d = dir.display()
        );
        let mut child = Command::new("wimupdate")
            .arg(wim)
            .arg(&index)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("running wimupdate")?;
        child.stdin.take().context("wimupdate's stdin")?.write_all(commands.as_bytes())?;
        let out = child.wait_with_output()?;
        anyhow::ensure!(
            out.status.success(),
            "wimupdate could not add WinPE's start-up to boot.wim: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(())
    };
    let done = run();
    let _ = std::fs::remove_dir_all(&dir);
    done
}
