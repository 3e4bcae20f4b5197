//! One subscription's worker: reads the event log after the last event delivered, POSTs each
//! event that passes the filter (one at a time, in order), retries a failure after 1 s,
//! doubling up to `webhooks.retry_max`, and keeps its place in the store once per page read.
//! A receiver that has not taken one event for `webhooks.disable_after` is disabled, with a
//! `webhook.disabled` event on the machine of the event it could not take.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{post, sign, Webhooks};
use crate::cmdb::{now_ms, CmdbError, Event, EventFilter, EventKind};
use rackboot_model::webhooks::Webhook;

/// Events read per page, and log entries looked at per read, at most.
const PAGE: usize = 100;
const SCAN: usize = 10_000;
/// How often a caught-up worker looks at the log without being woken (a shared store's other
/// appliances write events this one hears of only by reading).
const IDLE: Duration = Duration::from_secs(10);

/// How one event's delivery ended.
enum Outcome {
    /// Taken, with its status, when, and whether attempts had failed before.
    Delivered { status: u16, at: u64, after_failures: bool },
    /// The token was cancelled, or the subscription is gone or disabled.
    Stop,
}

/// Delivers `hook`'s events until `stop` is cancelled or the subscription is disabled.
pub async fn run(svc: Arc<Webhooks>, hook: Webhook, stop: CancellationToken) {
    let id = hook.id;
    let setup = (|| {
        let target = post::check_url(&hook.url, &svc.cfg.allow_http).map_err(|e| format!("url: {e}"))?;
        let tls = post::connector(&hook.tls, &svc.cfg).map_err(|e| format!("tls: {e:#}"))?;
        let secret = svc
            .sealer
            .open(&hook.secret_sealed, &Webhook::seal_binding(id))
            .map_err(|e| format!("opening the secret (was the data key replaced?): {e}"))?;
        Ok::<_, String>((target, tls, secret))
    })();
    let (target, tls, secret) = match setup {
        Ok(s) => s,
        Err(error) => {
            // Said in its status; nothing is delivered until the subscription is changed.
            tracing::warn!(webhook = id, %error, "webhook cannot deliver");
            let _ = svc.cmdb.update_webhook(id, move |w| note_failure(w, None, error), None).await;
            stop.cancelled().await;
            return;
        }
    };
    let w = Worker { svc: svc.clone(), hook, target, tls, secret };
    w.deliver_all(stop.clone()).await;
    // However it ended, the supervisor sees it at once: a worker still wanted is started again.
    stop.cancel();
    svc.changed.notify_one();
}

struct Worker {
    svc: Arc<Webhooks>,
    hook: Webhook,
    target: post::Target,
    tls: tokio_rustls::TlsConnector,
    secret: Vec<u8>,
}

