//! Periodic node stats: load, memory, uptime, and use of every mounted block-device file system
//! (and `/`).

use std::path::Path;

use crate::inventory::meminfo;
use crate::wire::{DiskUse, Stats};

pub fn collect(root: &Path) -> Stats {
    let load = std::fs::read_to_string(root.join("proc/loadavg")).unwrap_or_default();
    let mut l = load.split_whitespace().map(|v| v.parse::<f64>().unwrap_or(0.0));
    let (mem_total_bytes, mem_available_bytes) = meminfo(root);
    let uptime = std::fs::read_to_string(root.join("proc/uptime")).unwrap_or_default();
    let uptime_secs = uptime.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) as u64;
    let mounts = std::fs::read_to_string(root.join("proc/mounts")).unwrap_or_default();
    Stats {
        load: [l.next().unwrap_or(0.0), l.next().unwrap_or(0.0), l.next().unwrap_or(0.0)],
        mem_total_bytes,
        mem_available_bytes,
        uptime_secs,
        disks: mount_points(&mounts).into_iter().filter_map(|m| usage(&m)).collect(),
    }
}

/// Mount points worth reporting: `/` and anything mounted from a block device, once each.
pub fn mount_points(proc_mounts: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in proc_mounts.lines() {
        let mut f = line.split_whitespace();
        let (Some(dev), Some(mount)) = (f.next(), f.next()) else { continue };
        if (mount == "/" || dev.starts_with("/dev/")) && !out.iter().any(|m| m == mount) {
            out.push(mount.replace("\\040", " "));
        }
    }
    out
}

fn usage(mount: &str) -> Option<DiskUse> {
    let st = nix::sys::statvfs::statvfs(mount).ok()?;
    let frag = st.fragment_size() as u64;
    let total = st.blocks() as u64 * frag;
    let free = st.blocks_free() as u64 * frag;
    Some(DiskUse { mount: mount.to_string(), total_bytes: total, used_bytes: total.saturating_sub(free) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_root_and_block_device_mounts_once() {
        let mounts = "rootfs / rootfs rw 0 0\nproc /proc proc rw 0 0\n/dev/vda1 /mnt/target ext4 rw 0 0\n/dev/vda1 /mnt/target ext4 rw 0 0\n/dev/md0 /srv\\040data xfs rw 0 0\ntmpfs /run tmpfs rw 0 0\n";
        assert_eq!(mount_points(mounts), ["/", "/mnt/target", "/srv data"]);
    }

    #[test]
    fn reads_load_memory_and_uptime() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("proc")).unwrap();
        std::fs::write(d.path().join("proc/loadavg"), "0.50 0.25 0.10 1/99 1234\n").unwrap();
        std::fs::write(d.path().join("proc/uptime"), "3600.52 7000.00\n").unwrap();
        std::fs::write(d.path().join("proc/meminfo"), "MemTotal: 1000 kB\nMemAvailable: 500 kB\n").unwrap();
        std::fs::write(d.path().join("proc/mounts"), "").unwrap();
        let s = collect(d.path());
        assert_eq!(s.load, [0.5, 0.25, 0.1]);
        assert_eq!((s.mem_total_bytes, s.mem_available_bytes, s.uptime_secs), (1_024_000, 512_000, 3600));
    }
}

/// What a process has used, from `/proc/<pid>` (zeros for a process that is gone).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcessUsage {
    /// User and system CPU time.
    pub cpu_secs: f64,
    pub rss_bytes: u64,
    /// The largest the resident set has been.
    pub peak_rss_bytes: u64,
}

/// CPU time and memory of process `pid` (the load tools report the servers' cost with it).
pub fn process_usage(pid: u32) -> ProcessUsage {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which may itself hold spaces and parentheses.
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<f64> = after.split_whitespace().map(|v| v.parse().unwrap_or(0.0)).collect();
    let ticks = f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| -> u64 {
        let line = status.lines().find_map(|l| l.strip_prefix(key));
        line.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0) * 1024
    };
    // USER_HZ is 100 on Linux.
    ProcessUsage { cpu_secs: ticks / 100.0, rss_bytes: kb("VmRSS:"), peak_rss_bytes: kb("VmHWM:") }
}
