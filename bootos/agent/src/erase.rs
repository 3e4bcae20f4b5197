//! The built-in `erase` action: a released machine's disks wiped before it changes hands.
//!
//! Every disk is looked at before any is touched ([`plan`]): it must be a block device under
//! `/dev` that nothing but a rescue's read-only mount holds, and for `secure` the device must
//! be able to erase itself. Only then does the writing start, disk after disk, with a progress
//! line (`erase: NN% ...`) about every 2 s, which the appliance turns into the run's progress.
//!
//! - `quick`: the whole disk is discarded where it supports that; then the first and last
//!   4 MiB of every partition (where file systems, RAID and LVM keep their signatures) and
//!   64 MiB of each end of the disk (the partition tables, both GPT copies) are zeroed.
//! - `zero`: every byte is overwritten, synced every GiB so progress is what reached the disk.
//!
//! Zeroing (`zero`, and `quick`'s regions) asks the disk to do it, piece by piece:
//! `fallocate(FALLOC_FL_ZERO_RANGE)` on a block device is the kernel's zero-out without
//! unmapping, a WRITE ZEROES to NVMe, SCSI and virtio-blk disks (or zero pages the kernel writes
//! itself where a disk has no such command); every byte reads back as zero either way, as after
//! writing them. Where the call is refused, the zeros are written from user space from then on.
//! - `secure`: see [`secure`]: NVMe Format (user-data erase) or ATA Security Erase.
//!
//! Afterwards the kernel is asked to re-read each disk's (now empty) partition table.

mod secure;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::jobs::Sink;
use crate::wire::{EraseMode, JobResult, JobSpec, Outcome, Stream};

/// Zeroed at each end of every partition.
const PART_EDGE: u64 = 4 << 20;
/// Zeroed at each end of the disk.
const DISK_EDGE: u64 = 64 << 20;
/// Writes of this size.
const CHUNK: usize = 4 << 20;
/// Pieces the disk is asked to zero itself: large, as the disk's own command is quick, but
/// small enough for progress lines and a cancel to come between them.
const ZERO_PIECE: u64 = 64 << 20;
/// A `zero` erase syncs this often.
const SYNC_EVERY: u64 = 1 << 30;

/// What kind of device a disk is, for `secure`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Nvme,
    Ata,
    /// Anything else, by the transport its sysfs path shows (virtio, usb, scsi, ...).
    Other(String),
}

/// A disk to erase, as [`plan`] found it.
#[derive(Debug, Clone)]
pub struct Target {
    pub path: PathBuf,
    pub size: u64,
    pub kind: Kind,
    /// Its partitions' (offset, length) in bytes.
    pub partitions: Vec<(u64, u64)>,
    pub discard: bool,
}

/// Where the kernel's views are (`/sys` and `/proc/mounts`; elsewhere in tests).
pub struct System {
    pub sys: PathBuf,
    pub mounts: PathBuf,
}

impl Default for System {
    fn default() -> System {
        System { sys: "/sys".into(), mounts: "/proc/mounts".into() }
    }
}

impl System {
    fn block(&self, name: &str) -> PathBuf {
        self.sys.join("class/block").join(name)
    }

    fn read_u64(&self, path: &Path) -> Option<u64> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    /// The disk's partitions (kernel name, offset, length in bytes).
    fn partitions(&self, name: &str) -> Vec<(String, u64, u64)> {
        let Ok(dir) = std::fs::read_dir(self.block(name)) else { return vec![] };
        let mut parts: Vec<_> = dir
            .flatten()
            .filter(|e| e.path().join("partition").exists())
            .filter_map(|e| {
                let p = e.path();
                let (start, size) = (self.read_u64(&p.join("start"))?, self.read_u64(&p.join("size"))?);
                Some((e.file_name().to_string_lossy().into_owned(), start * 512, size * 512))
            })
            .collect();
        parts.sort_by_key(|p| p.1);
        parts
    }

