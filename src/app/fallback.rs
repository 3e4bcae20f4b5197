//! The appliance's address on the last-resort network (`server.fallback_network`): added to
//! the provisioning interface at start (`ip addr replace`, so a killed run's leftover is taken
//! over), removed when the appliance stops.

use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::Context;

use crate::config::{fallback_address, Ipv4Net};

/// The address while it is held; dropping it removes it.
#[derive(Debug)]
pub struct FallbackAddress {
    cidr: String,
    interface: String,
}

impl FallbackAddress {
    /// Adds the network's `.254` to `interface`.
    pub fn add(net: Ipv4Net, interface: &str) -> anyhow::Result<FallbackAddress> {
        let ip: Ipv4Addr = fallback_address(net);
        let cidr = format!("{ip}/{}", net.prefix_len());
        let out = Command::new("ip")
            .args(["addr", "replace", &cidr, "dev", interface])
            .output()
            .context("running ip (iproute2) to add the fallback address")?;
        anyhow::ensure!(
            out.status.success(),
            "adding the fallback address {cidr} to {interface}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        tracing::info!(%cidr, %interface, "answering on the fallback network");
        Ok(FallbackAddress { cidr, interface: interface.to_string() })
    }
}

impl Drop for FallbackAddress {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["addr", "del", &self.cidr, "dev", &self.interface]).output();
    }
}
