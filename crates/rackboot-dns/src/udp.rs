//! The UDP side of the DNS server. hickory-server's own UDP loop spawns a task per query and
//! sends every answer through a channel to a sender task; at ~85k queries/s on two cores that
//! overhead was a quarter of the CPU. Here each socket runs one loop that takes the waiting
//! datagrams in batches (`recvmmsg`, [`rackboot_base::mmsg`]), answers a query it answered
//! before from the kept answer ([`crate::answers`]) and sends those answers in one `sendmmsg`
//! per batch. Any other query is parsed with hickory's `Request` and driven through the same
//! [`Handler`], which writes its answer straight back on the socket. Answers from our zones
//! finish on their first poll; a forwarded query waits in a `FuturesUnordered` beside the
//! receive, so it never holds up the others.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::stream::{FuturesUnordered, StreamExt};
use hickory_server::net::xfer::Protocol;
use hickory_server::net::NetError;
use hickory_server::proto::op::{Header, Message, MessageType, ResponseCode};
use hickory_server::proto::rr::Record;
use hickory_server::proto::serialize::binary::{BinDecodable, BinDecoder, BinEncoder};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::zone_handler::MessageResponse;
use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use rackboot_base::mmsg::{Inbox, Outbox};

use super::answers::Answers;
use super::handler::Handler;

/// Where an answer that may be kept is put by the [`Responder`] that sent it.
type Slot = Arc<Mutex<Option<(Vec<u8>, ResponseCode)>>>;

/// Most queries waiting on an upstream per socket; beyond that new ones are dropped (the client
/// retries), so a dead upstream cannot pile up unbounded work.
const MAX_PENDING: usize = 4096;

/// Datagrams taken per receive call (and answers sent per send call).
const BATCH: usize = 32;
/// The longest query read whole. A UDP query is at most 512 bytes without EDNS and rarely near
/// this with it; a longer one is answered FORMERR.
const MAX_QUERY: usize = 4096;
/// Batches handled in a row before the loop lets the forwarded answers and the stop signal in.
const BATCHES_IN_A_ROW: usize = 8;

/// A query being answered that waits on something (an upstream).
type Pending = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Serves queries arriving on `sock` until `stop` is cancelled.
pub async fn serve(sock: UdpSocket, handler: Arc<Handler>, stop: CancellationToken) -> anyhow::Result<()> {
    let sock = Arc::new(sock);
    let mut pending: FuturesUnordered<Pending> = FuturesUnordered::new();
    let mut batch =
        Batch { inbox: Inbox::new(BATCH, MAX_QUERY), outbox: Outbox::new(BATCH), answers: Answers::default() };
    loop {
        tokio::select! {
            r = sock.readable() => {
                if let Err(error) = r {
                    tracing::warn!(%error, "dns socket failed");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
                for _ in 0..BATCHES_IN_A_ROW {
                    if !batch.run(&sock, &handler, &mut pending).await {
                        break;
                    }
                }
            }
            Some(()) = pending.next(), if !pending.is_empty() => {}
            _ = stop.cancelled() => return Ok(()),
        }
    }
}

/// What one socket's loop keeps from batch to batch.
struct Batch {
    inbox: Inbox,
    outbox: Outbox<ResponseCode>,
    answers: Answers,
}

impl Batch {
    /// Receives the waiting queries (up to [`BATCH`]) and answers them; returns whether more
    /// may be waiting.
    async fn run(
        &mut self,
        sock: &Arc<UdpSocket>,
        handler: &Arc<Handler>,
        pending: &mut FuturesUnordered<Pending>,
    ) -> bool {
        let n = match self.inbox.recv(sock) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            // ICMP errors from earlier sends surface here on Linux; they are not ours to fix.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return true,
            // Transient (ENOBUFS, ENOMEM, ...): one bad receive must not stop DNS, or the whole
            // appliance with it.
            Err(error) => {
                tracing::warn!(%error, "dns receive failed");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                return false;
            }
        };
        // Read before the answers are built: one built from newer zones is kept under the older
        // serial, and dropped at the next query.
        let serial = handler.zone_serial();
        for i in 0..n {
            self.one(i, serial, sock, handler, pending).await;
        }
        self.outbox.flush(sock, |rcode| handler.count(rcode)).await;
        n == BATCH
    }

    /// The `i`th query of the batch: FORMERR when it was cut, the kept answer (queued) when there
    /// is one, else through the handler.
    async fn one(
        &mut self,
        i: usize,
        serial: u32,
        sock: &Arc<UdpSocket>,
        handler: &Arc<Handler>,
        pending: &mut FuturesUnordered<Pending>,
    ) {
        let (raw, src) = self.inbox.get(i);
        let Some(src) = src.filter(|s| s.port() != 0) else { return };
        if self.inbox.truncated(i) {
            if let Some(bytes) = form_error_bytes(raw) {
                if sock.send_to(&bytes, src).await.is_ok() {
                    handler.count(ResponseCode::FormErr);
                }
            }
            return;
        }
        if let Some(rcode) = self.answers.answer(raw, serial, self.outbox.next_buf()) {
            self.outbox.push(src, rcode);
            if self.outbox.is_full() {
                self.outbox.flush(sock, |rcode| handler.count(rcode)).await;
            }
            return;
        }
        if pending.len() >= MAX_PENDING {
            return;
        }
        // A query whose handling panics is dropped and counted; the loop goes on.
        let slot = Slot::default();
        let (owned, sock, handler, kept) = (raw.to_vec(), sock.clone(), handler.clone(), slot.clone());
        let mut fut: Pending = Box::pin(async move {
            let metrics = handler.metrics().clone();
            metrics.guard_async("dns", answer(owned, src, sock, handler, kept)).await;
        });
        // Most answers are ready at once: poll here and keep only the ones still waiting.
        if futures_util::poll!(fut.as_mut()).is_pending() {
            pending.push(fut);
        } else if let Some((bytes, rcode)) = slot.lock().ok().and_then(|mut s| s.take()) {
            self.answers.keep(raw, &bytes, rcode, serial);
        }
    }
}