    /// What holds the device (md, device mapper), by kernel name.
    fn holders(&self, name: &str) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(self.block(name).join("holders")) else { return vec![] };
        dir.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    }

    fn kind(&self, name: &str) -> Kind {
        let real = std::fs::canonicalize(self.block(name)).unwrap_or_default().to_string_lossy().into_owned();
        if name.starts_with("nvme") || real.contains("/nvme/") {
            return Kind::Nvme;
        }
        if real.contains("/ata") {
            return Kind::Ata;
        }
        let transport = ["virtio", "usb", "mmc", "scsi", "xen"].into_iter().find(|t| real.contains(t));
        Kind::Other(transport.unwrap_or("unknown").to_string())
    }

    /// Mount points of the device or its partitions.
    fn mounted(&self, names: &[String]) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(&self.mounts).unwrap_or_default();
        text.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (src, at) = (f.next()?, f.next()?);
                let dev = src.strip_prefix("/dev/")?;
                names.iter().any(|n| n == dev).then(|| (dev.to_string(), at.replace("\\040", " ")))
            })
            .collect()
    }
}

/// Checks every disk and finds what the erase needs to know; fails naming the first disk that
/// cannot be erased as asked, before anything is written.
pub fn plan(sys: &System, disks: &[String], mode: EraseMode) -> Result<Vec<Target>, String> {
    if disks.is_empty() {
        return Err("no disk to erase: the inventory lists none".into());
    }
    let mut targets = Vec::new();
    for disk in disks {
        let name = disk.strip_prefix("/dev/").filter(|n| !n.is_empty() && !n.contains(['/', '.']));
        let Some(name) = name else { return Err(format!("{disk}: not a disk under /dev")) };
        let meta = std::fs::metadata(disk).map_err(|e| format!("{disk}: {e}"))?;
        if !meta.file_type().is_block_device() {
            return Err(format!("{disk}: not a block device"));
        }
        let parts = sys.partitions(name);
        let mut names: Vec<String> = parts.iter().map(|p| p.0.clone()).collect();
        names.push(name.to_string());
        if let Some((dev, at)) = sys.mounted(&names).first() {
            return Err(format!("{disk}: /dev/{dev} is mounted at {at}"));
        }
        if let Some(h) = names.iter().flat_map(|n| sys.holders(n)).next() {
            return Err(format!("{disk}: held by {h} (a RAID or LVM volume that could not be stopped)"));
        }
        let mut f = File::open(disk).map_err(|e| format!("{disk}: {e}"))?;
        let size = f.seek(SeekFrom::End(0)).map_err(|e| format!("{disk}: size: {e}"))?;
        let discard = sys.read_u64(&sys.block(name).join("queue/discard_max_bytes")).unwrap_or(0) > 0;
        let kind = sys.kind(name);
        let t =
            Target { path: disk.into(), size, kind, partitions: parts.iter().map(|p| (p.1, p.2)).collect(), discard };
        if mode == EraseMode::Secure {
            secure::check(&t).map_err(|why| format!("{disk}: secure erase: {why}"))?;
        }
        targets.push(t);
    }
    Ok(targets)
}

