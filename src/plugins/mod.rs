//! Signed vendor hardware plugins: a `.tar.gz` with `manifest.toml`, signed with minisign by a
//! trusted vendor key, stored by content hash and delivered to BootOS agents by that hash.
//!
//! - [`manifest`]: the manifest's shape and rules, and which machines a plugin fits.
//! - [`params`]: the parameters' JSON Schema (a documented subset) and their validation.
//! - [`verify`]: minisign keys and signatures (checked before anything is unpacked).
//! - [`unpack`]: the bundle's entries checked under caps (`rackboot_agent::bundle`, shared
//!   with the agent), and the manifest's files against them.
//! - [`usage`]: hardware profiles' references: resolved to an enabled version with valid
//!   parameters, and the agent action for a machine its `[match]` fits.
//! - [`store`]: the upload pipeline (verify, check, write the blob atomically, record it in
//!   the CMDB) and the blob directory.
//!
//! The CMDB side (trusted keys, versions, the active version) is `cmdb/plugins.rs`.

pub mod manifest;
pub mod params;
pub mod store;
pub mod unpack;
pub mod usage;
pub mod verify;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use manifest::Manifest;
pub use rackboot_agent::bundle::FileEntry;
pub use store::Store;

/// A vendor's minisign public key that rackboot trusts for that vendor's plugins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TrustedKey {
    /// The key id as `minisign` prints it (hex, in the `.pub` file's comment).
    pub key_id: String,
    /// The only vendor whose plugins this key may sign.
    pub vendor: String,
    /// The public key's base64 line.
    pub public_key: String,
    pub added_at: u64,
    pub added_by: String,
    /// Set once revoked: the key verifies nothing more and its plugins are disabled.
    #[serde(default)]
    pub revoked_at: Option<u64>,
}

/// One uploaded version of a plugin (immutable once stored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PluginVersion {
    pub name: String,
    pub version: String,
    pub vendor: String,
    /// SHA-256 of the bundle as uploaded: its blob's name, and what agents check.
    pub sha256: String,
    pub size: u64,
    /// The trusted key that signed it.
    pub key_id: String,
    pub manifest: Manifest,
    /// Every file in the bundle with its hash.
    pub files: Vec<FileEntry>,
    pub uploaded_at: u64,
    pub uploaded_by: String,
    /// The detached minisign signature it was uploaded with, kept so that every appliance that
    /// serves it checks it again (empty: stored before signatures were kept).
    #[serde(default)]
    pub signature: String,
}

impl PluginVersion {
    /// The CMDB key: `name/version`.
    pub fn key(&self) -> String {
        version_key(&self.name, &self.version)
    }
}

/// The CMDB key of a plugin version.
pub fn version_key(name: &str, version: &str) -> String {
    format!("{name}/{version}")
}

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