async fn answer(raw: Vec<u8>, src: SocketAddr, sock: Arc<UdpSocket>, handler: Arc<Handler>, kept: Slot) {
    let header: Option<[u8; 12]> = raw.get(..12).and_then(|h| h.try_into().ok());
    let request = match Request::from_bytes(raw, src, Protocol::Udp) {
        Ok(r) => r,
        Err(error) => {
            debug!(%src, %error, "malformed dns query");
            // FORMERR when the header could be read; shorter garbage is dropped.
            if let Some(bytes) = header.and_then(|h| form_error_bytes(&h)) {
                if sock.send_to(&bytes, src).await.is_ok() {
                    handler.count(ResponseCode::FormErr);
                }
            }
            return;
        }
    };
    if request.metadata.message_type == MessageType::Response {
        return; // never answer an answer (reflection loops)
    }
    let responder = Responder { sock, dst: src, kept };
    handler.handle_request::<_, hickory_server::net::runtime::TokioTime>(&request, responder).await;
}

/// Sends an answer back on the socket the query came in on.
#[derive(Clone)]
struct Responder {
    sock: Arc<UdpSocket>,
    dst: SocketAddr,
    /// Gets the answer when it is one of our zones' (authoritative, whole).
    kept: Slot,
}

#[async_trait::async_trait]
impl ResponseHandler for Responder {
    async fn send_response<'a>(
        &mut self,
        response: MessageResponse<
            '_,
            'a,
            impl Iterator<Item = &'a Record> + Send + 'a,
            impl Iterator<Item = &'a Record> + Send + 'a,
            impl Iterator<Item = &'a Record> + Send + 'a,
            impl Iterator<Item = &'a Record> + Send + 'a,
        >,
    ) -> Result<ResponseInfo, NetError> {
        // Without EDNS the client's buffer is 512 bytes (RFC 1035 4.2.1); with it, what our OPT
        // (clamped from theirs) says. Whatever does not fit is cut and TC set by the encoder.
        let max = response.edns().map_or(512, |e| e.max_payload());
        let mut bytes = Vec::with_capacity(512);
        let mut encoder = BinEncoder::new(&mut bytes);
        encoder.set_max_size(max);
        let info = response.destructive_emit(&mut encoder)?;
        self.sock.send_to(&bytes, self.dst).await?;
        let ours = info.authoritative
            && !info.truncation
            && matches!(info.response_code, ResponseCode::NoError | ResponseCode::NXDomain);
        if ours {
            if let Ok(mut slot) = self.kept.lock() {
                *slot = Some((bytes, info.response_code));
            }
        }
        Ok(info)
    }
}

/// A FORMERR answer to a query with the given header bytes (none for a response).
fn form_error_bytes(raw: &[u8]) -> Option<Vec<u8>> {
    let header = Header::read(&mut BinDecoder::new(raw)).ok()?;
    if header.metadata.message_type == MessageType::Response {
        return None;
    }
    let m = Message::error_msg(header.metadata.id, header.metadata.op_code, ResponseCode::FormErr);
    m.to_vec().ok()
}
