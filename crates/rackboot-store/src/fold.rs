//! Repeated DHCP chatter folds into one event. A client that renews every few seconds, or a
//! load generator running DORA for the same MACs, would otherwise fill each timeline with
//! identical OFFER/ACK pairs up to the retention cap, and the data file with millions of rows
//! that say nothing new. An event of a chatter kind whose kind and detail match one of the
//! machine's last two events (an OFFER and its ACK alternate) replaces it: the detail gains
//! `repeats` (how many in a row, this one included) and `first_ms` (when the first was
//! recorded); the new event gets a new sequence number so the stream still delivers it.

use serde_json::Value;

use super::events::EventKind;
use super::model::Event;
use super::store::decode;
use super::store::WriteCtx;
use super::CmdbError;

/// How many of a machine's newest events a repeat is looked for among.
const LOOK_BACK: usize = 2;
/// The detail keys folding adds (ignored when comparing).
const REPEATS: &str = "repeats";
const FIRST_MS: &str = "first_ms";

/// Whether events of `kind` fold when they repeat.
fn folds(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::DhcpOffer
            | EventKind::DhcpAck
            | EventKind::DhcpInform
            | EventKind::Dhcp6Reply
            | EventKind::DhcpProxyOffer
            | EventKind::DhcpProxyAck
    )
}

/// The detail to record for a new event: `detail` as it is, or, when it repeats one of the
/// machine's last events, with the count and first time carried over (that event is dropped).
pub(super) fn fold(
    ctx: &mut WriteCtx<'_>,
    machine_id: u64,
    kind: &EventKind,
    mut detail: Value,
) -> Result<Value, CmdbError> {
    if !folds(kind) || !detail.is_object() {
        return Ok(detail);
    }
    let mut found = None;
    for row in ctx.t.events.range((machine_id, 0)..=(machine_id, u64::MAX))?.rev().take(LOOK_BACK) {
        let (_, value) = row?;
        let e: Event = decode(value.value())?;
        if e.kind == *kind && same(&e.detail, &detail) {
            found = Some(e);
            break;
        }
    }
    let Some(old) = found else { return Ok(detail) };
    let repeats = old.detail.get(REPEATS).and_then(Value::as_u64).unwrap_or(1) + 1;
    let first = old.detail.get(FIRST_MS).and_then(Value::as_u64).unwrap_or(old.at_ms);
    ctx.t.events.remove((machine_id, old.seq))?;
    ctx.t.event_log.remove(old.seq)?;
    super::events::unpublish(ctx.published, old.seq);
    if let Value::Object(map) = &mut detail {
        map.insert(REPEATS.into(), repeats.into());
        map.insert(FIRST_MS.into(), first.into());
    }
    Ok(detail)
}

/// Equal details, apart from what folding added.
fn same(old: &Value, new: &Value) -> bool {
    let (Value::Object(a), Value::Object(b)) = (old, new) else { return false };
    let own = |k: &&String| *k != REPEATS && *k != FIRST_MS;
    a.keys().filter(own).count() == b.keys().filter(own).count()
        && b.iter().filter(|(k, _)| own(k)).all(|(k, v)| a.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn details_compare_without_the_fold_keys() {
        assert!(same(&json!({"ip": "198.18.0.5", "repeats": 4, "first_ms": 1}), &json!({"ip": "198.18.0.5"})));
        assert!(!same(&json!({"ip": "198.18.0.5"}), &json!({"ip": "198.18.0.6"})));
        assert!(!same(&json!({"ip": "198.18.0.5"}), &json!({"ip": "198.18.0.5", "hostname": "n1"})));
        assert!(!same(&json!("x"), &json!("x")), "only objects fold");
    }
}