/// The byte ranges a quick erase zeroes, in order, overlaps merged.
pub fn quick_regions(t: &Target) -> Vec<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = Vec::new();
    let mut edge = |start: u64, len: u64, edge: u64| {
        let end = (start + len).min(t.size);
        let first = (start, (start + edge).min(end));
        let last = (end.saturating_sub(edge).max(start), end);
        r.extend([first, last].into_iter().filter(|(a, b)| a < b));
    };
    edge(0, t.size, DISK_EDGE);
    for &(start, len) in &t.partitions {
        edge(start, len, PART_EDGE);
    }
    r.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in r {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Progress as the writing thread reports it.
pub struct Progress {
    pub tx: mpsc::UnboundedSender<String>,
    pub stop: Arc<AtomicBool>,
    /// Bytes this erase writes in all, and written so far (over every disk).
    pub total: u64,
    pub done: u64,
    pub started: Instant,
    pub next: Instant,
}

impl Progress {
    fn add(&mut self, bytes: u64, disk: &Path) -> Result<(), String> {
        self.done += bytes;
        if Instant::now() >= self.next {
            let pct = self.done * 100 / self.total.max(1);
            let rate = self.done as f64 / self.started.elapsed().as_secs_f64().max(0.001) / 1e6;
            let _ = self.tx.send(format!(
                "erase: {pct}% {} of {} bytes, {rate:.1} MB/s ({})\n",
                self.done,
                self.total,
                disk.display()
            ));
            self.next = Instant::now() + Duration::from_secs(2);
        }
        self.check()
    }

    /// Fails once the operator has cancelled the job.
    fn check(&self) -> Result<(), String> {
        if self.stop.load(Ordering::Relaxed) {
            return Err("cancelled by the operator".into());
        }
        Ok(())
    }
}

/// How one disk takes its zeros.
struct Zeroing {
    /// Whether the disk is still asked to zero ranges itself (false once it refused).
    by_disk: bool,
    /// Bytes zeroed through the kernel's zero-out (the disk's own command, where it has one).
    zeroed_by_disk: u64,
}

/// Zeros `[start, end)` of `f`: asked of the disk piece by piece (see the module's text), written
/// where it refuses.
fn zero_range(
    f: &File,
    path: &Path,
    (start, end): (u64, u64),
    z: &mut Zeroing,
    p: &mut Progress,
    sync: bool,
) -> Result<(), String> {
    let mut buf = Vec::new();
    let io = |e: std::io::Error, at: u64| format!("{}: writing at byte {at}: {e}", path.display());
    let (mut at, mut since_sync) = (start, 0u64);
    while at < end {
        p.check()?;
        let n = if z.by_disk { (end - at).min(ZERO_PIECE) } else { (end - at).min(CHUNK as u64) };
        if z.by_disk {
            match nix::fcntl::fallocate(f, nix::fcntl::FallocateFlags::FALLOC_FL_ZERO_RANGE, at as i64, n as i64) {
                Ok(()) => z.zeroed_by_disk += n,
                Err(e) => {
                    tracing::debug!(disk = %path.display(), error = %e, "the disk does not zero ranges: writing its zeros");
                    z.by_disk = false;
                    continue;
                }
            }
        } else {
            buf.resize(CHUNK, 0);
            f.write_all_at(&buf[..n as usize], at).map_err(|e| io(e, at))?;
        }
        at += n;
        since_sync += n;
        if sync && since_sync >= SYNC_EVERY {
            f.sync_data().map_err(|e| io(e, at))?;
            since_sync = 0;
        }
        p.add(n, path)?;
    }
    Ok(())
}

/// Bytes `mode` writes to the targets (0 for secure: the device does the work).
pub fn bytes_to_write(targets: &[Target], mode: EraseMode) -> u64 {
    match mode {
        EraseMode::Quick => targets.iter().map(|t| quick_regions(t).iter().map(|(a, b)| b - a).sum::<u64>()).sum(),
        EraseMode::Zero => targets.iter().map(|t| t.size).sum(),
        _ => 0,
    }
}

/// Erases one disk (on the writing thread).
pub fn erase_one(t: &Target, mode: EraseMode, p: &mut Progress) -> Result<String, String> {
    let path = t.path.as_path();
    let f = std::fs::OpenOptions::new().write(true).open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut z = Zeroing { by_disk: true, zeroed_by_disk: 0 };
    let how = match mode {
        EraseMode::None => return Ok(format!("{}: left as it is", path.display())),
        EraseMode::Quick => {
            let discarded = t.discard && secure::discard(&f, t.size).is_ok();
            for region in quick_regions(t) {
                zero_range(&f, path, region, &mut z, p, false)?;
            }
            let parts = t.partitions.len();
            format!(
                "{parts} partitions' ends and the disk's zeroed{}{}",
                by_disk(&z),
                if discarded { ", whole disk discarded" } else { "" }
            )
        }
        EraseMode::Zero => {
            zero_range(&f, path, (0, t.size), &mut z, p, true)?;
            format!("{} bytes zeroed{}", t.size, by_disk(&z))
        }
        EraseMode::Secure => secure::erase(&f, t)?,
    };
    f.sync_all().map_err(|e| format!("{}: sync: {e}", path.display()))?;
    secure::reread_partitions(&f);
    Ok(format!("{}: {how}", path.display()))
}

/// How the zeros got there, for the disk's line.
fn by_disk(z: &Zeroing) -> String {
    match (z.zeroed_by_disk, z.by_disk) {
        (0, _) => " (written)".into(),
        (n, true) => format!(" (zero-out: {n} bytes)"),
        (n, false) => format!(" (zero-out: {n} bytes; the rest written)"),
    }
}

/// Stops RAID arrays and LVM volume groups BootOS may have started (a layout's, a rescue's), so
/// their disks are free; best effort: [`plan`] says what still holds a disk.
fn release_holders() {
    let quiet = |cmd: &mut std::process::Command| {
        let _ = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    };
    quiet(std::process::Command::new("lvm").args(["vgchange", "-an"]));
    quiet(std::process::Command::new("mdadm").args(["--stop", "--scan"]));
}

/// Unmounts what a rescue mounted from the disks (read-only mounts under `/mnt/rescue`).
fn unmount_rescue(sys: &System) {
    let text = std::fs::read_to_string(&sys.mounts).unwrap_or_default();
    let mut points: Vec<&str> =
        text.lines().filter_map(|l| l.split_whitespace().nth(1)).filter(|p| p.starts_with("/mnt/rescue/")).collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for at in points {
        let _ = nix::mount::umount(at);
    }
}

/// Runs an erase job: plan, then each disk on a thread, progress forwarded as job output.
pub async fn erase(sink: &mut Sink<'_>, spec: &JobSpec, disks: &[String], mode: EraseMode) -> JobResult {
    let started = Instant::now();
    let done = |outcome, error: Option<String>| JobResult::ended(spec.attempt, started, outcome, error);
    let sys = System::default();
    unmount_rescue(&sys);
    release_holders();
    let targets = match plan(&sys, disks, mode) {
        Ok(t) => t,
        Err(why) => return done(Outcome::Failed, Some(why)),
    };
    let total = bytes_to_write(&targets, mode);
    let list: Vec<String> = targets.iter().map(|t| format!("{} ({} bytes)", t.path.display(), t.size)).collect();
    sink.send(Stream::Stdout, format!("erase: {} of {}: {total} bytes to write\n", mode.as_str(), list.join(", ")))
        .await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let stop = Arc::new(AtomicBool::new(false));
    let now = Instant::now();
    let mut progress =
        Progress { tx, stop: stop.clone(), total, done: 0, started: now, next: now + Duration::from_secs(2) };
    let worker = tokio::task::spawn_blocking(move || {
        for t in &targets {
            let line = erase_one(t, mode, &mut progress)?;
            let _ = progress.tx.send(format!("erase: {line}\n"));
        }
        Ok::<(), String>(())
    });
    while let Some(line) = rx.recv().await {
        sink.send(Stream::Stdout, line).await;
        if sink.stop {
            stop.store(true, Ordering::Relaxed);
        }
    }
    match worker.await {
        Ok(Ok(())) => {
            let secs = started.elapsed().as_secs_f64();
            sink.send(Stream::Stdout, format!("erase: 100% {total} bytes zeroed in {secs:.1} s\n")).await;
            JobResult { exit_code: Some(0), ..done(Outcome::Succeeded, None) }
        }
        Ok(Err(why)) if stop.load(Ordering::Relaxed) => done(Outcome::Cancelled, Some(why)),
        Ok(Err(why)) => done(Outcome::Failed, Some(why)),
        Err(e) => done(Outcome::Error, Some(format!("the erase thread: {e}"))),
    }
}
