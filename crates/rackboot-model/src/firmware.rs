//! What a machine's BMC says of its firmware (Redfish): the BIOS's attributes and those waiting
//! for the next reboot, the BIOS version, and the firmware inventory, each where the BMC offers
//! it. Read on an operator's request and kept on the BMC record; bounded, since a BMC's
//! answers are not trusted to be small.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// BIOS attributes kept, at most.
pub const MAX_ATTRIBUTES: usize = 2048;
/// Firmware inventory entries kept, at most.
pub const MAX_INVENTORY: usize = 128;
/// A kept string's length, at most (characters).
pub const MAX_TEXT: usize = 256;

/// One read of a machine's firmware through its BMC.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, ToSchema)]
pub struct FirmwareReport {
    /// When it was read (Unix ms).
    pub read_at_ms: u64,
    /// The system's `BiosVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bios_version: Option<String>,
    /// The BIOS's current attributes (Redfish `Bios`); absent: the BMC offers none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub bios: Option<BTreeMap<String, Value>>,
    /// The attribute registry the BMC names for them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute_registry: Option<String>,
    /// Attributes set and waiting for the next reboot (the `@Redfish.Settings` object), where
    /// they differ from the current ones.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub bios_pending: BTreeMap<String, Value>,
    /// The firmware inventory (`UpdateService/FirmwareInventory`); absent: not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inventory: Option<Vec<FirmwareItem>>,
    /// What could not be read and why, or was cut to the bounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One firmware component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FirmwareItem {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updateable: Option<bool>,
    /// `Status.Health` (OK, Warning, Critical).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    /// The entry's Redfish path (an update's target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A string from a BMC, cut to [`MAX_TEXT`] characters and stripped of control characters.
pub fn text(v: &Value) -> Option<String> {
    let s = v.as_str()?;
    Some(s.chars().filter(|c| !c.is_control()).take(MAX_TEXT).collect())
}

/// A BIOS attribute map from a BMC's `Attributes`: strings (cut), numbers, booleans and nulls
/// kept, anything else dropped; at most [`MAX_ATTRIBUTES`]. The second value says how many
/// were left out.
pub fn attributes(v: &Value) -> (BTreeMap<String, Value>, usize) {
    let mut out = BTreeMap::new();
    let mut dropped = 0;
    for (k, v) in v.as_object().into_iter().flatten() {
        let kept = match v {
            Value::String(_) => text(v).map(Value::String),
            Value::Number(_) | Value::Bool(_) | Value::Null => Some(v.clone()),
            _ => None,
        };
        match kept {
            Some(v) if out.len() < MAX_ATTRIBUTES && k.len() <= MAX_TEXT => {
                out.insert(k.clone(), v);
            }
            _ => dropped += 1,
        }
    }
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn attributes_are_bounded_and_plain() {
        let long = "x".repeat(1000);
        let (kept, dropped) = attributes(&json!({"BootMode": "Uefi", "NumCores": 10, "Quiet": true,
            "Nested": {"a": 1}, "List": [1], "Long": long, "Ctl": "a\u{7}b"}));
        assert_eq!(kept["BootMode"], "Uefi");
        assert_eq!(kept["NumCores"], 10);
        assert_eq!(kept["Long"].as_str().unwrap().len(), MAX_TEXT);
        assert_eq!(kept["Ctl"], "ab");
        assert_eq!(dropped, 2, "an object and a list are no attribute values");
        let many: serde_json::Map<String, Value> =
            (0..MAX_ATTRIBUTES + 5).map(|i| (format!("A{i}"), json!(i))).collect();
        let (kept, dropped) = attributes(&Value::Object(many));
        assert_eq!((kept.len(), dropped), (MAX_ATTRIBUTES, 5));
        assert_eq!(attributes(&json!("not an object")).0.len(), 0);
    }
}
