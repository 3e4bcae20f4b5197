//! BIOS settings a hardware profile declares (`[provision.hardware_profiles.bios]`), applied
//! through the machine's Redfish BMC as a provisioning step: written to the `Bios` resource's
//! settings object, made current by a restart, read back. This module is the pure part: what a
//! declared set may hold, and which attributes a reading still has different.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Attributes one profile may declare.
pub const MAX_SETTINGS: usize = 64;
/// An attribute name's length, at most.
pub const MAX_NAME: usize = 64;
/// A string value's length, at most.
pub const MAX_VALUE: usize = 256;

/// Declared attributes: names to plain values (string, number, boolean).
pub type Settings = BTreeMap<String, Value>;

/// Checks a declared set: at most [`MAX_SETTINGS`] attributes, names of letters, digits, `_`,
/// `.` and `-` (as Redfish attribute names are), values plain and short.
pub fn check(settings: &Settings) -> Result<(), String> {
    if settings.len() > MAX_SETTINGS {
        return Err(format!("{} BIOS attributes: at most {MAX_SETTINGS}", settings.len()));
    }
    for (name, value) in settings {
        let name_ok = !name.is_empty()
            && name.len() <= MAX_NAME
            && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
        if !name_ok {
            return Err(format!("BIOS attribute name {name:?}: 1 to {MAX_NAME} letters, digits, '_', '.' or '-'"));
        }
        match value {
            Value::String(s) if s.chars().count() <= MAX_VALUE && !s.chars().any(char::is_control) => {}
            Value::Number(_) | Value::Bool(_) => {}
            Value::String(_) => {
                return Err(format!("BIOS attribute {name}: a value of at most {MAX_VALUE} printable characters"))
            }
            _ => return Err(format!("BIOS attribute {name}: the value must be a string, a number or a boolean")),
        }
    }
    Ok(())
}

/// Whether a BMC's `have` is the declared `want`: the same JSON, or the same text (BMCs and
/// emulators report numbers and booleans as strings: `"10"` is `10`, `"true"` is `true`).
pub fn same(want: &Value, have: &Value) -> bool {
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        _ => None,
    };
    want == have || (text(want).is_some() && text(want) == text(have))
}

/// The declared attributes `current` does not have as declared: `(name, wanted, found)`, found
/// `None` where the BMC has no such attribute.
pub fn differing<'a>(want: &'a Settings, current: &Settings) -> Vec<(&'a str, &'a Value, Option<Value>)> {
    want.iter()
        .filter_map(|(k, w)| match current.get(k) {
            Some(h) if same(w, h) => None,
            h => Some((k.as_str(), w, h.cloned())),
        })
        .collect()
}

/// Names `differing`'s entries for an error: `ProcTurboMode (wanted "Disabled", is "Enabled")`.
pub fn describe(diff: &[(&str, &Value, Option<Value>)]) -> String {
    diff.iter()
        .map(|(k, w, h)| match h {
            Some(h) => format!("{k} (wanted {w}, is {h})"),
            None => format!("{k} (no such attribute on this BMC)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A certificate the BIOS step puts into the machine's firmware through its BMC (a hardware
/// profile's `firmware_certificates`), beside the attributes: it takes effect at the same
/// restart and is read back after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FirmwareCert {
    /// The boot CA, so the firmware's HTTPS boot trusts the boot listener.
    HttpsBoot,
    /// BootOS's signing certificate, into Secure Boot's `db`, so firmware enforcing Secure Boot
    /// boots the appliance's signed image.
    SecureBootDb,
}

impl FirmwareCert {
    /// The name a hardware profile and the timeline use.
    pub fn as_str(self) -> &'static str {
        match self {
            FirmwareCert::HttpsBoot => "https-boot",
            FirmwareCert::SecureBootDb => "secure-boot-db",
        }
    }

    /// What it is, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FirmwareCert::HttpsBoot => "the boot CA for HTTPS boot",
            FirmwareCert::SecureBootDb => "BootOS's signing certificate in Secure Boot's db",
        }
    }
}

