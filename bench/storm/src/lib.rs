//! A boot storm: N simulated machines power on together and go through the whole network boot
//! the way their firmware does — the PXE ROM's DHCP and TFTP, iPXE's DHCP, the HTTP boot script,
//! kernel and initrd, then the BootOS agent's enrollment (with the boot nonce from the kernel
//! command line), inventory and first long-poll — each from its own leased address, with the
//! retry timers real clients use. The DHCP goes through one relay agent (the simulator plays it),
//! as in a rack behind a leaf switch. `bench/storm.sh` runs it against a release rackboot and
//! against dnsmasq + nginx for the stages they can serve; `tests/it/protocols/boot_storm.rs` runs 50 machines.

pub mod agent;
pub mod dhcp;
pub mod http;
pub mod report;
pub mod tftp;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use report::{Outcome, Report, Stage};

/// Which firmware the machines have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firmware {
    Bios,
    Uefi,
    /// Alternating, as in a mixed rack.
    Mixed,
}

/// How far each machine goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Through the agent's first long-poll.
    Enrolled,
    /// Through the kernel and initrd (what dnsmasq + nginx can serve).
    Initrd,
}

pub struct Storm {
    pub machines: usize,
    pub firmware: Firmware,
    /// Power-on times spread evenly over this (zero: all at once).
    pub spread: Duration,
    /// The TFTP port on the next server (69 in a real network).
    pub tftp_port: u16,
    pub until: Until,
    /// Distinguishes this run's MACs and transaction ids from another's.
    pub seed: u32,
}

impl Storm {
    /// Boots every machine through `relay` and returns when all have finished or failed.
    pub async fn run(&self, relay: Arc<dhcp::Relay>) -> Report {
        let started = Instant::now();
        let mut set = tokio::task::JoinSet::new();
        for i in 0..self.machines {
            let relay = relay.clone();
            let at = self.spread.mul_f64(i as f64 / self.machines.max(1) as f64);
            let m = Machine {
                mac: mac(self.seed, i),
                xid: self.seed.rotate_left(16) ^ ((i as u32) << 1),
                arch: match (self.firmware, i % 2) {
                    (Firmware::Bios, _) | (Firmware::Mixed, 0) => 0,
                    _ => 7,
                },
                tftp_port: self.tftp_port,
                until: self.until,
            };
            set.spawn(async move {
                tokio::time::sleep(at).await;
                let mut out = m.boot(&relay).await;
                out.finished_at = out.total.map(|_| started.elapsed());
                out
            });
        }
        let mut outcomes = Vec::with_capacity(self.machines);
        while let Some(done) = set.join_next().await {
            outcomes.push(done.expect("a machine's task panicked"));
        }
        Report { outcomes, wall: started.elapsed(), stray_dhcp: relay.stray.load(Ordering::Relaxed) }
    }
}

/// Locally administered, unicast: 02:5b:<seed byte>:<index>.
fn mac(seed: u32, i: usize) -> [u8; 6] {
    let i = i as u32;
    [0x02, 0x5b, seed as u8, (i >> 16) as u8, (i >> 8) as u8, i as u8]
}

struct Machine {
    mac: [u8; 6],
    xid: u32,
    arch: u16,
    tftp_port: u16,
    until: Until,
}

impl Machine {
    async fn boot(&self, relay: &dhcp::Relay) -> Outcome {
        let mac_text = self.mac.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
        let mut out = Outcome { mac: mac_text, ..Default::default() };
        let power_on = Instant::now();
        if let Err((stage, e)) = self.stages(relay, &mut out).await {
            out.failed = Some((stage, format!("{e:#}")));
        } else {
            out.total = Some(power_on.elapsed());
        }
        out
    }

    async fn stages(&self, relay: &dhcp::Relay, out: &mut Outcome) -> Result<(), (Stage, anyhow::Error)> {
        let t = Instant::now();
        let rom =
            relay.dora(self.mac, self.xid, self.arch, dhcp::Client::PxeRom).await.map_err(|e| (Stage::DhcpRom, e))?;
        done(out, Stage::DhcpRom, t, rom.retries);
        out.address = Some(rom.address);

        let t = Instant::now();
        let server = SocketAddr::new(rom.next_server.into(), self.tftp_port);
        let fetched = async {
            anyhow::ensure!(!rom.next_server.is_unspecified(), "the offer named no next server");
            anyhow::ensure!(!rom.boot_file.is_empty(), "the offer named no boot file");
            tftp::fetch(rom.address, server, &rom.boot_file).await
        };
        let fetched = fetched.await.map_err(|e| (Stage::Tftp, e))?;
        done(out, Stage::Tftp, t, fetched.retries);

        let t = Instant::now();
        let ipxe = relay.dora(self.mac, self.xid.wrapping_add(1), self.arch, dhcp::Client::Ipxe).await;
        let ipxe = ipxe.and_then(|l| {
            anyhow::ensure!(l.address == rom.address, "iPXE was leased {} after the ROM's {}", l.address, rom.address);
            Ok(l)
        });
        let ipxe = ipxe.map_err(|e| (Stage::DhcpIpxe, e))?;
        done(out, Stage::DhcpIpxe, t, ipxe.retries);

        let mut web = http::Http::new(rom.address);
        let t = Instant::now();
        let script = async {
            let got = web.get(&ipxe.boot_file).await?;
            http::parse_script(&String::from_utf8_lossy(&got.head))
        };
        let script = script.await.map_err(|e| (Stage::Script, e))?;
        done(out, Stage::Script, t, 0);
        if script.local {
            out.local_boot = true;
            return Ok(());
        }
        let t = Instant::now();
        let kernel = script.kernel.as_deref().unwrap_or_default();
        web.get(kernel).await.map_err(|e| (Stage::Kernel, e))?;
        done(out, Stage::Kernel, t, 0);
        let t = Instant::now();
        for initrd in &script.initrds {
            web.get(initrd).await.map_err(|e| (Stage::Initrd, e))?;
        }
        done(out, Stage::Initrd, t, web.reconnects);
        if self.until == Until::Initrd {
            return Ok(());
        }
        drop(web);

        let t = Instant::now();
        let mut agent = agent::Agent::new(&script.cmdline, rom.address, &out.mac).map_err(|e| (Stage::Enroll, e))?;
        let r = agent.enroll().await.map_err(|e| (Stage::Enroll, e))?;
        out.machine_id = Some(agent.machine_id);
        done(out, Stage::Enroll, t, r);
        let t = Instant::now();
        let r = agent.inventory().await.map_err(|e| (Stage::Inventory, e))?;
        done(out, Stage::Inventory, t, r);
        let t = Instant::now();
        let r = agent.first_poll().await.map_err(|e| (Stage::Poll, e))?;
        done(out, Stage::Poll, t, r);
        Ok(())
    }
}

fn done(out: &mut Outcome, stage: Stage, since: Instant, retries: u32) {
    out.stages.push((stage, since.elapsed()));
    if retries > 0 {
        *out.retries.entry(stage).or_default() += retries;
    }
}

/// The relay address to put in giaddr for a relay socket bound to `local`.
pub fn giaddr(local: SocketAddr) -> Ipv4Addr {
    match local.ip() {
        std::net::IpAddr::V4(v4) if !v4.is_unspecified() => v4,
        _ => Ipv4Addr::LOCALHOST,
    }
}
