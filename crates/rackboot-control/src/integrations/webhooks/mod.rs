//! Webhooks: subscriptions an admin makes (checked here: URL, filter, TLS, secret), and their
//! delivery: one worker per enabled subscription, started and stopped by [`Webhooks::serve`]
//! as subscriptions change. Each worker POSTs matching events one at a time, in sequence
//! order, signed ([`sign`]), retrying with backoff, and keeps how far it came in the store, so
//! a restart goes on after the last event delivered: at least once, in order, no gap.

pub mod deliver;
pub mod post;
pub mod sign;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::cmdb::{Cmdb, CmdbError, EventKind};
use crate::config::WebhooksConfig;
use crate::secrets::Sealer;
use rackboot_model::webhooks::{DeliveryStatus, NewWebhook, Webhook, WebhookFilter, WebhookPatch, WebhookTls};

/// How often the supervisor looks at the subscriptions even when nothing told it to.
const RESCAN: Duration = Duration::from_secs(30);

/// The webhook service: what the API changes subscriptions through, and their delivery.
pub struct Webhooks {
    cmdb: Cmdb,
    sealer: Arc<Sealer>,
    cfg: WebhooksConfig,
    /// Woken when a subscription changed, so its worker is restarted at once.
    changed: Notify,
    metrics: rackboot_base::metrics::Metrics,
}

/// A subscription just made, with its secret (answered this once, never again).
pub struct Created {
    pub webhook: Webhook,
    pub secret: String,
}

impl Webhooks {
    pub fn new(
        cfg: WebhooksConfig,
        cmdb: Cmdb,
        sealer: Arc<Sealer>,
        metrics: rackboot_base::metrics::Metrics,
    ) -> Webhooks {
        Webhooks { cmdb, sealer, cfg, changed: Notify::new(), metrics }
    }

    /// Counts one delivery attempt's outcome.
    fn count(&self, ok: bool) {
        let outcome = if ok { "ok" } else { "failed" };
        self.metrics
            .webhook_deliveries
            .get_or_create(&rackboot_base::metrics::OutcomeLabel { outcome: outcome.into() })
            .inc();
    }

    /// Sets the gauges `/metrics` shows: subscriptions failing, and stopped for failing.
    pub async fn refresh_metrics(&self) {
        let Ok(hooks) = self.cmdb.webhooks().await else { return };
        let failing = hooks.iter().filter(|w| w.enabled && w.status.failing_since_ms.is_some()).count();
        let disabled = hooks.iter().filter(|w| !w.enabled && w.status.disabled_reason.is_some()).count();
        self.metrics.webhooks_failing.set(failing as i64);
        self.metrics.webhooks_disabled.set(disabled as i64);
    }

    /// Makes a subscription; delivery starts with the next event.
    pub async fn create(&self, new: NewWebhook, by: String) -> Result<Created, CmdbError> {
        let NewWebhook { url, filter, tls, secret } = new;
        self.check(&url, &filter, &tls)?;
        let secret = match secret {
            Some(s) => {
                if !(16..=256).contains(&s.len()) || !s.bytes().all(|b| b.is_ascii_graphic()) {
                    return Err(CmdbError::Invalid("secret must be 16-256 printable characters, no spaces".into()));
                }
                s
            }
            None => {
                let mut raw = [0u8; 32];
                getrandom::fill(&mut raw).map_err(|e| CmdbError::Storage(format!("the random source: {e}")))?;
                rackboot_base::secret::hex(&raw)
            }
        };
        let head = self.cmdb.event_head().await?;
        let sealer = self.sealer.clone();
        let plain = secret.clone();
        let webhook = self
            .cmdb
            .add_webhook(self.cfg.max_subscriptions, move |id| {
                let secret_sealed = sealer
                    .seal(plain.as_bytes(), &Webhook::seal_binding(id))
                    .map_err(|e| CmdbError::Storage(format!("sealing the secret: {e}")))?;
                Ok(Webhook {
                    id,
                    url,
                    filter,
                    tls,
                    enabled: true,
                    created_at: crate::cmdb::now_secs(),
                    created_by: by,
                    status: DeliveryStatus { delivered_seq: head, ..Default::default() },
                    secret_sealed,
                })
            })
            .await?;
        self.changed.notify_one();
        Ok(Created { webhook, secret })
    }

    /// Changes a subscription; its worker restarts with the change.
    pub async fn change(&self, id: u64, patch: WebhookPatch) -> Result<Webhook, CmdbError> {
        let old = self.cmdb.webhook(id).await?;
        let url = patch.url.unwrap_or(old.url);
        let filter = patch.filter.unwrap_or(old.filter);
        let tls = patch.tls.unwrap_or(old.tls);
        self.check(&url, &filter, &tls)?;
        let enabled = patch.enabled;
        let hook = self
            .cmdb
            .update_webhook(
                id,
                move |w| {
                    if (&w.url, &w.filter, &w.tls) != (&url, &filter, &tls) {
                        // A new receiver or check starts with a clean slate.
                        let s = &mut w.status;
                        (s.failing_since_ms, s.last_error, s.last_status) = (None, None, None);
                    }
                    (w.url, w.filter, w.tls) = (url, filter, tls);
                    match enabled {
                        Some(true) if !w.enabled => {
                            w.enabled = true;
                            let s = &mut w.status;
                            (s.disabled_reason, s.failing_since_ms, s.last_error) = (None, None, None);
                        }
                        Some(false) => w.enabled = false,
                        _ => {}
                    }
                    Ok(())
                },
                None,
            )
            .await?;
        self.changed.notify_one();
        Ok(hook)
    }