/// What a BMC's attribute registry (`RegistryEntries.Attributes`, DMTF's
/// AttributeRegistry schema) says against the declared values that differ: a read-only
/// attribute, a value not among an enumeration's, a number outside its bounds, a string too
/// long. Each problem in words, naming the attribute (empty: the registry allows them all, or
/// says nothing of them).
pub fn against_registry(diff: &[(&str, &Value, Option<Value>)], registry: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for (name, want, _) in diff {
        let Some(entry) = registry.iter().find(|e| e["AttributeName"] == *name) else { continue };
        if entry["ReadOnly"] == true {
            out.push(format!("{name} is read-only on this BMC"));
            continue;
        }
        match entry["Type"].as_str() {
            Some("Enumeration") => {
                let allowed: Vec<&str> = entry["Value"]
                    .as_array()
                    .map(|v| v.iter().filter_map(|v| v["ValueName"].as_str()).collect())
                    .unwrap_or_default();
                let text = want.as_str().map(str::to_string).unwrap_or_else(|| want.to_string());
                if !allowed.is_empty() && !allowed.contains(&text.as_str()) {
                    out.push(format!(
                        "{name}: {want} is not in the list of acceptable values ({})",
                        allowed.join(", ")
                    ));
                }
            }
            Some("Integer") => {
                let n = want.as_i64().or_else(|| want.as_str().and_then(|s| s.parse().ok()));
                let (lo, hi) = (entry["LowerBound"].as_i64(), entry["UpperBound"].as_i64());
                match n {
                    None => out.push(format!("{name}: {want} is not an integer")),
                    Some(n) if lo.is_some_and(|lo| n < lo) || hi.is_some_and(|hi| n > hi) => out.push(format!(
                        "{name}: {n} is outside {}..{}",
                        lo.map_or("".into(), |v| v.to_string()),
                        hi.map_or("".into(), |v| v.to_string())
                    )),
                    _ => {}
                }
            }
            Some("String") => {
                let max = entry["MaxLength"].as_u64().and_then(|m| usize::try_from(m).ok());
                if let (Some(max), Some(s)) = (max, want.as_str()) {
                    if s.chars().count() > max {
                        out.push(format!("{name}: longer than its {max} characters"));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Where a run's BIOS step is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum BiosPhase {
    /// The settings are being written through the BMC and the machine restarted into BootOS
    /// (asked at `at_ms`).
    Apply { at_ms: u64 },
    /// Written; the machine was restarted at `at_ms`: waiting for its BootOS agent.
    Restart { at_ms: u64 },
    /// BootOS is back: the attributes are being read back (asked at `at_ms`).
    Verify { at_ms: u64 },
}

impl BiosPhase {
    /// When this phase was asked for (an outcome for another phase is stale).
    pub fn at_ms(self) -> u64 {
        match self {
            BiosPhase::Apply { at_ms } | BiosPhase::Restart { at_ms } | BiosPhase::Verify { at_ms } => at_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: Value) -> Settings {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_declared_set_is_plain_named_and_bounded() {
        assert!(check(&settings(json!({"ProcTurboMode": "Disabled", "NumCores": 8, "QuietBoot": false}))).is_ok());
        for (bad, why) in [
            (json!({"": "x"}), "name"),
            (json!({"a b": "x"}), "name"),
            (json!({"x".repeat(65): "x"}), "name"),
            (json!({"Nested": {"a": 1}}), "string, a number or a boolean"),
            (json!({"List": [1]}), "string, a number or a boolean"),
            (json!({"Null": null}), "string, a number or a boolean"),
            (json!({"Long": "x".repeat(257)}), "printable"),
            (json!({"Ctl": "a\nb"}), "printable"),
        ] {
            let e = check(&settings(bad.clone())).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let many: Settings = (0..=MAX_SETTINGS).map(|i| (format!("A{i}"), json!(i))).collect();
        assert!(check(&many).unwrap_err().contains("at most 64"));
    }

    #[test]
    fn the_registry_refuses_what_the_bmc_would() {
        let registry: Vec<Value> = serde_json::from_value(json!([
            {"AttributeName": "EmbeddedSata", "Type": "Enumeration", "Value": [{"ValueName": "Raid"}, {"ValueName": "Ahci"}]},
            {"AttributeName": "NumCores", "Type": "Integer", "LowerBound": 1, "UpperBound": 64},
            {"AttributeName": "AssetTag", "Type": "String", "MaxLength": 8},
            {"AttributeName": "SerialNumber", "Type": "String", "ReadOnly": true},
        ]))
        .unwrap();
        let check = |name: &str, v: Value| against_registry(&[(name, &v, None)], &registry);
        assert!(check("EmbeddedSata", json!("Ahci")).is_empty());
        assert_eq!(
            check("EmbeddedSata", json!("Nvme")),
            ["EmbeddedSata: \"Nvme\" is not in the list of acceptable values (Raid, Ahci)"]
        );
        assert!(check("NumCores", json!(8)).is_empty() && check("NumCores", json!("8")).is_empty());
        assert_eq!(check("NumCores", json!(65)), ["NumCores: 65 is outside 1..64"]);
        assert_eq!(check("NumCores", json!("many")), ["NumCores: \"many\" is not an integer"]);
        assert_eq!(check("AssetTag", json!("123456789")), ["AssetTag: longer than its 8 characters"]);
        assert_eq!(check("SerialNumber", json!("x")), ["SerialNumber is read-only on this BMC"]);
        assert!(check("Unknown", json!("x")).is_empty(), "what the registry does not list is the BMC's to judge");
    }

    #[test]
    fn values_compare_as_the_bmc_reports_them() {
        assert!(same(&json!("Enabled"), &json!("Enabled")));
        assert!(same(&json!(10), &json!("10")), "numbers as strings");
        assert!(same(&json!(true), &json!("true")), "booleans as strings");
        assert!(!same(&json!("Enabled"), &json!("enabled")), "values are exact");
        assert!(!same(&json!(10), &json!(11)));
        let want = settings(json!({"A": "x", "B": 2, "C": "gone"}));
        let have = settings(json!({"A": "x", "B": "3"}));
        let diff = differing(&want, &have);
        assert_eq!(diff.len(), 2);
        assert_eq!(describe(&diff), "B (wanted 2, is \"3\"), C (no such attribute on this BMC)");
        assert!(differing(&want, &settings(json!({"A": "x", "B": 2, "C": "gone"}))).is_empty());
    }
}
