//! Day two on the VMs `provision` installed, both at once: the SeaBIOS VM is rescued (BootOS,
//! its layout's file systems mounted read-only from the RAID and LVM), returned to its disk (its
//! installed agent checks in, and cloud-init does not run again on that boot), then released
//! with a quick erase; the OVMF VM is released with a zero erase, rebooted into BootOS through
//! its BMC (or its installed agent). Both end `ready`, their reservations dropped, and their
//! disk files, read from the host, hold no partition table and no file-system signature where
//! the partitions were, and (zeroed) nothing but zeros.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::provision::{job_output, job_output_within};
use crate::netns::libvirt::Libvirt;
use crate::netns::{wait_for, Net};

/// Test profiles: one a lab VM passes, one whose read floor no disk reaches.
pub(super) const TEST_PROFILES: &str = "[[provision.test_profiles]]\nname = \"lab\"\ncpu_secs = 3\nmemory_mib = 16\ndisk_secs = 2\nmin_read_mbps = 1\nsmart = true\nnetwork_secs = 2\nmin_network_mbps = 1\n[[provision.test_profiles]]\nname = \"too-much\"\ndisk_secs = 1\nmin_read_mbps = 1000000\n";

pub(super) struct Vm<'a> {
    pub name: &'a str,
    pub mac: &'a str,
}

/// The disk files of VM `name`.
fn disk_files(net: &Net, lab: Option<&Libvirt>, name: &str) -> Vec<PathBuf> {
    let n = super::layout::DISKS.len();
    match lab {
        Some(lab) => lab.disk_files(name, n),
        None => net.disk_files(name, n),
    }
}

/// The partitions of a disk file (offset and length in bytes), as sfdisk reads them.
fn partitions(file: &Path) -> Vec<(u64, u64)> {
    let out = Command::new("sfdisk").arg("-J").arg(file).output().unwrap();
    let Ok(table) = serde_json::from_slice::<Value>(&out.stdout) else { return vec![] };
    let parts = table["partitiontable"]["partitions"].as_array().cloned().unwrap_or_default();
    parts.iter().map(|p| (p["start"].as_u64().unwrap() * 512, p["size"].as_u64().unwrap() * 512)).collect()
}

