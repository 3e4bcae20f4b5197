//! A read-only TFTP server for the boot directory. Mechanics only: it serves bytes from files
//! under one root and reports each finished transfer to a callback; it knows nothing of machines.
//!
//! Our own server rather than async-tftp: async-tftp ignores client ERROR packets (PXE ROMs abort
//! after a tsize probe and the slot stays busy until timeout) and lacks windowsize (RFC 7440).

mod admission;
pub mod packet;
#[cfg(test)]
mod props;
mod report;
pub mod request;
mod transfer;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use admission::{Admission, Refusal};

use tokio::net::UdpSocket;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

pub use transfer::Outcome;

use crate::service::Core;

/// What happened in one transfer, for the timeline and metrics.
#[derive(Debug, Clone)]
pub struct Report {
    pub client: SocketAddr,
    pub file: String,
    pub bytes: u64,
    pub size: u64,
    pub blksize: usize,
    pub windowsize: u16,
    pub options: Vec<(String, String)>,
    pub outcome: Outcome,
    pub elapsed: Duration,
}

/// Receives every finished (or refused) transfer.
pub type OnReport = Arc<dyn Fn(Report) + Send + Sync>;

/// The server's settings.
#[derive(Clone)]
pub struct TftpService {
    pub root: PathBuf,
    /// Interface the per-transfer sockets bind to ("" for any).
    pub interface: String,
    pub on_report: OnReport,
    /// Transfer slots: in total and per client, unproven transfers evicted first.
    pub admission: Arc<Admission>,
    /// Refused requests, evicted transfers and caught panics are counted here.
    pub metrics: crate::metrics::Metrics,
}

/// The TFTP service: serves the configured boot directory on `socket` until `shutdown`, each
/// finished transfer recorded through the core.
pub async fn serve(socket: UdpSocket, core: Core, shutdown: CancellationToken) -> anyhow::Result<()> {
    let svc = TftpService {
        root: core.cfg.tftp.root.clone(),
        interface: core.addrs.interface.clone(),
        on_report: report::reporter(&core),
        admission: Admission::new(core.cfg.tftp.max_transfers, core.cfg.tftp.max_transfers_per_client),
        metrics: core.metrics.clone(),
    };
    run(socket, svc, shutdown).await
}

/// Serves read requests arriving on `socket` (port 69) until `token` is cancelled. Each transfer
/// runs in its own task on its own socket (a new TID, RFC 1350), so none waits for another.
pub async fn run(socket: UdpSocket, svc: TftpService, token: CancellationToken) -> anyhow::Result<()> {
    let mut buf = vec![0u8; 2048];
    info!(root = %svc.root.display(), "tftp serving");
    loop {
        let (len, client) = tokio::select! {
            _ = token.cancelled() => return Ok(()),
            r = socket.recv_from(&mut buf) => r?,
        };
        match packet::parse(&buf[..len]) {
            Ok(packet::Incoming::Read { filename, mode, options }) => {
                // A slot per transfer bounds sockets, open files and buffers under a flood.
                let ticket = match svc.admission.admit(client.ip()) {
                    Ok((ticket, evicted)) => {
                        if evicted {
                            svc.metrics.tftp_evicted.inc();
                        }
                        ticket
                    }
                    Err(refusal) => {
                        let reason = crate::metrics::ReasonLabel { reason: refusal.as_str().into() };
                        svc.metrics.tftp_refused.get_or_create(&reason).inc();
                        // A client over its share is told; a full server stays silent, so a ROM
                        // (which gives up on an ERROR) asks again after its timeout.
                        if refusal == admission::Refusal::PerClient {
                            let busy = packet::error(packet::ERR_NOT_DEFINED, "server busy, retry");
                            let _ = socket.send_to(&busy, client).await;
                        }
                        debug!(%client, reason = refusal.as_str(), "tftp request refused");
                        continue;
                    }
                };
                let (svc, token) = (svc.clone(), token.clone());
                tokio::spawn(async move {
                    let metrics = svc.metrics.clone();
                    tokio::select! {
                        _ = token.cancelled() => {}
                        _ = ticket.evicted() => debug!(%client, "unproven tftp transfer evicted"),
                        _ = metrics.guard_async("tftp", handle(svc, client, filename, mode, options, &ticket)) => {}
                    }
                });
            }
            Ok(packet::Incoming::Write) => {
                let _ = socket.send_to(&packet::error(packet::ERR_ACCESS, "read-only server"), client).await;
            }
            // Never answer an ERROR with an ERROR (RFC 1350): two servers would ping-pong forever.
            Ok(packet::Incoming::Error { .. }) => {}
            Ok(packet::Incoming::Ack(_)) => {
                let _ =
                    socket.send_to(&packet::error(packet::ERR_UNKNOWN_TID, "no transfer on this port"), client).await;
            }
            Err(error) => debug!(%client, %error, "dropping tftp packet"),
        }
    }
}

async fn handle(
    svc: TftpService,
    client: SocketAddr,
    filename: String,
    mode: String,
    options: Vec<(String, String)>,
    ticket: &admission::Ticket,
) {
    let started = Instant::now();
    let report = |outcome, bytes, size, n: Option<request::Negotiated>| Report {
        client,
        file: filename.clone(),
        bytes,
        size,
        blksize: n.map_or(512, |n| n.blksize),
        windowsize: n.map_or(1, |n| n.windowsize),
        options: options.clone(),
        outcome,
        elapsed: started.elapsed(),
    };
    let sock = match crate::net::bind_udp(0, &svc.interface, false) {
        Ok(s) if s.connect(client).await.is_ok() => s,
        _ => return (svc.on_report)(report(Outcome::Failed("no socket for the transfer".into()), 0, 0, None)),
    };
    // Boot files are binary; netascii is served as-is rather than refused, as dnsmasq does.
    if mode != "octet" && mode != "netascii" {
        let _ = sock.send(&packet::error(packet::ERR_ILLEGAL, "only octet mode")).await;
        return (svc.on_report)(report(Outcome::Failed(format!("mode {mode:?} refused")), 0, 0, None));
    }
    let path = match request::resolve(&svc.root, &filename) {
        Ok(p) => p,
        Err(why) => {
            let code = if why == "file not found" { packet::ERR_NOT_FOUND } else { packet::ERR_ACCESS };
            let _ = sock.send(&packet::error(code, why)).await;
            return (svc.on_report)(report(Outcome::Failed(why.to_string()), 0, 0, None));
        }
    };
    // Opened on the worker (microseconds for a boot file), as the blocks are read (transfer.rs).
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            let _ = sock.send(&packet::error(packet::ERR_NOT_FOUND, "cannot open file")).await;
            return (svc.on_report)(report(Outcome::Failed(format!("open: {e}")), 0, 0, None));
        }
    };
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let (n, ack) = request::negotiate(&options, size);
    let oack = (!ack.is_empty()).then(|| packet::oack(&ack));
    svc.metrics.tftp_active.inc();
    ticket.answered();
    let (outcome, bytes) = transfer::run(&sock, file, size, n, oack, || ticket.proven()).await;
    svc.metrics.tftp_active.dec();
    (svc.on_report)(report(outcome, bytes, size, Some(n)));
}