impl Worker {
    async fn deliver_all(self, stop: CancellationToken) {
        let cmdb = &self.svc.cmdb;
        let id = self.hook.id;
        let mut live = cmdb.subscribe_events();
        let mut cursor = self.hook.status.delivered_seq;
        let mut delivered = 0u64;
        let mut last_ok = None;
        let kinds = EventFilter { kinds: self.hook.filter.kinds.clone(), ..Default::default() };
        loop {
            let Ok(head) = cmdb.event_head().await else {
                if self.pause(&stop, Duration::from_secs(5)).await {
                    continue;
                }
                return;
            };
            // A restored or recreated store starts its numbers again: go on from its newest.
            if cursor > head {
                cursor = head;
            }
            let (events, next) = match cmdb.event_log(kinds.clone(), cursor, PAGE, SCAN).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(webhook = id, %error, "reading the event log");
                    if self.pause(&stop, Duration::from_secs(5)).await {
                        continue;
                    }
                    return;
                }
            };
            let before = cursor;
            for e in &events {
                let (tags, pool) = (cmdb.machine_tags(e.machine_id), cmdb.machine_pool(e.machine_id));
                if self.hook.filter.matches(e, &tags, pool.as_deref()) {
                    match self.deliver(e, &stop).await {
                        Outcome::Delivered { status, at, after_failures } => {
                            delivered += 1;
                            last_ok = Some((at, status));
                            // The failures end now, in the store too, before the next attempt
                            // could count from their start.
                            if after_failures && !self.save(e.seq, std::mem::take(&mut delivered), last_ok).await {
                                return;
                            }
                        }
                        Outcome::Stop => {
                            self.save(cursor, delivered, last_ok).await;
                            return;
                        }
                    }
                }
                cursor = e.seq;
            }
            // With nothing more to read, everything up to `head` was looked at.
            cursor = match next {
                Some(n) => n.max(cursor),
                None => head.max(cursor),
            };
            if (cursor != before || delivered > 0) && !self.save(cursor, std::mem::take(&mut delivered), last_ok).await
            {
                return;
            }
            if next.is_some() {
                continue;
            }
            tokio::select! {
                _ = live.recv() => {}
                _ = tokio::time::sleep(IDLE) => {}
                _ = stop.cancelled() => return,
            }
        }
    }

    /// POSTs one event until the receiver takes it (2xx), retrying with backoff.
    async fn deliver(&self, e: &Event, stop: &CancellationToken) -> Outcome {
        let cfg = &self.svc.cfg;
        let id = self.hook.id;
        let body = Bytes::from(serde_json::to_vec(e).expect("events serialize"));
        let mut wait = Duration::from_secs(1);
        let mut failed = false;
        loop {
            if stop.is_cancelled() {
                return Outcome::Stop;
            }
            let t = now_ms() / 1000;
            let headers = [
                (sign::HEADER, sign::signature(&self.secret, t, &body)),
                ("rackboot-webhook", id.to_string()),
                ("rackboot-delivery", format!("{id}.{}", e.seq)),
                ("rackboot-event", e.kind.to_string()),
            ];
            let answer = tokio::select! {
                a = post::post(&self.target, &self.tls, &headers, body.clone(), cfg.request_timeout) => a,
                _ = stop.cancelled() => return Outcome::Stop,
            };
            let at = now_ms();
            match answer {
                Ok(status) if (200..300).contains(&status) => {
                    self.svc.count(true);
                    let after_failures = failed || self.hook.status.failing_since_ms.is_some();
                    return Outcome::Delivered { status, at, after_failures };
                }
                answer => {
                    self.svc.count(false);
                    let (status, error) = match answer {
                        Ok(s) => (Some(s), format!("the receiver answered {s}")),
                        Err(e) => (None, e),
                    };
                    tracing::debug!(webhook = id, seq = e.seq, %error, "webhook delivery failed");
                    let recorded =
                        self.svc.cmdb.update_webhook(id, move |w| note_failure(w, status, error), None).await;
                    let Ok(hook) = recorded else { return Outcome::Stop };
                    failed = true;
                    if !hook.enabled {
                        return Outcome::Stop;
                    }
                    let since = hook.status.failing_since_ms.unwrap_or(at);
                    if at.saturating_sub(since) >= cfg.disable_after.as_millis() as u64 {
                        self.disable(e, since, hook.status.last_error.unwrap_or_default()).await;
                        return Outcome::Stop;
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.cancelled() => return Outcome::Stop,
            }
            wait = (wait * 2).min(cfg.retry_max);
        }
    }

    /// Stops the subscription after failing for too long, saying so on the machine's timeline.
    async fn disable(&self, e: &Event, since: u64, error: String) {
        let id = self.hook.id;
        let hours = self.svc.cfg.disable_after.as_secs() as f64 / 3600.0;
        let host = &self.target.host;
        tracing::warn!(webhook = id, %host, %error, "webhook disabled: its receiver failed for {hours:.1} h");
        let reason = format!("the receiver failed for {hours:.1} h without taking an event; last: {error}");
        let detail = json!({"webhook": id, "seq": e.seq, "failing_since_ms": since, "error": error});
        let event = Some((e.machine_id, EventKind::WebhookDisabled, detail));
        let setup = self.hook.clone();
        let change = move |w: &mut Webhook| {
            if !super::same_setup(w, &setup) {
                return Err(CmdbError::Conflict("the subscription changed".into()));
            }
            w.enabled = false;
            w.status.disabled_reason = Some(reason);
            Ok(())
        };
        if let Err(error) = self.svc.cmdb.update_webhook(id, change, event).await {
            tracing::warn!(webhook = id, %error, "recording the webhook's stop");
        }
    }

    /// Keeps the place reached (and the last success, which ends any failures); false when the
    /// subscription is gone.
    async fn save(&self, cursor: u64, delivered: u64, last_ok: Option<(u64, u16)>) -> bool {
        let setup = self.hook.clone();
        let change = move |w: &mut Webhook| {
            // A worker for a changed subscription keeps nothing: its successor goes on.
            if !super::same_setup(w, &setup) {
                return Err(CmdbError::Conflict("the subscription changed".into()));
            }
            let s = &mut w.status;
            s.delivered_seq = s.delivered_seq.max(cursor);
            s.delivered += delivered;
            if let Some((at, status)) = last_ok {
                if s.last_ok_ms.is_none_or(|t| t <= at) {
                    (s.last_attempt_ms, s.last_ok_ms, s.last_status) = (Some(at), Some(at), Some(status));
                    (s.last_error, s.failing_since_ms) = (None, None);
                }
            }
            Ok(())
        };
        match self.svc.cmdb.update_webhook(self.hook.id, change, None).await {
            Ok(_) => true,
            Err(CmdbError::NotFound(_) | CmdbError::Conflict(_)) => false,
            Err(error) => {
                tracing::warn!(webhook = self.hook.id, %error, "saving the webhook's place");
                true
            }
        }
    }

    /// Waits `d` unless stopped first; whether to go on.
    async fn pause(&self, stop: &CancellationToken, d: Duration) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = stop.cancelled() => false,
        }
    }
}

/// Records a failed attempt (`status` if the receiver answered at all).
fn note_failure(w: &mut Webhook, status: Option<u16>, error: String) -> Result<(), CmdbError> {
    let at = now_ms();
    let s = &mut w.status;
    s.last_attempt_ms = Some(at);
    s.last_status = status;
    s.last_error = Some(error.chars().take(500).collect());
    s.failing_since_ms.get_or_insert(at);
    Ok(())
}
