//! The request handler for every parsed query (from our UDP loop and from hickory's TCP
//! server): answers from the current zone snapshot, forwards names outside it (or refuses them),
//! and guards zone transfers. Packets that cannot be parsed never get here: the transports answer
//! FORMERR when the header is readable and drop them otherwise.

use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use hickory_server::net::runtime::Time;
use hickory_server::net::xfer::Protocol;
use hickory_server::proto::op::{Edns, Header, HeaderCounts, Metadata, OpCode, ResponseCode};
use hickory_server::proto::rr::{DNSClass, Record, RecordType};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponseBuilder;
use tracing::debug;

use super::forward::Forwarder;
use super::zone::{Lookup, Zones};
use prometheus_client::metrics::counter::Counter;
use rackboot_base::metrics::Metrics;
use rackboot_config::{in_network, Ipv4Net};

/// Records per message in a zone transfer; a big zone goes out as several messages.
const XFR_CHUNK: usize = 500;
/// The largest UDP payload we offer or honour (RFC 9715's advice against fragmentation is 1232;
/// clients that advertise more than this still get at most 4096).
const MAX_UDP_PAYLOAD: u16 = 4096;

/// Shared, swappable zone snapshot: the refresher replaces the `Arc`, queries clone it.
pub type ZoneCell = Arc<RwLock<Arc<Zones>>>;

/// Answers DNS queries.
pub struct Handler {
    zones: ZoneCell,
    forwarder: Option<Forwarder>,
    allow_transfer: Vec<Ipv4Net>,
    metrics: Metrics,
    /// Response counters for the usual RCODEs, fetched once (indexed by RCODE 0..=5).
    counted: Vec<Counter>,
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(&self, request: &Request, response: R) -> ResponseInfo {
        let info = match self.respond(request, response).await {
            Ok(info) => info,
            Err(error) => {
                debug!(src = %request.src(), %error, "dns response not sent");
                let mut metadata = Metadata::response_from_request(&request.metadata);
                metadata.response_code = ResponseCode::ServFail;
                ResponseInfo::from(Header { metadata, counts: HeaderCounts::default() })
            }
        };
        self.count(info.response_code);
        info
    }
}

impl Handler {
    pub fn new(
        zones: ZoneCell,
        forwarder: Option<Forwarder>,
        allow_transfer: Vec<Ipv4Net>,
        metrics: Metrics,
    ) -> Handler {
        let counted =
            (0..=5u16).map(|c| metrics.dns_rcode_counter(&format!("{:?}", ResponseCode::from_low(c as u8)))).collect();
        Handler { zones, forwarder, allow_transfer, metrics, counted }
    }

    /// The serial of the zones answers are built from now.
    pub fn zone_serial(&self) -> u32 {
        self.zones.read().expect("zone lock").serial()
    }

    /// The appliance's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Counts one response.
    pub fn count(&self, rcode: ResponseCode) {
        match self.counted.get(usize::from(u16::from(rcode))) {
            Some(c) => c.inc(),
            None => self.metrics.dns_rcode_counter(&format!("{rcode:?}")).inc(),
        };
    }

