//! Turns finished TFTP transfers into metrics and timeline events (by the client's lease): the
//! one place the TFTP service touches the core; the server itself only calls [`super::OnReport`].

use std::sync::Arc;

use crate::metrics::OutcomeLabel;
use crate::service::Core;

use super::{OnReport, Outcome, Report};

/// The report callback recording into `core`'s metrics and CMDB.
pub fn reporter(core: &Core) -> OnReport {
    let (cmdb, metrics) = (core.cmdb.clone(), core.metrics.clone());
    Arc::new(move |r: Report| {
        let outcome = match &r.outcome {
            Outcome::Complete => "complete".to_string(),
            Outcome::Aborted(_) => "aborted".to_string(),
            Outcome::Failed(_) => "failed".to_string(),
        };
        metrics.tftp_transfers.get_or_create(&OutcomeLabel { outcome: outcome.clone() }).inc();
        metrics.tftp_bytes.inc_by(r.bytes);
        let reason = match &r.outcome {
            Outcome::Complete => None,
            Outcome::Aborted(why) | Outcome::Failed(why) => Some(why.clone()),
        };
        tracing::debug!(client = %r.client, file = %r.file, bytes = r.bytes, %outcome, "tftp transfer");
        let detail = serde_json::json!({
            "file": r.file, "bytes": r.bytes, "size": r.size, "outcome": outcome, "reason": reason,
            "blksize": r.blksize, "windowsize": r.windowsize, "options": r.options, "ms": r.elapsed.as_millis() as u64,
        });
        if let std::net::IpAddr::V4(ip) = r.client.ip() {
            cmdb.record_for_ip(ip, crate::cmdb::EventKind::TftpTransfer, detail);
        }
    })
}