/// What `blkid -p` finds at `offset` of `file` (empty: nothing).
fn signature(file: &Path, offset: u64) -> String {
    let out = Command::new("blkid").args(["-p", "-O", &offset.to_string()]).arg(file).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether `len` bytes of `file` from `offset` are all zeros (cmp against /dev/zero).
fn zeros(file: &Path, offset: u64, len: u64) -> bool {
    let cmd = format!("tail -c +{} '{}' | cmp -s -n {len} - /dev/zero", offset + 1, file.display());
    Command::new("sh").args(["-c", &cmd]).status().unwrap().success()
}

fn post(net: &Net, path: &str, body: &str) -> Value {
    net.api("POST", path, Some(body))
}

/// Waits until task `id`'s run satisfies `pred`; returns it.
fn run_where(net: &Net, id: u64, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_for(
        secs,
        || format!("task {id}: {what}: {}", net.api("GET", &format!("/tasks/{id}"), None)["runs"][0]),
        || {
            let run = net.api("GET", &format!("/tasks/{id}"), None)["runs"][0].clone();
            pred(&run).then_some(run)
        },
    )
}

/// `first_boot`: the SeaBIOS VM's cloud-init status from its first boot (`provision`'s `cloud`).
pub(super) fn check(net: &Net, lab: Option<&Libvirt>, bios: Vm, uefi: Vm, cloud: &str, first_boot: &str) {
    let files = |vm: &Vm| disk_files(net, lab, vm.name);
    // Where the partitions were: their signatures must be gone after the erase.
    let before: Vec<(PathBuf, Vec<(u64, u64)>)> =
        files(&bios).into_iter().map(|f| (f.clone(), partitions(&f))).collect();
    assert!(before[0].1.len() >= 3, "the installed vda has its partitions: {before:?}");
    assert!(!signature(&before[0].0, before[0].1[2].0).is_empty(), "vda3 is a RAID member before the erase");

    let zero = post(net, &format!("/machines/{}/release", uefi.mac), r#"{"erase":"zero"}"#);
    let zero_task = zero["id"].as_u64().unwrap_or_else(|| panic!("{zero}"));
    let rescue = post(net, &format!("/machines/{}/rescue", bios.mac), r#"{"mount":true}"#);
    let rescue_task = rescue["id"].as_u64().unwrap_or_else(|| panic!("{rescue}"));
    run_where(net, rescue_task, 600, "rescued", |r| r["step"]["step"] == "rescued" || r["state"] != "active");
    super::mark("day two: the SeaBIOS VM rescued");
    let m = net.api("GET", &format!("/machines/{}", bios.mac), None);
    assert_eq!(m["state"], "rescue", "{m}");
    let seen = job_output(
        net,
        bios.mac,
        "[ -e /etc/os-release ] && echo system: installed || echo system: bootos; cat /proc/mdstat; grep /mnt/rescue /proc/mounts; cat /mnt/rescue/rackboot-root/etc/hostname; \
         ls /mnt/rescue/rackboot-srv_data >/dev/null && echo data: there; \
         touch /mnt/rescue/rackboot-root/x 2>/dev/null || echo root: read-only",
    );
    eprintln!("bios: in rescue:\n{seen}");
    assert!(seen.starts_with("system: bootos\n"), "the job ran in BootOS: {seen}");
    assert!(seen.contains("/mnt/rescue/rackboot-root ext4 ro,"), "{seen}");
    assert!(seen.contains("/mnt/rescue/rackboot-srv_data xfs ro,"), "{seen}");
    assert!(seen.contains("\nnode-01\n") && seen.contains("data: there") && seen.contains("root: read-only"), "{seen}");

    // Back to its disk: the rescue's run reboots it there and ends when its agent checks in.
    post(net, &format!("/machines/{}/return", bios.mac), "{}");
    let run = run_where(net, rescue_task, 900, "returned", |r| r["state"] != "active");
    assert_eq!(run["state"], "done", "{run}");
    super::mark("day two: the SeaBIOS VM back on its disk");
    let out = job_output_within(net, bios.mac, cloud, 600);
    eprintln!("bios: cloud-init after the rescue's return:\n{out}");
    assert!(out.contains("status: done") && out.contains("runs=1"), "not run again on a later boot: {out}");
    let boot = |text: &str| text.lines().find_map(|l| l.strip_prefix("boot=")).unwrap_or_default().to_string();
    assert_ne!(boot(&out), boot(first_boot), "the machine rebooted: {out}");

    let quick = post(net, &format!("/machines/{}/release", bios.mac), r#"{"erase":"quick"}"#);
    let quick_task = quick["id"].as_u64().unwrap_or_else(|| panic!("{quick}"));
    for (vm, task) in [(&bios, quick_task), (&uefi, zero_task)] {
        let run = run_where(net, task, 900, "released", |r| r["state"] != "active");
        let m = net.api("GET", &format!("/machines/{}", vm.mac), None);
        let jobs = net.api("GET", &format!("/jobs?machine={}&limit=1000", vm.mac), None);
        let erase = jobs["jobs"].as_array().unwrap().iter().find(|j| j["action"]["kind"] == "erase").unwrap().clone();
        let out =
            net.api("GET", &format!("/jobs/{}/output", erase["id"]), None)["text"].as_str().unwrap_or("").to_string();
        eprintln!("{}: erase ({}):\n{out}", vm.name, erase["action"]["mode"]);
        assert_eq!(run["state"], "done", "{}: {run}", vm.name);
        assert_eq!((m["state"].as_str(), &m["reserved_ip"]), (Some("ready"), &Value::Null), "{}: {m}", vm.name);
        assert_eq!(
            erase["action"]["disks"].as_array().unwrap().len(),
            super::layout::DISKS.len(),
            "every disk: {erase}"
        );
        assert!(out.contains("erase: 100%"), "{out}");
        // virtio-blk takes WRITE ZEROES: the agent asks the disk instead of writing the zeros.
        assert!(
            out.contains("(zero-out: ") && !out.contains("(written)"),
            "every disk zeroed through the zero-out: {out}"
        );
        let agent = net.api("GET", &format!("/machines/{}/agent", vm.mac), None);
        assert_eq!(agent["mode"], "bootos", "the installed credential was superseded: {agent}");
    }
    super::mark("day two: both released");
    // Read from the host: no table, no signature where the partitions were.
    for (file, parts) in &before {
        assert_eq!(signature(file, 0), "", "{}: a signature is left", file.display());
        assert!(partitions(file).is_empty(), "{}: a partition table is left", file.display());
        for (offset, _) in parts {
            assert_eq!(signature(file, *offset), "", "{} at {offset}: a signature is left", file.display());
        }
        let size = std::fs::metadata(file).unwrap().len();
        let edge = (64 << 20).min(size);
        assert!(zeros(file, 0, edge) && zeros(file, size - edge, edge), "{}: the ends are not zeroed", file.display());
    }
    for file in files(&uefi) {
        let size = std::fs::metadata(&file).unwrap().len();
        assert!(zeros(&file, 0, size), "{}: not every byte is zero", file.display());
    }

    // Commissioned where they are (BootOS, ready): the SeaBIOS VM passes, the OVMF VM fails
    // the floor no disk reaches, with its figure shown.
    let pass = post(net, &format!("/machines/{}/commission", bios.mac), r#"{"profile":"lab"}"#);
    let fail = post(net, &format!("/machines/{}/commission", uefi.mac), r#"{"profile":"too-much"}"#);
    for (vm, task, want) in [(&bios, &pass, "done"), (&uefi, &fail, "failed")] {
        let id = task["id"].as_u64().unwrap_or_else(|| panic!("{task}"));
        let run = run_where(net, id, 900, "commissioned", |r| r["state"] != "active");
        let tests = net.api("GET", &format!("/machines/{}/tests", vm.mac), None);
        eprintln!("{}: commissioning: {}", vm.name, serde_json::to_string_pretty(&tests["runs"][0]).unwrap());
        assert_eq!(run["state"], want, "{}: {run}", vm.name);
        let results = tests["runs"][0]["tests"].as_array().unwrap().clone();
        let named = |n: &str| results.iter().find(|t| t["name"] == n).cloned().unwrap_or_default();
        let read = named("disk-read:vda");
        assert!(read["figure"].as_f64().is_some_and(|v| v > 0.0), "{}: {read}", vm.name);
        let state = net.api("GET", &format!("/machines/{}", vm.mac), None)["state"].clone();
        if want == "done" {
            assert!(results.iter().all(|t| t["passed"] == true), "{}: {results:?}", vm.name);
            for n in ["cpu", "memory", "disk-write:vda", "disk-iops:vdb", "smart:vde"] {
                assert!(named(n).is_object(), "{}: no {n}: {results:?}", vm.name);
            }
            // iperf3 to the appliance's server, both ways.
            for n in ["network-tx", "network-rx"] {
                assert!(named(n)["figure"].as_f64().is_some_and(|v| v >= 1.0), "{}: {n}: {results:?}", vm.name);
            }
            assert_eq!(state, "ready");
        } else {
            assert_eq!(read["passed"], false, "{read}");
            let error = run["error"].as_str().unwrap_or_default();
            assert!(error.contains("disk-read:vda") && error.contains("below the floor of 1000000"), "{error}");
            assert_eq!(state, "failed");
        }
    }
}
