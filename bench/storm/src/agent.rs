//! The BootOS agent's first minute, as the simulated machine's kernel command line sets it up:
//! trust the appliance by the CA pin, enroll with this boot's nonce, upload an inventory and
//! open the first long-poll. Uses the agent's own client and wire types.

use std::net::Ipv4Addr;
use std::time::Duration;

use hyper::Method;
use rackboot_agent::client::Client;
use rackboot_agent::net::parse_cmdline;
use rackboot_agent::tls::Trust;
use rackboot_agent::wire::{AgentMode, Cpu, Disk, Dmi, EnrollRequest, EnrollResponse, Inventory, Nic};

/// The agent's retry pauses after a failed call (no answer, 429 or 5xx), seconds.
const RETRY: [u64; 5] = [1, 2, 4, 8, 15];
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Agent {
    client: Client,
    mac: String,
    nonce: Option<String>,
    pub machine_id: u64,
}

impl Agent {
    /// The agent BootOS would start for `cmdline` on a machine at `from`.
    pub fn new(cmdline: &str, from: Ipv4Addr, mac: &str) -> anyhow::Result<Agent> {
        let c = parse_cmdline(cmdline);
        let url = c.url.ok_or_else(|| anyhow::anyhow!("no rackboot.url= on the command line: {cmdline}"))?;
        let pin = c.ca_pin.ok_or_else(|| anyhow::anyhow!("no rackboot.ca= on the command line"))?;
        let mut client = Client::new(&url, &Trust::pin(&pin)?)?;
        client.local_addr = Some(from.into());
        let boot_mac = c.boot_mac.map(|m| m.replace('-', ":").to_lowercase()).unwrap_or_else(|| mac.to_string());
        anyhow::ensure!(boot_mac == mac, "rackboot.mac={boot_mac} on the command line of {mac}");
        Ok(Agent { client, mac: mac.to_string(), nonce: c.nonce, machine_id: 0 })
    }

    /// Enrolls with the boot nonce; an enrollment held for approval is an error (the nonce
    /// should have proven the boot). Returns the retries it took.
    pub async fn enroll(&mut self) -> anyhow::Result<u32> {
        let req = EnrollRequest {
            macs: vec![self.mac.clone()],
            boot_mac: Some(self.mac.clone()),
            serial: None,
            system_uuid: None,
            mode: AgentMode::Bootos,
            version: "storm".into(),
            nonce: self.nonce.clone(),
        };
        let (reply, retries) = self.call(Method::POST, "/agent/v1/enroll", Some(&req)).await?;
        let resp: EnrollResponse = serde_json::from_slice(&reply)?;
        anyhow::ensure!(resp.approved, "enrolled but held for approval: the boot nonce was not accepted");
        self.client.credential = Some(resp.credential);
        self.machine_id = resp.machine_id;
        Ok(retries)
    }

    /// Uploads a small server's inventory.
    pub async fn inventory(&mut self) -> anyhow::Result<u32> {
        let inv = Inventory {
            cpu: Cpu { model: "Storm CPU @ 2.0GHz".into(), cores: 16, threads: 32, sockets: 2 },
            memory_bytes: 128 << 30,
            disks: vec![Disk { name: "sda".into(), size_bytes: 480 << 30, ..Default::default() }],
            nics: vec![Nic { name: "eth0".into(), mac: self.mac.clone(), link: true, ..Default::default() }],
            dmi: Dmi { vendor: Some("rackboot-storm".into()), model: Some("sim-1".into()), ..Default::default() },
            kernel: "6.1.0-storm".into(),
            ..Default::default()
        };
        Ok(self.call(Method::PUT, "/agent/v1/inventory", Some(&inv)).await?.1)
    }

    /// The first long-poll (answered at once: nothing is queued for a new machine).
    pub async fn first_poll(&mut self) -> anyhow::Result<u32> {
        Ok(self.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=0", None).await?.1)
    }

    /// One call with the agent's retries on no answer, 429 and 5xx; other refusals are final.
    async fn call<B: serde::Serialize>(
        &mut self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> anyhow::Result<(Vec<u8>, u32)> {
        let mut last = String::new();
        for (retries, pause) in RETRY.iter().enumerate() {
            match self.client.call(method.clone(), path, body, CALL_TIMEOUT).await {
                Ok(r) if r.ok() => return Ok((r.body.to_vec(), retries as u32)),
                Ok(r) if r.status == 429 || r.status >= 500 => last = format!("HTTP {}: {}", r.status, r.error_text()),
                Ok(r) => anyhow::bail!("{path}: HTTP {}: {}", r.status, r.error_text()),
                Err(e) => last = format!("{e:#}"),
            }
            tokio::time::sleep(Duration::from_secs(*pause)).await;
        }
        anyhow::bail!("{path}: {last} (after {} tries)", RETRY.len())
    }
}
