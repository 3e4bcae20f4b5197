//! rackboot-storm: many machines network-boot one appliance at once (see the library's docs).
//!
//! rackboot-storm --dhcp 127.0.0.1:67 --relay 127.0.0.1:1067 [--machines 1000]
//!                [--firmware bios|uefi|mixed] [--spread-secs 0] [--tftp-port 69]
//!                [--until enrolled|initrd] [--server-pid PID ...] [--seed N]
//!
//! The server must send relayed answers to the --relay address (rackboot: `dhcp.relay_port`).
//! With --server-pid (repeatable: dnsmasq and nginx are two processes) it prints the servers'
//! CPU seconds over the storm and their peak RSS. Exits 1 when a machine failed.

use std::net::SocketAddr;
use std::time::Duration;

use rackboot_storm::{dhcp::Relay, Firmware, Storm, Until};

struct Args {
    dhcp: SocketAddr,
    relay: SocketAddr,
    storm: Storm,
    pids: Vec<u32>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        dhcp: "127.0.0.1:67".parse()?,
        relay: "127.0.0.1:0".parse()?,
        storm: Storm {
            machines: 1000,
            firmware: Firmware::Mixed,
            spread: Duration::ZERO,
            tftp_port: 69,
            until: Until::Enrolled,
            seed: std::process::id(),
        },
        pids: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| anyhow::anyhow!("{k} needs a value"))?;
        match k.as_str() {
            "--dhcp" => a.dhcp = v.parse()?,
            "--relay" => a.relay = v.parse()?,
            "--machines" => a.storm.machines = v.parse()?,
            "--spread-secs" => a.storm.spread = Duration::from_secs_f64(v.parse()?),
            "--tftp-port" => a.storm.tftp_port = v.parse()?,
            "--seed" => a.storm.seed = v.parse()?,
            "--server-pid" => a.pids.push(v.parse()?),
            "--firmware" => {
                a.storm.firmware = match v.as_str() {
                    "bios" => Firmware::Bios,
                    "uefi" => Firmware::Uefi,
                    "mixed" => Firmware::Mixed,
                    _ => anyhow::bail!("--firmware is bios, uefi or mixed"),
                }
            }
            "--until" => {
                a.storm.until = match v.as_str() {
                    "enrolled" => Until::Enrolled,
                    "initrd" => Until::Initrd,
                    _ => anyhow::bail!("--until is enrolled or initrd"),
                }
            }
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    anyhow::ensure!(a.storm.machines > 0 && a.storm.machines <= 1 << 24, "--machines is 1 to 16,777,216");
    Ok(a)
}

/// CPU seconds and peak RSS of `pid`.
fn usage(pid: u32) -> (f64, u64) {
    let u = rackboot_agent::stats::process_usage(pid);
    (u.cpu_secs, u.peak_rss_bytes)
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let report = rt.block_on(async {
        let socket = tokio::net::UdpSocket::bind(a.relay).await?;
        let giaddr = rackboot_storm::giaddr(socket.local_addr()?);
        let relay = Relay::start(socket, a.dhcp, giaddr);
        let before: Vec<f64> = a.pids.iter().map(|p| usage(*p).0).collect();
        let report = a.storm.run(relay).await;
        for (pid, cpu0) in a.pids.iter().zip(before) {
            let (cpu, hwm) = usage(*pid);
            let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            println!(
                "server {} (pid {pid}): {:.2} CPU s over the storm ({:.2} cores), peak RSS {:.1} MB",
                name.trim(),
                cpu - cpu0,
                (cpu - cpu0) / report.wall.as_secs_f64().max(1e-3),
                hwm as f64 / 1e6
            );
        }
        anyhow::Ok(report)
    })?;
    print!("{}", report.table());
    let clean = report.completed() == report.outcomes.len() && report.duplicate_addresses() == 0;
    std::process::exit(if clean && report.duplicate_machine_ids() == 0 { 0 } else { 1 })
}
