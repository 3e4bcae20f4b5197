//! Provisioning: the records and the step sequence are `rackboot_model::provision`
//! (re-exported here); [`engine`] drives runs through the agent, [`decide`] picks each step's
//! next move, [`action`] is what a job step asks the agent to do, [`lifecycle`] starts the
//! day-two operations (release, rescue, retire), and the CMDB stores them.

pub mod action;
pub mod decide;
pub mod engine;
pub mod firmware_certs;
mod firmware_step;
pub mod images;
pub mod iperf;
pub mod lifecycle;
pub mod network;
mod observe;

pub use rackboot_model::provision::*;

/// A file's SHA-256 in lowercase hex (images named by tasks, imported Windows media).
pub fn sha256_file(path: &std::path::Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
