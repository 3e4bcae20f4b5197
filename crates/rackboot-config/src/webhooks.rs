//! `[webhooks]`: where plain HTTP receivers are allowed, the CA bundle receivers are checked
//! against, and how long delivery keeps trying.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;

use crate::Ipv4Net;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WireWebhooks {
    pub deliver: bool,
    pub allow_http: Vec<String>,
    pub ca_bundle: PathBuf,
    pub request_timeout_secs: u64,
    pub retry_max_secs: u64,
    pub disable_after_secs: u64,
    pub max_subscriptions: usize,
}

impl Default for WireWebhooks {
    fn default() -> Self {
        WireWebhooks {
            deliver: true,
            allow_http: Vec::new(),
            ca_bundle: "/etc/ssl/certs/ca-certificates.crt".into(),
            request_timeout_secs: 10,
            retry_max_secs: 300,
            disable_after_secs: 86_400,
            max_subscriptions: 64,
        }
    }
}

/// Validated `[webhooks]` settings.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhooksConfig {
    /// Whether this appliance delivers (on a shared store, exactly one of them should).
    pub deliver: bool,
    /// Networks a receiver may be reached over plain HTTP in (loopback always may).
    pub allow_http: Vec<Ipv4Net>,
    /// The CA bundle a receiver's certificate is checked against unless its subscription pins
    /// a CA or a fingerprint.
    pub ca_bundle: PathBuf,
    /// One delivery (connect, TLS, answer), at most.
    pub request_timeout: Duration,
    /// The longest wait between two attempts (the first is 1 s, doubling).
    pub retry_max: Duration,
    /// A receiver failing this long without a success is disabled.
    pub disable_after: Duration,
    pub max_subscriptions: usize,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        WebhooksConfig::try_from(WireWebhooks::default()).expect("the defaults are valid")
    }
}

impl TryFrom<WireWebhooks> for WebhooksConfig {
    type Error = anyhow::Error;

    fn try_from(w: WireWebhooks) -> anyhow::Result<Self> {
        let WireWebhooks {
            deliver,
            allow_http,
            ca_bundle,
            request_timeout_secs,
            retry_max_secs,
            disable_after_secs,
            max_subscriptions,
        } = w;
        let allow_http = allow_http
            .iter()
            .map(|s| {
                let net: Ipv4Net = s.parse().with_context(|| format!("webhooks.allow_http: {s:?} is not a CIDR"))?;
                anyhow::ensure!(net.network() == net.addr(), "webhooks.allow_http: {s:?} has host bits set");
                Ok(net)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(ca_bundle.is_absolute(), "webhooks.ca_bundle must be an absolute path");
        anyhow::ensure!((1..=120).contains(&request_timeout_secs), "webhooks.request_timeout_secs must be 1..=120");
        anyhow::ensure!((1..=3600).contains(&retry_max_secs), "webhooks.retry_max_secs must be 1..=3600");
        anyhow::ensure!(
            (10..=30 * 86_400).contains(&disable_after_secs),
            "webhooks.disable_after_secs must be 10..=2592000 (30 days)"
        );
        anyhow::ensure!((1..=1000).contains(&max_subscriptions), "webhooks.max_subscriptions must be 1..=1000");
        Ok(WebhooksConfig {
            deliver,
            allow_http,
            ca_bundle,
            request_timeout: Duration::from_secs(request_timeout_secs),
            retry_max: Duration::from_secs(retry_max_secs),
            disable_after: Duration::from_secs(disable_after_secs),
            max_subscriptions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_are_refused_with_their_key() {
        let bad = |w: WireWebhooks| WebhooksConfig::try_from(w).unwrap_err().to_string();
        assert!(bad(WireWebhooks { allow_http: vec!["10.0.0.1/8".into()], ..Default::default() }).contains("host bits"));
        assert!(bad(WireWebhooks { allow_http: vec!["nope".into()], ..Default::default() }).contains("allow_http"));
        assert!(bad(WireWebhooks { disable_after_secs: 1, ..Default::default() }).contains("disable_after_secs"));
        let ok = WebhooksConfig::try_from(WireWebhooks {
            allow_http: vec!["198.18.0.0/15".into(), "198.18.0.7/32".into()],
            ..Default::default()
        })
        .unwrap();
        assert_eq!(ok.allow_http.len(), 2);
    }
}
