//! What an interrupted run leaves behind is removed by the next one (tools/cleanup.sh, which
//! tools/test.sh runs before its stages and at its end), and nothing else is: a namespace and a
//! libvirt domain named as the tests name them, for a test process that is gone, and a
//! PostgreSQL cluster of one, go; an unrelated namespace, and this live test's own namespace and
//! domain, stay. In the vm lane: it defines libvirt domains.

use std::process::Command;

use crate::netns::libvirt::{self, Libvirt};
use crate::netns::{require, sh, Net};

const CLEANUP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/cleanup.sh");

fn virsh(args: &[&str]) -> std::process::Output {
    Command::new("virsh").args(["-q", "-c", "qemu:///system"]).args(args).output().unwrap()
}

fn define(name: &str) {
    let xml = format!(
        "<domain type='qemu'><name>{name}</name><memory unit='MiB'>64</memory>\
         <os><type arch='x86_64' machine='pc'>hvm</type></os></domain>"
    );
    let file = std::env::temp_dir().join(format!("{name}.xml"));
    std::fs::write(&file, xml).unwrap();
    let out = virsh(&["define", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "virsh define {name}: {}", String::from_utf8_lossy(&out.stderr));
}

fn namespaces() -> String {
    String::from_utf8_lossy(&sh("ip netns list").stdout).into_owned()
}

/// What this test made that cleanup must leave: removed however the test ends.
struct Kept(String, String);

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
        let _ = virsh(&["undefine", &self.1]);
    }
}

#[test]
#[ignore = "e2e: needs root, ip netns, libvirt, PostgreSQL"]
fn a_run_removes_what_a_dead_run_left_and_nothing_else() {
    require(&["ip", "virsh", "runuser"]);
    if let Some(what) = libvirt::missing() {
        eprintln!("SKIPPED: no {what}");
        return;
    }
    let net = Net::new("lo");
    let _libvirt = Libvirt::up(&net);
    // A PID no process has: the test process of the run that was cut off.
    let dead = (1_000_000..4_000_000).rev().find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()).unwrap();
    let me = std::process::id();
    let kept = Kept(format!("keep{me}-unrelated"), format!("rb{me}-live"));
    sh(&format!("ip netns add {}", kept.0));
    define(&kept.1);

    let stale_ns = format!("rbt{dead}-lo-srv");
    sh(&format!("ip netns add {stale_ns}"));
    let mut inside = Command::new("ip").args(["netns", "exec", &stale_ns, "sleep", "600"]).spawn().unwrap();
    let stale_dom = format!("rb{dead}-stale");
    define(&stale_dom);
    let stale_pg = format!("/tmp/rackboot-pg.{dead}.left");
    std::fs::create_dir_all(&stale_pg).unwrap();
    sh(&format!("chmod 755 {stale_pg}"));
    let started = Command::new("tests/pg/cluster.sh").args(["start", &stale_pg]).output().unwrap();
    let postmaster = started.status.success().then(|| {
        let pid = std::fs::read_to_string(format!("{stale_pg}/data/postmaster.pid")).unwrap();
        pid.lines().next().unwrap().to_string()
    });

    let out = Command::new(CLEANUP).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("removed network namespace {stale_ns} (processes: sleep x1)")), "{text}");
    assert!(text.contains(&format!("removed libvirt domain {stale_dom}")), "{text}");
    assert!(text.contains(&format!("removed PostgreSQL cluster {stale_pg}")), "{text}");
    // The process inside the namespace went with it; the cluster is stopped and gone.
    crate::netns::wait_for(5, || "the process in the stale namespace ended".into(), || inside.try_wait().unwrap());
    if let Some(pid) = postmaster {
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the stale cluster's server is stopped");
    }
    assert!(!std::path::Path::new(&stale_pg).exists());
    let list = namespaces();
    assert!(!list.contains(&stale_ns), "{list}");
    assert!(list.contains(&kept.0), "an unrelated namespace stays: {list}");
    assert!(list.contains(&net.srv), "a live test's namespace stays: {list}");
    let domains = String::from_utf8_lossy(&virsh(&["list", "--all", "--name"]).stdout).into_owned();
    assert!(!domains.contains(&stale_dom), "{domains}");
    assert!(domains.contains(&kept.1), "a live test's domain stays: {domains}");
    // A second run finds nothing more.
    let again = Command::new(CLEANUP).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing left behind"));
}
