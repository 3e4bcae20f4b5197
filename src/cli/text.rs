//! How the admin commands print the API's values and put names into its paths.

use serde_json::Value;

/// A JSON value as a table cell: strings bare, null as `-`.
pub fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// `s` percent-encoded for a URL path segment (unreserved characters and `:` kept).
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
