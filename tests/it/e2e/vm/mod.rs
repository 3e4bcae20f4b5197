//! The end-to-end runs with virtual machines: firmware (SeaBIOS, OVMF, Secure Boot) in qemu
//! under TCG, and libvirt domains behind VirtualBMC and sushy-emulator (libvirtd is one daemon per
//! machine). `tools/test.sh` runs this module in two processes, one test at a time in each: the
//! tests with libvirt domains (`provision`, `vbmc`, `vmedia`, `leftovers`) and `secureboot` in one, the other
//! ones, which start qemu themselves, in the other. Only the first may start libvirtd; nothing
//! outside them starts a VM.

mod arm64;
mod day_two;
mod disk_crypt;
mod fallback;
mod installed;
mod installer;
mod ipv6;
mod layout;
mod leftovers;
mod provision;
mod secureboot;
mod vbmc;
mod vmedia;
mod vmlab;
mod windows;

/// Prints `what` with the seconds since this process's first mark: where a long VM run's time
/// goes, read off its output.
fn mark(what: &str) {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    eprintln!("[{:>5.0} s] {what}", start.elapsed().as_secs_f64());
}

/// Creates a task that installs `image` on the machine `mac` (hostnames from `pattern`) and
/// waits up to 900 s for its run to end; the run (its `state` is `installed` when it went well).
fn install(
    net: &crate::netns::Net,
    mac: &str,
    image: &str,
    pattern: &str,
    serial: impl Fn() -> String,
) -> serde_json::Value {
    let body = serde_json::json!({
        "select": {"macs": [mac]}, "image": image, "hostname_pattern": pattern, "step_timeout_secs": 600,
    });
    let task = net.api("POST", "/tasks", Some(&body.to_string()));
    let task_id = task["task"]["id"].as_u64().unwrap();
    crate::netns::wait_for(
        900,
        || format!("{mac} was not installed:\n{}", serial()),
        || {
            let t = net.api("GET", &format!("/tasks/{task_id}"), None);
            let run = t["runs"][0].clone();
            (run["state"] != "active").then_some(run)
        },
    )
}
