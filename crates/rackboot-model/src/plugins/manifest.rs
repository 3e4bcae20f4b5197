//! `manifest.toml`: what a plugin is, which machines it fits, what it runs. Unknown keys are
//! refused, so a typo cannot silently change what runs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use rackboot_agent::wire::Inventory;

/// Longest `check`/`apply` timeout, seconds.
pub const MAX_TIMEOUT_SECS: u64 = 6 * 3600;

/// A plugin's manifest, as written and as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Letters, digits and '-', at most 64.
    pub name: String,
    /// Semantic version, e.g. "1.2.0".
    pub version: String,
    /// The vendor whose trusted key must have signed the bundle.
    pub vendor: String,
    #[serde(default)]
    pub description: String,
    /// Which machines the plugin fits.
    #[serde(rename = "match")]
    pub matches: Match,
    pub check: Step,
    pub apply: ApplyStep,
    /// JSON Schema of the parameters an operator passes (objects, written as a TOML table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub params: Option<serde_json::Value>,
}

/// Which machines a plugin fits: every field given must hold (a list holds when any of its
/// entries does); with `any`, at least one of those alternatives must hold as well.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Globs (`*`, `?`; case-insensitive) on the DMI system vendor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dmi_vendor: Vec<String>,
    /// Globs on the DMI product name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dmi_product: Vec<String>,
    /// PCI `vendor:device` ids in hex (`1000:005d`; `1000:*` for any device of the vendor).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci: Vec<String>,
    /// Alternatives, each of the same shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(no_recursion)]
    pub any: Vec<Match>,
}

/// `[check]`: a file in the bundle and its time limit. (`PluginStep` in the OpenAPI document:
/// a run's `Step` has the name there.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = PluginStep)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// A file in the bundle, run directly (its own `#!`), no shell in between.
    pub run: String,
    /// Seconds before its process group is killed.
    pub timeout: u64,
}

/// `[apply]`: a step that may change the machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApplyStep {
    pub run: String,
    pub timeout: u64,
    /// Destroys data (disks, arrays): shown to operators before they reference it.
    #[serde(default)]
    pub destructive: bool,
    /// May need a reboot (exit 10 asks for one).
    #[serde(default)]
    pub reboot: bool,
}

/// Parses and checks a manifest; every error names the key.
pub fn parse(text: &str) -> Result<Manifest, String> {
    let m: Manifest = toml::from_str(text).map_err(|e| format!("manifest.toml: {}", e.message()))?;
    check(&m)?;
    Ok(m)
}

/// The manifest's own rules (apart from the files it names, see `store`).
pub fn check(m: &Manifest) -> Result<(), String> {
    if !valid_name(&m.name) {
        return Err(format!("manifest.toml: name {:?} must be 1-64 letters, digits and '-'", m.name));
    }
    if !valid_name(&m.vendor) {
        return Err(format!("manifest.toml: vendor {:?} must be 1-64 letters, digits and '-'", m.vendor));
    }
    version(&m.version)?;
    m.matches.check(true)?;
    for (key, s) in [("check", &m.check.run), ("apply", &m.apply.run)] {
        rackboot_agent::bundle::clean_path(s.as_bytes(), &Default::default())
            .map_err(|e| format!("manifest.toml: {key}.run: {e}"))?;
    }
    for (key, t) in [("check", m.check.timeout), ("apply", m.apply.timeout)] {
        if !(1..=MAX_TIMEOUT_SECS).contains(&t) {
            return Err(format!("manifest.toml: {key}.timeout must be 1..={MAX_TIMEOUT_SECS} seconds"));
        }
    }
    if let Some(p) = &m.params {
        super::params::check_schema(p).map_err(|e| format!("manifest.toml: params: {e}"))?;
    }
    Ok(())
}

/// A version as semver ("1.2.0"; no leading "v").
pub fn version(s: &str) -> Result<semver::Version, String> {
    semver::Version::parse(s).map_err(|e| format!("manifest.toml: version {s:?} is not semver: {e}"))
}

/// Plugin and vendor names: letters, digits and '-', 1-64.
pub fn valid_name(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') && !s.starts_with('-')
}

impl Match {
    fn is_empty(&self) -> bool {
        self.dmi_vendor.is_empty() && self.dmi_product.is_empty() && self.pci.is_empty() && self.any.is_empty()
    }

    fn check(&self, top: bool) -> Result<(), String> {
        if top && self.is_empty() {
            return Err("manifest.toml: [match] needs dmi_vendor, dmi_product, pci or any".into());
        }
        if !top && !self.any.is_empty() {
            return Err("manifest.toml: match.any cannot nest".into());
        }
        for p in &self.pci {
            let ok = p.split_once(':').is_some_and(|(v, d)| hex4(v) && (hex4(d) || d == "*"));
            if !ok {
                return Err(format!("manifest.toml: match.pci {p:?} must be VVVV:DDDD in hex (DDDD may be *)"));
            }
        }
        for a in &self.any {
            if a.is_empty() {
                return Err("manifest.toml: an empty match.any entry would fit every machine".into());
            }
            a.check(false)?;
        }
        Ok(())
    }

    /// Whether a machine with this inventory fits.
    pub fn fits(&self, inv: &Inventory) -> bool {
        // An unknown DMI value reads as empty: only `*` fits it.
        let dmi = |globs: &[String], v: &Option<String>| {
            globs.is_empty() || globs.iter().any(|g| glob(g, v.as_deref().unwrap_or("")))
        };
        let pci = self.pci.is_empty()
            || self.pci.iter().any(|p| {
                let (v, d) = p.split_once(':').unwrap_or((p, "*"));
                inv.pci
                    .iter()
                    .any(|dev| dev.vendor.eq_ignore_ascii_case(v) && (d == "*" || dev.device.eq_ignore_ascii_case(d)))
            });
        dmi(&self.dmi_vendor, &inv.dmi.vendor)
            && dmi(&self.dmi_product, &inv.dmi.model)
            && pci
            && (self.any.is_empty() || self.any.iter().any(|a| a.fits(inv)))
    }
}

fn hex4(s: &str) -> bool {
    s.len() == 4 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Case-insensitive glob with `*` (any run) and `?` (one character).
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = text.trim().to_lowercase().chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests;
