//! `[dhcp.pair]`: two appliances serving one VLAN as a hot-standby DHCP pair.

use std::time::Duration;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WirePair {
    pub name: String,
    pub role: String,
    pub takeover_secs: u64,
}

impl Default for WirePair {
    fn default() -> Self {
        WirePair { name: String::new(), role: "primary".into(), takeover_secs: 5 }
    }
}

/// Which one of the pair this appliance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairRole {
    /// Answers whenever it runs and reaches the store.
    Primary,
    /// Answers only while the primary has not been heard from for `takeover`.
    Standby,
}

impl PairRole {
    pub fn as_str(self) -> &'static str {
        match self {
            PairRole::Primary => "primary",
            PairRole::Standby => "standby",
        }
    }
}

/// A validated pair.
#[derive(Debug, Clone, PartialEq)]
pub struct PairConfig {
    /// The pair's name (one per VLAN), shared by both appliances' configs.
    pub name: String,
    pub role: PairRole,
    /// How long the primary may go unheard before the standby answers.
    pub takeover: Duration,
}

impl PairConfig {
    /// `None` for no pair (an empty name).
    pub fn from_wire(w: WirePair) -> anyhow::Result<Option<Self>> {
        let WirePair { name, role, takeover_secs } = w;
        if name.is_empty() {
            return Ok(None);
        }
        anyhow::ensure!(
            name.len() <= 63 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "dhcp.pair.name {name:?}: up to 63 letters, digits, - and _"
        );
        let role = match role.as_str() {
            "primary" => PairRole::Primary,
            "standby" => PairRole::Standby,
            other => anyhow::bail!("dhcp.pair.role must be \"primary\" or \"standby\", not {other:?}"),
        };
        anyhow::ensure!((2..=300).contains(&takeover_secs), "dhcp.pair.takeover_secs must be 2 to 300");
        Ok(Some(PairConfig { name, role, takeover: Duration::from_secs(takeover_secs) }))
    }
}
