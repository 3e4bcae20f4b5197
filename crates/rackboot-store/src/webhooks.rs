//! Webhook subscriptions, each with its delivery status (how far it has come). The store keeps
//! them; what they match, when they are disabled and how they are signed is the control
//! layer's. The table is created by the first save.

use super::events::push_event;
use super::kv::Def;
use super::store::{decode, Record, META};
use super::{Cmdb, CmdbError, EventKind};
use rackboot_model::webhooks::Webhook;

/// Subscription id -> JSON `webhooks::Webhook`.
pub const WEBHOOKS: Def<u64, &[u8]> = Def::new("webhooks");
/// The next subscription id: kept so a deleted subscription never lends its id.
const KEY_NEXT_WEBHOOK: &str = "next_webhook_id";

impl Record for Webhook {
    const TABLE: Def<u64, &'static [u8]> = WEBHOOKS;
    const NAME: &'static str = "webhook";
    fn key(&self) -> u64 {
        self.id
    }
}

/// An event to record with a change: (machine id, kind, detail).
pub type WithEvent = Option<(u64, EventKind, serde_json::Value)>;

impl Cmdb {
    /// Every subscription, in id order.
    pub async fn webhooks(&self) -> Result<Vec<Webhook>, CmdbError> {
        self.read(|rtx| {
            let Some(t) = rtx.open_table_if_any(WEBHOOKS)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for row in t.range(0..)? {
                out.push(decode(row?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    /// One subscription.
    pub async fn webhook(&self, id: u64) -> Result<Webhook, CmdbError> {
        self.read(move |rtx| {
            let found = match rtx.open_table_if_any(WEBHOOKS)? {
                Some(t) => t.get(id)?.map(|v| decode(v.value())).transpose()?,
                None => None,
            };
            found.ok_or_else(|| CmdbError::NotFound(format!("webhook {id}")))
        })
        .await
    }

    /// Stores the subscription `build` makes from its new id (it seals the secret to it);
    /// refused with `Conflict` when `max` subscriptions exist already.
    pub async fn add_webhook<F>(&self, max: usize, build: F) -> Result<Webhook, CmdbError>
    where
        F: FnOnce(u64) -> Result<Webhook, CmdbError> + Send + 'static,
    {
        self.write(move |ctx| {
            let count = ctx.t.tx.open_table(WEBHOOKS)?.range(0..)?.count();
            if count >= max {
                return Err(CmdbError::Conflict(format!("{count} webhooks exist already (at most {max})")));
            }
            let mut meta = ctx.t.tx.open_table(META)?;
            let id = meta.get(KEY_NEXT_WEBHOOK)?.map_or(1, |v| v.value());
            let hook = build(id)?;
            meta.insert(KEY_NEXT_WEBHOOK, id + 1)?;
            drop(meta);
            ctx.put(&hook)?;
            Ok(hook)
        })
        .await
    }

    /// Changes a subscription with `change` (which refuses by returning the error, before
    /// anything is written), recording `event` with it in the same transaction.
    pub async fn update_webhook<F>(&self, id: u64, change: F, event: WithEvent) -> Result<Webhook, CmdbError>
    where
        F: FnOnce(&mut Webhook) -> Result<(), CmdbError> + Send + 'static,
    {
        self.write(move |ctx| {
            let mut hook: Webhook = ctx.get(id)?;
            change(&mut hook)?;
            if let Some((machine, kind, detail)) = event {
                if ctx.find::<rackboot_model::records::Machine>(machine)?.is_some() {
                    push_event(ctx, machine, kind, detail)?;
                }
            }
            ctx.put(&hook)?;
            Ok(hook)
        })
        .await
    }

    /// Deletes a subscription.
    pub async fn delete_webhook(&self, id: u64) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let mut t = ctx.t.tx.open_table(WEBHOOKS)?;
            let found = t.remove(id)?.is_some();
            found.then_some(()).ok_or_else(|| CmdbError::NotFound(format!("webhook {id}")))
        })
        .await
    }

    /// The tags of machine `id`, from the index (none for a machine that is gone).
    pub fn machine_tags(&self, id: u64) -> Vec<String> {
        let index = self.inner.index.read().expect("index lock");
        index.by_id(id).map(|b| b.facet.tags.clone()).unwrap_or_default()
    }
}