    /// Deletes a subscription; its worker stops.
    pub async fn delete(&self, id: u64) -> Result<(), CmdbError> {
        self.cmdb.delete_webhook(id).await?;
        self.changed.notify_one();
        Ok(())
    }

    /// Refuses what would never deliver: a URL against the rules, an unknown event kind, too
    /// many or bad filter entries, a CA that is no CA.
    fn check(&self, url: &str, filter: &WebhookFilter, tls: &WebhookTls) -> Result<(), CmdbError> {
        post::check_url(url, &self.cfg.allow_http).map_err(|e| CmdbError::Invalid(format!("url: {e}")))?;
        if let Some(EventKind::Other(k)) = filter.kinds.iter().find(|k| matches!(k, EventKind::Other(_))) {
            return Err(CmdbError::Invalid(format!("filter.kinds: {k:?} is not an event kind")));
        }
        let bad = |what: &str| CmdbError::Invalid(format!("filter: {what}"));
        if filter.kinds.len() > 64 || filter.states.len() > 16 || filter.tags.len() > 16 || filter.pools.len() > 16 {
            return Err(bad("at most 64 kinds, 16 states, 16 tags and 16 pools"));
        }
        if let Some(e) = filter.pools.iter().find_map(|p| rackboot_model::pools::check(p).err()) {
            return Err(bad(&e));
        }
        if filter.tags.iter().any(|t| t.is_empty() || t.chars().count() > 64) {
            return Err(bad("a tag is 1-64 characters"));
        }
        match tls {
            WebhookTls::Fingerprint { sha256 } => {
                let hex = sha256.strip_prefix("sha256:").unwrap_or("");
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                    return Err(CmdbError::Invalid("tls.sha256 must be sha256: and 64 lowercase hex digits".into()));
                }
            }
            WebhookTls::Ca { pem } if pem.len() > 65_536 => {
                return Err(CmdbError::Invalid("tls.pem: at most 64 KiB".into()));
            }
            WebhookTls::Ca { pem } => {
                crate::tls::client_config(pem.as_bytes()).map_err(|e| CmdbError::Invalid(format!("tls.pem: {e:#}")))?;
            }
            WebhookTls::System => {}
        }
        Ok(())
    }

    /// Runs a worker for every enabled subscription until `token` is cancelled, restarting a
    /// subscription's worker whenever it changes.
    pub async fn serve(self: Arc<Self>, token: CancellationToken) -> anyhow::Result<()> {
        // Subscription id -> (what its worker was started with, its stop, the worker).
        let mut running: HashMap<u64, (Webhook, CancellationToken, tokio::task::JoinHandle<()>)> = HashMap::new();
        loop {
            match self.cmdb.webhooks().await {
                Ok(hooks) => {
                    let wanted: HashMap<u64, Webhook> =
                        hooks.into_iter().filter(|h| h.enabled).map(|h| (h.id, h)).collect();
                    let ended: Vec<u64> = running
                        .iter()
                        .filter(|(id, (started, stop, _))| {
                            !wanted.get(id).is_some_and(|w| same_setup(w, started)) || stop.is_cancelled()
                        })
                        .map(|(id, _)| *id)
                        .collect();
                    for id in ended {
                        let (_, stop, worker) = running.remove(&id).expect("listed");
                        stop.cancel();
                        // Never two workers on one subscription: the old one has stopped (its
                        // POST is raced against the stop) before a new one starts.
                        let _ = worker.await;
                    }
                    for (id, hook) in wanted {
                        if running.contains_key(&id) {
                            continue;
                        }
                        let stop = token.child_token();
                        let worker = tokio::spawn(deliver::run(self.clone(), hook.clone(), stop.clone()));
                        running.insert(id, (hook, stop, worker));
                    }
                }
                Err(error) => tracing::warn!(%error, "reading the webhook subscriptions"),
            }
            tokio::select! {
                _ = self.changed.notified() => {}
                _ = tokio::time::sleep(RESCAN) => {}
                _ = token.cancelled() => {
                    for (_, (_, _, worker)) in running.drain() {
                        let _ = worker.await;
                    }
                    return Ok(());
                }
            }
        }
    }
}

/// Whether two versions of a subscription deliver the same way (status aside).
pub(crate) fn same_setup(a: &Webhook, b: &Webhook) -> bool {
    a.url == b.url && a.filter == b.filter && a.tls == b.tls && a.secret_sealed == b.secret_sealed
}
