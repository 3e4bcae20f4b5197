//! A bundle's contents checked on the appliance: every entry under the caps (the agent's own
//! unpacking code, run without writing anything), the manifest parsed, and every file the
//! manifest names present as a regular file.

use rackboot_agent::bundle::{self, Limits, MANIFEST};

use super::{FileEntry, Manifest};

/// What a bundle holds, once checked.
#[derive(Debug, Clone)]
pub struct Checked {
    pub manifest: Manifest,
    pub files: Vec<FileEntry>,
}

/// Reads the whole bundle (nothing is written) and checks it.
pub fn inspect(bytes: &[u8], limits: &Limits) -> Result<Checked, String> {
    let u = bundle::unpack(bytes, limits, None).map_err(|e| e.0)?;
    let text = u.manifest.ok_or_else(|| format!("no {MANIFEST} at the bundle's root"))?;
    let manifest = super::manifest::parse(&text)?;
    for (key, path) in [("check.run", &manifest.check.run), ("apply.run", &manifest.apply.run)] {
        let clean = bundle::clean_path(path.as_bytes(), limits).map_err(|e| e.0)?;
        match u.files.iter().find(|f| f.path == clean) {
            None => return Err(format!("{MANIFEST}: {key} names {path}, which is not in the bundle")),
            Some(f) if !f.executable => {
                return Err(format!("{MANIFEST}: {key} names {path}, which is not executable (chmod +x)"))
            }
            Some(_) => {}
        }
    }
    Ok(Checked { manifest, files: u.files })
}
