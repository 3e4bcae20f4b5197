//! Prometheus metrics shared by every service, exposed at `/metrics` (the store's writer
//! counts into [`WriterStats`]).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TypeLabel {
    pub r#type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServiceLabel {
    pub service: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    pub reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabel {
    /// One of a fixed set (`other` for the rest).
    pub method: String,
    /// The route template (`/api/v1/machines/{id}`), `unmatched` for no route.
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConnRefusedLabel {
    /// "http" or "https".
    pub listener: String,
    /// "total" or "per_client": which cap was reached.
    pub reason: String,
}

/// A family's counters by a one-byte code (a DHCP message type), each looked up in the family
/// once: a lookup builds its label string, and DHCP counts every packet it receives and sends.
#[derive(Clone)]
pub struct ByCode(std::sync::Arc<[std::sync::OnceLock<Counter>; 256]>);

impl Default for ByCode {
    fn default() -> Self {
        ByCode(std::sync::Arc::new(std::array::from_fn(|_| std::sync::OnceLock::new())))
    }
}

impl ByCode {
    /// Counts one under `code` in `family`, whose label for it `label` makes.
    pub fn inc(&self, family: &Family<TypeLabel, Counter>, code: u8, label: impl FnOnce() -> String) {
        self.0[usize::from(code)].get_or_init(|| family.get_or_create(&TypeLabel { r#type: label() }).clone()).inc();
    }
}

/// All metrics; cheap to clone (every metric is an `Arc` inside).
#[derive(Clone, Default)]
pub struct Metrics {
    pub dhcp_received: Family<TypeLabel, Counter>,
    pub dhcp_sent: Family<TypeLabel, Counter>,
    /// The two families' counters by DHCP message type, each looked up once.
    pub dhcp_received_by: ByCode,
    pub dhcp_sent_by: ByCode,
    pub dhcp_dropped: Family<ReasonLabel, Counter>,
    pub leases_in_use: Gauge,
    pub dhcp6_received: Family<TypeLabel, Counter>,
    pub dhcp6_sent: Family<TypeLabel, Counter>,
    pub dhcp6_dropped: Family<ReasonLabel, Counter>,
    pub leases6_in_use: Gauge,
    /// 1 while this appliance answers DHCP (always, outside a pair; see `dhcp::pair`).
    pub dhcp_pair_active: Gauge,
    /// Addresses in the DHCP pools (full mode; 0 otherwise), for the pool use the UI shows.
    pub pool_addresses: Gauge,
    /// Outstanding offers taken back for a newer client because the pool was exhausted.
    pub dhcp_offers_reclaimed: Counter,
    pub http_requests: Family<HttpLabel, Counter<u64, AtomicU64>>,
    pub tftp_transfers: Family<OutcomeLabel, Counter>,
    pub tftp_bytes: Counter,
    pub tftp_active: Gauge,
    /// TFTP read requests refused (`per_client`, `busy`).
    pub tftp_refused: Family<ReasonLabel, Counter>,
    /// Unproven TFTP transfers evicted for a newer request.
    pub tftp_evicted: Counter,
    pub dns_responses: Family<RcodeLabel, Counter>,
    /// Packets whose handling panicked (caught; the service goes on), by service.
    pub packet_panics: Family<ServiceLabel, Counter>,
    /// Unclaimed machines evicted at the cap (the store's counter, see its `Growth`).
    pub unclaimed_evicted: Counter,
    /// The CMDB writer's queue depth, commit latency, shed writes and caught panics.
    pub cmdb_writer: WriterStats,
    /// 1 while the CMDB file takes writes, 0 while it is faulted (disk full).
    pub cmdb_storage_ok: Gauge,
    /// Connections closed at once because a connection cap was reached.
    pub http_connections_refused: Family<ConnRefusedLabel, Counter>,
    /// Machines in the CMDB by state (set when /metrics is read).
    pub machines: Family<StatePoolLabel, Gauge>,
    /// Boot assets the config needs that are missing (set when /metrics is read).
    pub boot_assets_missing: Gauge,
    /// BMCs not tried because they refused their credentials lately (set when /metrics is read).
    pub bmc_auth_holds: Gauge,
    /// Webhook deliveries by outcome (`ok`: the receiver answered 2xx; `failed`: anything else).
    pub webhook_deliveries: Family<OutcomeLabel, Counter>,
    /// Enabled webhook subscriptions whose receiver is failing (set when /metrics is read).
    pub webhooks_failing: Gauge,
    /// Webhook subscriptions stopped after failing too long (set when /metrics is read).
    pub webhooks_disabled: Gauge,
    /// Tang recovery requests by outcome (`ok`; `refused`: no such key, or not a point).
    pub tang_recoveries: Family<OutcomeLabel, Counter>,
}

impl Metrics {
    /// Counts one Tang recovery request.
    pub fn tang_recoveries(&self, ok: bool) {
        let outcome = if ok { "ok" } else { "refused" };
        self.tang_recoveries.get_or_create(&OutcomeLabel { outcome: outcome.into() }).inc();
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    pub state: String,
}

/// A machine state in a resource pool.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatePoolLabel {
    pub state: String,
    pub pool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RcodeLabel {
    pub rcode: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: String,
}

/// The store writer's metrics (the store counts, [`Metrics`] exports).
#[derive(Clone)]
pub struct WriterStats {
    /// Jobs waiting in the queue (sampled after each batch).
    pub queue_depth: Gauge,
    /// Seconds from a batch's start to its commit.
    pub commit_seconds: Histogram,
    /// Detached writes shed because the queue was full.
    pub shed: Counter,
    /// Batches rolled back because a job panicked.
    pub panics: Counter,
}

impl Default for WriterStats {
    fn default() -> Self {
        WriterStats {
            queue_depth: Gauge::default(),
            // 0.5 ms to ~8 s.
            commit_seconds: Histogram::new(exponential_buckets(0.0005, 2.0, 15)),
            shed: Counter::default(),
            panics: Counter::default(),
        }
    }
}

impl Metrics {
    /// Renders the Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut r = Registry::with_prefix("rackboot");
        r.register("dhcp_packets_received", "DHCP packets received, by message type", self.dhcp_received.clone());
        r.register("dhcp_packets_sent", "DHCP packets sent, by message type", self.dhcp_sent.clone());
        r.register("dhcp_packets_dropped", "DHCP packets dropped, by reason", self.dhcp_dropped.clone());
        r.register("dhcp_leases_in_use", "Active (unexpired) DHCP leases", self.leases_in_use.clone());
        r.register("dhcp6_packets_received", "DHCPv6 messages received, by message type", self.dhcp6_received.clone());
        r.register("dhcp6_packets_sent", "DHCPv6 messages sent, by message type", self.dhcp6_sent.clone());
        r.register("dhcp6_packets_dropped", "DHCPv6 messages dropped, by reason", self.dhcp6_dropped.clone());
        r.register("dhcp6_leases_in_use", "Active (unexpired) DHCPv6 leases", self.leases6_in_use.clone());
        r.register(
            "dhcp_pair_active",
            "1 while this appliance answers DHCP (always outside a pair; in a pair, the primary, or the standby while the primary is silent)",
            self.dhcp_pair_active.clone(),
        );
        r.register("dhcp_pool_addresses", "Addresses in the DHCP pools (full mode)", self.pool_addresses.clone());
        r.register(
            "dhcp_offers_reclaimed",
            "Outstanding DHCP offers taken back for a newer client because the pool was exhausted",
            self.dhcp_offers_reclaimed.clone(),
        );
        r.register("tftp_transfers", "TFTP transfers finished, by outcome", self.tftp_transfers.clone());
        r.register("tftp_bytes_sent", "TFTP payload bytes acknowledged by clients", self.tftp_bytes.clone());
        r.register("tftp_transfers_active", "TFTP transfers in progress", self.tftp_active.clone());
        r.register("tftp_requests_refused", "TFTP read requests refused, by reason", self.tftp_refused.clone());
        r.register(
            "tftp_unproven_evicted",
            "TFTP transfers never acknowledged by their client, evicted for a newer request when every slot was taken",
            self.tftp_evicted.clone(),
        );
        r.register(
            "packet_panics",
            "Packets whose handling panicked (a bug: caught, logged, the service goes on), by service",
            self.packet_panics.clone(),
        );
        r.register("dns_responses", "DNS responses sent, by response code", self.dns_responses.clone());
        r.register(
            "http_requests",
            "HTTP requests served, by method, route template and status",
            self.http_requests.clone(),
        );
        r.register(
            "cmdb_unclaimed_evicted",
            "Unclaimed machines (only seen on the network) evicted at server.max_unclaimed_machines",
            self.unclaimed_evicted.clone(),
        );
        let w = &self.cmdb_writer;
        r.register("cmdb_write_queue_depth", "Writes waiting for the CMDB writer", w.queue_depth.clone());
        r.register("cmdb_commit_seconds", "Time from a write batch's start to its commit", w.commit_seconds.clone());
        r.register(
            "cmdb_writes_shed",
            "Detached writes (sightings, stats, last-use times) shed because the write queue was full",
            w.shed.clone(),
        );
        r.register(
            "cmdb_storage_ok",
            "1 while the CMDB file takes writes, 0 while they are refused (data disk full or failing)",
            self.cmdb_storage_ok.clone(),
        );
        r.register("cmdb_batch_panics", "Write batches rolled back because a write panicked", w.panics.clone());
        r.register(
            "http_connections_refused",
            "Connections closed at accept because a connection cap was reached, by listener and cap",
            self.http_connections_refused.clone(),
        );
        r.register("machines", "Machines in the CMDB, by state and resource pool", self.machines.clone());
        r.register(
            "boot_assets_missing",
            "Boot assets the config needs that are missing (machines cannot PXE-boot)",
            self.boot_assets_missing.clone(),
        );
        r.register(
            "bmc_auth_holds",
            "BMCs not tried because they refused their credentials lately (bmc.auth_hold_secs)",
            self.bmc_auth_holds.clone(),
        );
        r.register(
            "webhook_deliveries",
            "Webhook deliveries by outcome (ok: a 2xx answer; failed: anything else, retried)",
            self.webhook_deliveries.clone(),
        );
        r.register(
            "tang_recoveries",
            "Tang recovery requests (a bound disk unlocking) by outcome (ok; refused: unknown key or bad point)",
            self.tang_recoveries.clone(),
        );
        r.register(
            "webhooks_failing",
            "Enabled webhook subscriptions whose receiver is failing",
            self.webhooks_failing.clone(),
        );
        r.register(
            "webhooks_disabled",
            "Webhook subscriptions stopped after failing for webhooks.disable_after_secs",
            self.webhooks_disabled.clone(),
        );
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).expect("writing to a String cannot fail");
        out
    }

    /// The counter for DNS responses with response code `rcode` (its name in lower case;
    /// callers keep it: the lookup allocates).
    pub fn dns_rcode_counter(&self, rcode: &str) -> Counter {
        self.dns_responses.get_or_create(&RcodeLabel { rcode: rcode.to_ascii_lowercase() }).clone()
    }

    /// Runs `f` for one packet of `service`; a panic in it is caught, counted and logged, and the
    /// service goes on with the next packet.
    pub fn guard<T>(&self, service: &str, f: impl FnOnce() -> T) -> Option<T> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(v) => Some(v),
            Err(panic) => {
                self.count_panic(service, &panic);
                None
            }
        }
    }

    /// [`Metrics::guard`] for a packet handled by a future.
    pub async fn guard_async<T>(&self, service: &str, f: impl std::future::Future<Output = T>) -> Option<T> {
        use futures_util::FutureExt;
        match std::panic::AssertUnwindSafe(f).catch_unwind().await {
            Ok(v) => Some(v),
            Err(panic) => {
                self.count_panic(service, &panic);
                None
            }
        }
    }

    fn count_panic(&self, service: &str, panic: &Box<dyn std::any::Any + Send>) {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        self.packet_panics.get_or_create(&ServiceLabel { service: service.into() }).inc();
        tracing::error!(service, panic = %what, "a packet's handling panicked; dropped it and going on");
    }

    /// Counts a dropped DHCP packet.
    pub fn dhcp_drop(&self, reason: &str) {
        self.dhcp_dropped.get_or_create(&ReasonLabel { reason: reason.into() }).inc();
    }

    /// Counts a dropped DHCPv6 message.
    pub fn dhcp6_drop(&self, reason: &str) {
        self.dhcp6_dropped.get_or_create(&ReasonLabel { reason: reason.into() }).inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_packet_is_caught_counted_and_the_next_one_handled() {
        let m = Metrics::default();
        assert_eq!(m.guard("dhcp", || -> u32 { panic!("bad packet") }), None);
        assert_eq!(m.guard("dhcp", || 7), Some(7));
        assert_eq!(m.guard_async("dns", async { panic!("bad query") }).await, None::<()>);
        assert_eq!(m.guard_async("dns", async { 8 }).await, Some(8));
        let text = m.render();
        assert!(text.contains("rackboot_packet_panics_total{service=\"dhcp\"} 1"), "{text}");
        assert!(text.contains("rackboot_packet_panics_total{service=\"dns\"} 1"), "{text}");
    }
}
