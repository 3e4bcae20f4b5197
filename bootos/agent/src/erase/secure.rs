//! What needs the device's own commands: discard (`BLKDISCARD`), re-reading the partition
//! table (`BLKRRPART`), and secure erase: NVMe Format NVM with user-data erase (through the
//! kernel's admin passthrough, no nvme-cli needed), or ATA Security Erase through hdparm.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

use super::{Kind, Target};

nix::ioctl_write_ptr_bad!(blk_discard, nix::request_code_none!(0x12, 119), [u64; 2]);
nix::ioctl_none!(blk_rrpart, 0x12, 95);
nix::ioctl_none!(nvme_ns_id, b'N', 0x40);
nix::ioctl_readwrite!(nvme_admin, b'N', 0x41, AdminCmd);

/// `struct nvme_passthru_cmd` (linux/nvme_ioctl.h).
#[repr(C)]
#[derive(Default)]
pub struct AdminCmd {
    opcode: u8,
    flags: u8,
    rsvd1: u16,
    nsid: u32,
    cdw2: u32,
    cdw3: u32,
    metadata: u64,
    addr: u64,
    metadata_len: u32,
    data_len: u32,
    cdw10: u32,
    cdw11: u32,
    cdw12: u32,
    cdw13: u32,
    cdw14: u32,
    cdw15: u32,
    timeout_ms: u32,
    result: u32,
}

const IDENTIFY: u8 = 0x06;
const FORMAT_NVM: u8 = 0x80;

/// Discards the whole device.
pub fn discard(f: &File, size: u64) -> nix::Result<()> {
    // SAFETY: BLKDISCARD reads two u64 (offset, length) from the pointer, which outlives the call.
    unsafe { blk_discard(f.as_raw_fd(), &[0, size]) }.map(|_| ())
}

/// Asks the kernel to read the partition table again (a plain file or a busy disk: ignored).
pub fn reread_partitions(f: &File) {
    // SAFETY: BLKRRPART takes no argument.
    let _ = unsafe { blk_rrpart(f.as_raw_fd()) };
}

/// Whether `t` can erase itself; why not otherwise.
pub fn check(t: &Target) -> Result<(), String> {
    match &t.kind {
        Kind::Nvme => {
            let f = File::open(&t.path).map_err(|e| e.to_string())?;
            let ctrl = identify(&f, 0, 1)?;
            // OACS bit 1: Format NVM is supported.
            if ctrl[256] & 0b10 == 0 {
                return Err("the NVMe controller does not support Format NVM".into());
            }
            Ok(())
        }
        Kind::Ata => {
            let info = hdparm_info(&t.path)?;
            ata_ready(&info)
        }
        Kind::Other(transport) => Err(format!(
            "a {transport} disk has neither NVMe Format nor ATA Security Erase; use zero (every byte written)"
        )),
    }
}

/// Carries the secure erase out; what was done.
pub fn erase(f: &File, t: &Target) -> Result<String, String> {
    match &t.kind {
        Kind::Nvme => {
            let fd = f.as_raw_fd();
            // SAFETY: NVME_IOCTL_ID takes no argument and returns the namespace id.
            let nsid = unsafe { nvme_ns_id(fd) }.map_err(|e| format!("namespace id: {e}"))? as u32;
            let ns = identify(f, nsid, 0)?;
            // FLBAS: the format in use (bits 3:0, and 6:5 above 16 formats): kept as it is.
            let lbaf = u32::from(ns[26] & 0x0f) | (u32::from(ns[26] & 0x60) >> 1);
            let mut cmd = AdminCmd { opcode: FORMAT_NVM, nsid, cdw10: lbaf | (1 << 9), ..Default::default() };
            cmd.timeout_ms = 3_600_000;
            // SAFETY: the command struct is the kernel's layout and lives across the call.
            unsafe { nvme_admin(fd, &mut cmd) }.map_err(|e| format!("NVMe Format NVM: {e}"))?;
            Ok(format!("NVMe Format NVM (user-data erase) of namespace {nsid}"))
        }
        Kind::Ata => {
            let dev = t.path.to_string_lossy();
            // A throwaway password: set, then used by the erase, which clears it again.
            let pass = "rackboot-erase";
            hdparm(&["--user-master", "u", "--security-set-pass", pass, &dev])?;
            hdparm(&["--user-master", "u", "--security-erase", pass, &dev])?;
            Ok("ATA Security Erase".into())
        }
        Kind::Other(t) => Err(format!("a {t} disk cannot erase itself")),
    }
}

/// NVMe Identify (`cns` 1: the controller, 0: namespace `nsid`): its 4 KiB answer.
fn identify(f: &File, nsid: u32, cns: u32) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; 4096];
    let mut cmd = AdminCmd {
        opcode: IDENTIFY,
        nsid,
        addr: buf.as_mut_ptr() as u64,
        data_len: buf.len() as u32,
        cdw10: cns,
        ..Default::default()
    };
    // SAFETY: the kernel writes at most data_len bytes to addr, a buffer that outlives the call.
    unsafe { nvme_admin(f.as_raw_fd(), &mut cmd) }.map_err(|e| format!("NVMe Identify: {e}"))?;
    Ok(buf)
}

fn hdparm(args: &[&str]) -> Result<String, String> {
    let out =
        Command::new("hdparm").args(args).output().map_err(|e| format!("hdparm: {e} (it is not in this BootOS)"))?;
    if !out.status.success() {
        return Err(format!("hdparm {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn hdparm_info(dev: &std::path::Path) -> Result<String, String> {
    hdparm(&["-I", &dev.to_string_lossy()])
}

/// Whether `hdparm -I`'s Security section allows an erase now.
pub fn ata_ready(info: &str) -> Result<(), String> {
    let Some(sec) = info.split("Security:").nth(1) else {
        return Err("the disk does not report the ATA security feature set".into());
    };
    let sec: String = sec.lines().take(8).collect::<Vec<_>>().join("\n");
    let says = |word: &str, negated: bool| {
        sec.lines().any(|l| {
            let l = l.trim();
            l.ends_with(word) && l.starts_with("not") == negated
        })
    };
    if !says("supported", false) {
        return Err("the disk does not support ATA security".into());
    }
    if says("frozen", false) {
        return Err("the disk's security is frozen (the firmware froze it at boot; a suspend and resume, or a hot-plug, unfreezes it)".into());
    }
    if says("enabled", false) || says("locked", false) {
        return Err("the disk already has a security password set".into());
    }
    Ok(())
}
