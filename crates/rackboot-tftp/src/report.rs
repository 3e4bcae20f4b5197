//! Turns finished TFTP transfers into metrics and timeline events (by the client's lease): the
//! one place the TFTP service touches the store; the server itself only calls [`super::OnReport`].

use std::sync::Arc;

use rackboot_base::metrics::OutcomeLabel;

use super::{OnReport, Outcome, Report};

/// The report callback recording into `metrics` and the store.
pub fn reporter(cmdb: rackboot_store::Cmdb, metrics: rackboot_base::metrics::Metrics) -> OnReport {
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
        match r.client.ip() {
            std::net::IpAddr::V4(ip) => cmdb.record_for_ip(ip, rackboot_store::EventKind::TftpTransfer, detail),
            std::net::IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
                Some(v4) => cmdb.record_for_ip(v4, rackboot_store::EventKind::TftpTransfer, detail),
                None => cmdb.record_for_ip6(ip, rackboot_store::EventKind::TftpTransfer, detail),
            },
        };
    })
}