    async fn respond<R: ResponseHandler>(&self, request: &Request, mut response: R) -> anyhow::Result<ResponseInfo> {
        // Our OPT record: present when the client sent one, limiting the answer to its buffer.
        let edns = request.edns.as_ref().map(|theirs| {
            let mut ours = Edns::new();
            ours.set_max_payload(theirs.max_payload().clamp(512, MAX_UDP_PAYLOAD));
            ours
        });
        // RFC 6891 6.1.3: we speak EDNS version 0 only.
        let bad_version = request.edns.as_ref().is_some_and(|e| e.version() > 0);
        let builder = || {
            let mut b = MessageResponseBuilder::new(&request.queries, None);
            if let Some(e) = &edns {
                b.edns(e);
            }
            b
        };
        let mut metadata = Metadata::response_from_request(&request.metadata);
        metadata.recursion_available = self.forwarder.is_some();
        let refuse = |code: ResponseCode| {
            let mut m = metadata;
            m.response_code = code;
            m
        };

        if bad_version {
            return send(&mut response, builder().build_no_records(refuse(ResponseCode::BADVERS))).await;
        }
        if request.metadata.op_code != OpCode::Query {
            return send(&mut response, builder().build_no_records(refuse(ResponseCode::NotImp))).await;
        }
        let queries = request.queries.queries();
        if queries.len() != 1 {
            return send(&mut response, builder().build_no_records(refuse(ResponseCode::FormErr))).await;
        }
        let query = &queries[0];
        if !matches!(query.query_class(), DNSClass::IN | DNSClass::ANY) {
            return send(&mut response, builder().build_no_records(refuse(ResponseCode::Refused))).await;
        }
        match query.query_type() {
            RecordType::AXFR | RecordType::IXFR => {
                return self.transfer(request, edns.as_ref(), metadata, response).await
            }
            RecordType::OPT => {
                return send(&mut response, builder().build_no_records(refuse(ResponseCode::FormErr))).await
            }
            _ => {}
        }

        let zones = self.zones.read().expect("zone lock").clone();
        let none: [&Record; 0] = [];
        let mut aa = metadata;
        aa.authoritative = true;
        match zones.lookup(query.name(), query.query_type()) {
            Lookup::Answer { answers, additionals } => {
                send(&mut response, builder().build(aa, answers, none, none, additionals.iter())).await
            }
            Lookup::NoData(soa) => send(&mut response, builder().build(aa, none, none, [soa], none)).await,
            Lookup::NxDomain(soa) => {
                aa.response_code = ResponseCode::NXDomain;
                send(&mut response, builder().build(aa, none, none, [soa], none)).await
            }
            Lookup::NotOurs => {
                let Some(fwd) = &self.forwarder else {
                    return send(&mut response, builder().build_no_records(refuse(ResponseCode::Refused))).await;
                };
                if !fwd.admits(request.src().ip(), std::time::Instant::now()) {
                    debug!(src = %request.src(), name = %query.name(), "not forwarded: outside the client networks or past its rate");
                    return send(&mut response, builder().build_no_records(refuse(ResponseCode::Refused))).await;
                }
                match fwd.resolve(query.original(), request.protocol() == Protocol::Tcp).await {
                    Ok(up) => {
                        metadata.response_code = up.metadata.response_code;
                        let b = builder().build(metadata, &up.answers, &up.authorities, none, &up.additionals);
                        send(&mut response, b).await
                    }
                    Err(error) => {
                        debug!(name = %query.name(), %error, "forwarding failed");
                        send(&mut response, builder().build_no_records(refuse(ResponseCode::ServFail))).await
                    }
                }
            }
        }
    }

    /// AXFR (and IXFR, answered with the full zone as RFC 1995 allows): only over TCP, only to
    /// clients in `dns.allow_transfer`, only for the apex of one of our zones.
    async fn transfer<R: ResponseHandler>(
        &self,
        request: &Request,
        edns: Option<&Edns>,
        mut metadata: Metadata,
        mut response: R,
    ) -> anyhow::Result<ResponseInfo> {
        let builder = || {
            let mut b = MessageResponseBuilder::new(&request.queries, None);
            if let Some(e) = edns {
                b.edns(e);
            }
            b
        };
        let allowed = match request.src().ip() {
            IpAddr::V4(ip) => self.allow_transfer.iter().any(|net| in_network(ip, *net)),
            IpAddr::V6(_) => false,
        };
        if !allowed || request.protocol() != Protocol::Tcp {
            debug!(src = %request.src(), "zone transfer refused");
            metadata.response_code = ResponseCode::Refused;
            return send(&mut response, builder().build_no_records(metadata)).await;
        }
        let zones = self.zones.read().expect("zone lock").clone();
        let query = &request.queries.queries()[0];
        let Some(records) = zones.transfer(query.name()) else {
            metadata.response_code = ResponseCode::NotAuth;
            return send(&mut response, builder().build_no_records(metadata)).await;
        };
        metadata.authoritative = true;
        let none: [&Record; 0] = [];
        let mut info = None;
        for chunk in records.chunks(XFR_CHUNK) {
            info = Some(send(&mut response, builder().build(metadata, chunk.iter().copied(), none, none, none)).await?);
        }
        Ok(info.expect("a transfer has at least the SOA"))
    }
}

async fn send<'a, R: ResponseHandler>(
    response: &mut R,
    message: hickory_server::zone_handler::MessageResponse<
        '_,
        'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
        impl Iterator<Item = &'a Record> + Send + 'a,
    >,
) -> anyhow::Result<ResponseInfo> {
    Ok(response.send_response(message).await?)
}
