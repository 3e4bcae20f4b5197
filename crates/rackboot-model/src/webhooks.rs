//! Webhook subscriptions: where events are POSTed, which ones, how the receiver's certificate is
//! checked, and how far delivery has come. The secret is kept sealed and never leaves the
//! appliance after the answer that created it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::events::EventKind;
use crate::records::{Event, MachineState};

/// Which events a subscription gets; an empty list lets everything through on that count.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookFilter {
    /// Event kinds (e.g. `machine.state`); empty: every kind.
    #[serde(default)]
    #[schema(value_type = Vec<String>, max_items = 64)]
    pub kinds: Vec<EventKind>,
    /// Only events recorded while their machine was in one of these states; empty: any.
    #[serde(default)]
    #[schema(max_items = 16)]
    pub states: Vec<MachineState>,
    /// Only events of machines carrying one of these tags; empty: any machine.
    #[serde(default)]
    #[schema(value_type = Vec<crate::records::Tag>, max_items = 16)]
    pub tags: Vec<String>,
    /// Only events of machines now in one of these resource pools; empty: any pool.
    #[serde(default)]
    #[schema(max_items = 16)]
    pub pools: Vec<String>,
}

impl WebhookFilter {
    /// Whether `e`, of a machine carrying `tags` in `pool` (`None`: it is gone), passes.
    pub fn matches(&self, e: &Event, tags: &[String], pool: Option<&str>) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&e.kind))
            && (self.states.is_empty() || e.state.is_some_and(|s| self.states.contains(&s)))
            && (self.tags.is_empty() || self.tags.iter().any(|t| tags.contains(t)))
            && (self.pools.is_empty() || pool.is_some_and(|p| self.pools.iter().any(|q| q == p)))
    }
}

/// How the receiver's TLS certificate is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "check", deny_unknown_fields)]
pub enum WebhookTls {
    /// Against the system's CA bundle (`webhooks.ca_bundle`).
    #[default]
    System,
    /// Against this CA (PEM) only.
    Ca {
        #[schema(max_length = 65536)]
        pem: String,
    },
    /// The one certificate whose SHA-256 (of its DER) is this, as `sha256:<64 hex>`; its
    /// handshake signature is still checked.
    Fingerprint {
        #[schema(pattern = "^sha256:[0-9a-f]{64}$")]
        sha256: String,
    },
}

/// How far delivery has come, and how the last attempt went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeliveryStatus {
    /// The sequence number of the newest event acknowledged (2xx) or passed over by the filter;
    /// delivery goes on after it.
    pub delivered_seq: u64,
    /// Events acknowledged since the subscription was made.
    pub delivered: u64,
    /// Unix milliseconds of the last attempt, the last 2xx.
    pub last_attempt_ms: Option<u64>,
    pub last_ok_ms: Option<u64>,
    /// The last answer's HTTP status, if there was an answer.
    pub last_status: Option<u16>,
    /// Why the last attempt failed; null once one succeeds.
    pub last_error: Option<String>,
    /// Unix milliseconds of the first failure in the current run of failures.
    pub failing_since_ms: Option<u64>,
    /// Why delivery was stopped (a receiver failing for too long), if it was.
    pub disabled_reason: Option<String>,
}

/// A subscription.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    pub id: u64,
    /// Where deliveries are POSTed.
    pub url: String,
    pub filter: WebhookFilter,
    pub tls: WebhookTls,
    /// False: nothing is delivered (set by an admin, or after failing too long).
    pub enabled: bool,
    /// Unix seconds, and by whom.
    pub created_at: u64,
    pub created_by: String,
    pub status: DeliveryStatus,
    /// The signing secret, sealed with the appliance's data key; stored, never in an answer
    /// (see [`Webhook::shown`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(ignore)]
    pub secret_sealed: String,
}

impl Webhook {
    /// The subscription as the API answers it: without its sealed secret.
    pub fn shown(mut self) -> Webhook {
        self.secret_sealed.clear();
        self
    }

    /// What the sealed secret is bound to, so it cannot be moved to another subscription.
    pub fn seal_binding(id: u64) -> String {
        format!("webhook:{id}")
    }
}

/// A subscription to make.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWebhook {
    /// `https://...`, or `http://...` to loopback or a network in `webhooks.allow_http`; no
    /// user or password in it.
    #[schema(max_length = 2048, pattern = "^https?://[^@#\\s]+$")]
    pub url: String,
    #[serde(default)]
    pub filter: WebhookFilter,
    #[serde(default)]
    pub tls: WebhookTls,
    /// The signing secret (16-256 printable characters); without one, rackboot makes one and
    /// answers it once.
    #[serde(default)]
    #[schema(min_length = 16, max_length = 256, pattern = "^[!-~]+$")]
    pub secret: Option<String>,
}

/// A change to a subscription; absent fields stay.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookPatch {
    #[serde(default)]
    #[schema(max_length = 2048, pattern = "^https?://[^@#\\s]+$")]
    pub url: Option<String>,
    #[serde(default)]
    pub filter: Option<WebhookFilter>,
    #[serde(default)]
    pub tls: Option<WebhookTls>,
    /// True enables it again (clearing its failures; delivery goes on after the last event
    /// delivered); false stops it.
    #[serde(default)]
    pub enabled: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, state: Option<MachineState>) -> Event {
        Event { seq: 1, machine_id: 1, at_ms: 0, kind, detail: serde_json::json!({}), state }
    }

    #[test]
    fn a_filter_passes_what_every_listed_count_allows() {
        let any = WebhookFilter::default();
        assert!(any.matches(&event(EventKind::DhcpAck, None), &[], None));
        let f = WebhookFilter {
            kinds: vec![EventKind::MachineState],
            states: vec![MachineState::Installed],
            tags: vec!["gpu".into()],
            pools: vec!["team-a".into()],
        };
        let tags = ["gpu".to_string()];
        let a = Some("team-a");
        assert!(f.matches(&event(EventKind::MachineState, Some(MachineState::Installed)), &tags, a));
        assert!(!f.matches(&event(EventKind::DhcpAck, Some(MachineState::Installed)), &tags, a));
        assert!(!f.matches(&event(EventKind::MachineState, Some(MachineState::Discovered)), &tags, a));
        assert!(!f.matches(&event(EventKind::MachineState, None), &tags, a));
        assert!(!f.matches(&event(EventKind::MachineState, Some(MachineState::Installed)), &["cpu".into()], a));
        // Another pool's machine, or one that is gone, is not the subscription's.
        assert!(!f.matches(&event(EventKind::MachineState, Some(MachineState::Installed)), &tags, Some("team-b")));
        assert!(!f.matches(&event(EventKind::MachineState, Some(MachineState::Installed)), &tags, None));
    }

    #[test]
    fn the_sealed_secret_is_stored_but_never_shown() {
        let w = Webhook {
            id: 1,
            url: "https://x/".into(),
            filter: WebhookFilter::default(),
            tls: WebhookTls::System,
            enabled: true,
            created_at: 0,
            created_by: "admin".into(),
            status: DeliveryStatus::default(),
            secret_sealed: "SEALED".into(),
        };
        assert!(serde_json::to_string(&w).unwrap().contains("SEALED"));
        assert!(!serde_json::to_string(&w.shown()).unwrap().contains("SEALED"));
    }
}
