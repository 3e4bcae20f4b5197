//! Tang key pairs and the machines bound to them. The store keeps them; which key is advertised,
//! when a machine is re-bound and when an old key may go are the control layer's.

use super::events::push_event;
use super::kv::Def;
use super::store::{decode, Record, META};
use super::{Cmdb, CmdbError, EventKind};
use rackboot_model::tang::{TangBinding, TangKey};

/// Key id -> JSON `tang::TangKey`.
pub const TANG_KEYS: Def<u64, &[u8]> = Def::new("tang_keys");
/// Machine id -> JSON `tang::TangBinding`.
pub const TANG_BINDINGS: Def<u64, &[u8]> = Def::new("tang_bindings");
/// The next key id: a deleted key never lends its id.
const KEY_NEXT_TANG: &str = "next_tang_key_id";

impl Record for TangKey {
    const TABLE: Def<u64, &'static [u8]> = TANG_KEYS;
    const NAME: &'static str = "tang key";
    fn key(&self) -> u64 {
        self.id
    }
}

impl Record for TangBinding {
    const TABLE: Def<u64, &'static [u8]> = TANG_BINDINGS;
    const NAME: &'static str = "tang binding";
    // The record's key is its machine; its `key` field is the Tang key it is bound to.
    #[allow(clippy::misnamed_getters)]
    fn key(&self) -> u64 {
        self.machine
    }
}

/// An event to record with a change: (machine id, kind, detail).
pub type WithEvent = Option<(u64, EventKind, serde_json::Value)>;

impl Cmdb {
    /// Every Tang key, in id order (the newest last).
    pub async fn tang_keys(&self) -> Result<Vec<TangKey>, CmdbError> {
        self.all(TANG_KEYS).await
    }

    /// Every binding, in machine order.
    pub async fn tang_bindings(&self) -> Result<Vec<TangBinding>, CmdbError> {
        self.all(TANG_BINDINGS).await
    }

    async fn all<T: serde::de::DeserializeOwned + Send + 'static>(
        &self,
        def: Def<u64, &'static [u8]>,
    ) -> Result<Vec<T>, CmdbError> {
        self.read(move |rtx| {
            let Some(t) = rtx.open_table_if_any(def)? else { return Ok(Vec::new()) };
            let mut out = Vec::new();
            for row in t.range(0..)? {
                out.push(decode(row?.1.value())?);
            }
            Ok(out)
        })
        .await
    }

    /// Adds the key `build` makes from its new id (it seals the private half to it), unless
    /// `keep` says no to the keys there are (then answers `None`, writing nothing); with
    /// `retire`, every other key stops being advertised in the same transaction.
    pub async fn add_tang_key<K, F>(&self, keep: K, retire: bool, build: F) -> Result<Option<TangKey>, CmdbError>
    where
        K: FnOnce(&[TangKey]) -> bool + Send + 'static,
        F: FnOnce(u64) -> Result<TangKey, CmdbError> + Send + 'static,
    {
        self.write(move |ctx| {
            let mut keys = Vec::new();
            for row in ctx.t.tx.open_table(TANG_KEYS)?.range(0..)? {
                keys.push(decode::<TangKey>(row?.1.value())?);
            }
            if !keep(&keys) {
                return Ok(None);
            }
            let mut meta = ctx.t.tx.open_table(META)?;
            let id = meta.get(KEY_NEXT_TANG)?.map_or(1, |v| v.value());
            let key = build(id)?;
            meta.insert(KEY_NEXT_TANG, id + 1)?;
            drop(meta);
            if retire {
                for mut old in keys.into_iter().filter(|k| k.active) {
                    old.active = false;
                    ctx.put(&old)?;
                }
            }
            ctx.put(&key)?;
            Ok(Some(key))
        })
        .await
    }

    /// Deletes key `id`, refused (`Conflict`) while it is advertised or a binding names it.
    pub async fn delete_tang_key(&self, id: u64) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            let key: TangKey = ctx.get(id)?;
            if key.active {
                return Err(CmdbError::Conflict(format!("tang key {id} is the advertised one")));
            }
            for row in ctx.t.tx.open_table(TANG_BINDINGS)?.range(0..)? {
                let b: TangBinding = decode(row?.1.value())?;
                if b.key == id {
                    return Err(CmdbError::Conflict(format!("machine {} is still bound to tang key {id}", b.machine)));
                }
            }
            ctx.t.tx.open_table(TANG_KEYS)?.remove(id)?;
            Ok(())
        })
        .await
    }

    /// Stores a binding (replacing the machine's), with `event` in the same transaction; a
    /// machine that is gone is not bound.
    pub async fn put_tang_binding(&self, binding: TangBinding, event: WithEvent) -> Result<(), CmdbError> {
        self.write(move |ctx| {
            if ctx.find::<rackboot_model::records::Machine>(binding.machine)?.is_none() {
                return Err(CmdbError::NotFound(format!("machine {}", binding.machine)));
            }
            if let Some((machine, kind, detail)) = event {
                push_event(ctx, machine, kind, detail)?;
            }
            ctx.put(&binding)
        })
        .await
    }

    /// Forgets machine `machine`'s binding, with `event` when the machine is still there.
    pub async fn delete_tang_binding(&self, machine: u64, event: WithEvent) -> Result<bool, CmdbError> {
        self.write(move |ctx| {
            if let Some((m, kind, detail)) = event {
                if ctx.find::<rackboot_model::records::Machine>(m)?.is_some() {
                    push_event(ctx, m, kind, detail)?;
                }
            }
            Ok(ctx.t.tx.open_table(TANG_BINDINGS)?.remove(machine)?.is_some())
        })
        .await
    }
}
