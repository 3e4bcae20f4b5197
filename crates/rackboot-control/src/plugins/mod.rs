//! Signed vendor hardware plugins: a `.tar.gz` with `manifest.toml`, signed with minisign by a
//! trusted vendor key, stored by content hash and delivered to BootOS agents by that hash.
//!
//! The records and pure rules (manifest, parameters, signatures, references) are
//! `rackboot_model::plugins`, re-exported here. This module is the live side:
//! - [`unpack`]: the bundle's entries checked under caps (`rackboot_agent::bundle`, shared
//!   with the agent), and the manifest's files against them.
//! - [`usage`]: hardware profiles' references: resolved to an enabled version with valid
//!   parameters, and the agent action for a machine its `[match]` fits.
//! - [`store`]: the upload pipeline (verify, check, write the blob atomically, record it in
//!   the CMDB) and the blob directory.

pub mod store;
pub mod unpack;
pub mod usage;

pub use rackboot_model::plugins::*;
pub use store::Store;

/// Why a plugin operation was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PluginError {
    /// The bundle or its signature fails a check (422).
    #[error("{0}")]
    Refused(String),
    /// Larger than `plugins.max_bundle_bytes` (413).
    #[error("{0}")]
    TooLarge(String),
    #[error(transparent)]
    Cmdb(#[from] crate::cmdb::CmdbError),
    /// The blob directory failed (500).
    #[error("plugin store: {0}")]
    Io(String),
}
