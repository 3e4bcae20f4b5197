//! Plugin bundles (`.tar.gz`) read entry by entry under caps: the one unpacking code the
//! appliance (checking an upload) and the agent (before it runs a plugin) share.
//!
//! Refused: absolute paths, `..`, any link (symbolic or hard), device nodes and fifos, a path
//! twice, more entries, deeper paths or more bytes (per file and in total, counted as read, so a
//! gzip bomb stops at the cap) than [`Limits`] allow. Files are created with `create_new` below a
//! directory that holds nothing else, so nothing can be written outside it.

use std::fmt;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

/// Caps on what one bundle may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Entries (files and directories).
    pub max_entries: usize,
    /// Path components.
    pub max_depth: usize,
    /// Bytes of one file, uncompressed.
    pub max_file_bytes: u64,
    /// Bytes of every file together, uncompressed.
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_entries: 1000, max_depth: 8, max_file_bytes: 256 << 20, max_total_bytes: 512 << 20 }
    }
}

/// The manifest is read into memory up to this size.
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;
/// The manifest's name at the bundle's root.
pub const MANIFEST: &str = "manifest.toml";

/// One regular file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FileEntry {
    /// Path inside the bundle, `/`-separated, without `./`.
    pub path: String,
    pub size: u64,
    /// SHA-256 of the content, lowercase hex.
    pub sha256: String,
    /// Any execute bit was set in the archive.
    pub executable: bool,
}

/// What a bundle holds: its files and the manifest's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpacked {
    pub files: Vec<FileEntry>,
    /// `manifest.toml` at the root, if there was one.
    pub manifest: Option<String>,
}

/// Why a bundle was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refused> {
    Err(Refused(why.into()))
}

/// Reads the gzip-compressed tar `gz`, checking every entry; with `dest` (an existing, empty
/// directory) the files are written below it as well.
pub fn unpack(gz: impl Read, limits: &Limits, dest: Option<&Path>) -> Result<Unpacked, Refused> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    let entries = archive.entries().or_else(|e| refuse(format!("not a tar.gz: {e}")))?;
    let mut out = Unpacked { files: Vec::new(), manifest: None };
    let mut seen = std::collections::BTreeSet::new();
    let mut total = 0u64;
    for entry in entries {
        let mut entry = entry.or_else(|e| refuse(format!("not a tar.gz: {e}")))?;
        let kind = entry.header().entry_type();
        // A global pax header, and the root itself (`.` or `./`, as `tar -C dir .` writes it),
        // are no entries of ours.
        let is_root = matches!(&entry.path_bytes()[..], b"." | b"./");
        if kind == tar::EntryType::XGlobalHeader || (kind == tar::EntryType::Directory && is_root) {
            continue;
        }
        if seen.len() >= limits.max_entries {
            return refuse(format!("more than {} entries", limits.max_entries));
        }
        let raw = entry.path_bytes().into_owned();
        let path = clean_path(&raw, limits)?;
        if !seen.insert(path.clone()) {
            return refuse(format!("{path}: appears twice"));
        }
        match kind {
            tar::EntryType::Directory => {
                if let Some(d) = dest {
                    std::fs::create_dir_all(d.join(&path)).or_else(|e| refuse(format!("{path}: {e}")))?;
                }
                continue;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {}
            tar::EntryType::Symlink | tar::EntryType::Link => {
                return refuse(format!("{path}: links are not allowed in a bundle"))
            }
            tar::EntryType::Char | tar::EntryType::Block | tar::EntryType::Fifo => {
                return refuse(format!("{path}: device nodes and fifos are not allowed in a bundle"))
            }
            other => return refuse(format!("{path}: entry type {other:?} is not allowed in a bundle")),
        }
        let size = entry.header().size().or_else(|e| refuse(format!("{path}: bad size: {e}")))?;
        if size > limits.max_file_bytes {
            return refuse(format!("{path}: {size} bytes, more than the {} allowed per file", limits.max_file_bytes));
        }
        if total + size > limits.max_total_bytes {
            return refuse(format!("more than {} bytes unpacked in total", limits.max_total_bytes));
        }
        let executable = entry.header().mode().unwrap_or(0) & 0o111 != 0;
        let keep_manifest = path == MANIFEST;
        let mut file = match dest {
            Some(d) => Some(create(d, &path, executable)?),
            None => None,
        };
        let mut hasher = Sha256::new();
        let mut kept = Vec::new();
        let mut read = 0u64;
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = entry.read(&mut buf).or_else(|e| refuse(format!("{path}: {e}")))?;
            if n == 0 {
                break;
            }
            read += n as u64;
            if read > size {
                return refuse(format!("{path}: longer than its header says"));
            }
            hasher.update(&buf[..n]);
            if let Some(f) = file.as_mut() {
                f.write_all(&buf[..n]).or_else(|e| refuse(format!("{path}: {e}")))?;
            }
            if keep_manifest {
                if kept.len() + n > MAX_MANIFEST_BYTES {
                    return refuse(format!("{MANIFEST}: larger than {MAX_MANIFEST_BYTES} bytes"));
                }
                kept.extend_from_slice(&buf[..n]);
            }
        }
        if read != size {
            return refuse(format!("{path}: truncated"));
        }
        total += size;
        if let Some(f) = file {
            f.sync_all().or_else(|e| refuse(format!("{path}: {e}")))?;
        }
        if keep_manifest {
            out.manifest = Some(String::from_utf8(kept).or_else(|_| refuse(format!("{MANIFEST}: not UTF-8")))?);
        }
        out.files.push(FileEntry { path, size, sha256: hex(&hasher.finalize()), executable });
    }
    Ok(out)
}

/// A safe relative path from an archive name: UTF-8, no NUL or backslash, no absolute path, no
/// `..`, `.` and empty components dropped, at most `max_depth` components.
pub fn clean_path(raw: &[u8], limits: &Limits) -> Result<String, Refused> {
    let s = std::str::from_utf8(raw).or_else(|_| refuse("a path is not UTF-8"))?;
    if s.starts_with('/') {
        return refuse(format!("{s}: absolute paths are not allowed in a bundle"));
    }
    if s.contains('\0') || s.contains('\\') || s.len() > 1024 {
        return refuse(format!("{s:?}: not a plain path"));
    }
    let mut parts = Vec::new();
    for c in s.split('/') {
        match c {
            "" | "." => {}
            ".." => return refuse(format!("{s}: '..' is not allowed in a bundle")),
            c => parts.push(c),
        }
    }
    if parts.is_empty() {
        return refuse(format!("{s:?}: empty path"));
    }
    if parts.len() > limits.max_depth {
        return refuse(format!("{s}: deeper than {} levels", limits.max_depth));
    }
    Ok(parts.join("/"))
}

fn create(dest: &Path, path: &str, executable: bool) -> Result<std::fs::File, Refused> {
    use std::os::unix::fs::OpenOptionsExt;
    let target = dest.join(path);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).or_else(|e| refuse(format!("{path}: {e}")))?;
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if executable { 0o755 } else { 0o644 })
        .open(&target)
        .or_else(|e| refuse(format!("{path}: {e}")))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests;
