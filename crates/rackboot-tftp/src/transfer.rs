//! One read transfer: optional OACK handshake, then DATA in windows of `windowsize` blocks
//! (lockstep when 1), bounded retransmits, and an immediate end on a client ERROR.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use tokio::net::UdpSocket;

use super::packet::{self, Incoming};
use super::request::Negotiated;

/// How a transfer ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every block was acknowledged.
    Complete,
    /// The client sent an ERROR (PXE ROMs do this after a tsize probe).
    Aborted(String),
    /// Retransmits ran out or I/O failed.
    Failed(String),
}

/// What a transfer sends: a file from the boot directory, or bytes made for this request.
pub enum Body {
    File(File),
    Bytes(Vec<u8>),
}

impl Body {
    /// Its size in bytes.
    pub fn size(&self) -> u64 {
        match self {
            Body::File(f) => f.metadata().map(|m| m.len()).unwrap_or(0),
            Body::Bytes(b) => b.len() as u64,
        }
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        match self {
            Body::File(f) => f.read_at(buf, offset),
            Body::Bytes(b) => {
                let from = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
                let n = buf.len().min(b.len() - from);
                buf[..n].copy_from_slice(&b[from..from + n]);
                Ok(n)
            }
        }
    }
}

/// Retransmits of one window (or of the OACK) before giving up.
const MAX_RETRIES: u32 = 5;

/// Runs the transfer on `sock` (connected to the client); returns the outcome and bytes
/// acknowledged. `proven` is called once, at the client's first acknowledgement.
pub async fn run(
    sock: &UdpSocket,
    file: Body,
    size: u64,
    n: Negotiated,
    oack: Option<Vec<u8>>,
    proven: impl FnOnce(),
) -> (Outcome, u64) {
    let mut proven = Some(proven);
    // Blocks are read with pread straight into their packets, on the worker: boot files sit in
    // the page cache, where a read costs less than a hop to the blocking pool, and a transfer
    // holds no file buffer (it held up to 256 KiB: a GB and more in a 5,000-machine storm).
    // Only ACKs and ERRORs come back: a small receive buffer (an ERROR's text is cut, not lost).
    let mut buf = vec![0u8; 1024];
    if let Some(oack) = oack {
        match exchange(sock, &[oack], &mut buf, n.timeout, |a| a == 0).await {
            Ok(()) => {
                if let Some(p) = proven.take() {
                    p();
                }
            }
            Err(o) => return (o, 0),
        }
    }
    let last_block = size / n.blksize as u64 + 1;
    // Blocks sent but not yet acknowledged, oldest first: (block number, packet).
    let mut window: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut next = 1u64;
    let mut acked = 0u64;
    let mut retries = 0;
    // One deadline per window: only progress moves it, so stale ACKs cannot keep a transfer alive.
    let mut deadline = tokio::time::Instant::now() + n.timeout;
    // The window front we last resent early, so duplicate ACKs cannot snowball (RFC 1123's
    // Sorcerer's Apprentice) into every block being sent twice.
    let mut resent_front = 0u64;
    while acked < last_block {
        while next <= last_block && window.len() < n.windowsize as usize {
            let mut pkt = Vec::with_capacity(4 + n.blksize);
            packet::data(&mut pkt, next as u16, &[]);
            pkt.resize(4 + n.blksize, 0);
            let got = match read_block(&file, (next - 1) * n.blksize as u64, &mut pkt[4..]) {
                Ok(g) => g,
                Err(e) => return (Outcome::Failed(format!("reading file: {e}")), acked_bytes(acked, size, n)),
            };
            pkt.truncate(4 + got);
            if let Err(e) = sock.send(&pkt).await {
                return (Outcome::Failed(format!("send: {e}")), acked_bytes(acked, size, n));
            }
            window.push_back((next, pkt));
            next += 1;
        }
        match tokio::time::timeout_at(deadline, sock.recv(&mut buf)).await {
            Err(_) => {
                retries += 1;
                if retries > MAX_RETRIES {
                    return (Outcome::Failed("client stopped acknowledging".into()), acked_bytes(acked, size, n));
                }
                resend(sock, &window).await;
                deadline = tokio::time::Instant::now() + n.timeout;
            }
            Ok(Err(e)) => return (Outcome::Failed(format!("recv: {e}")), acked_bytes(acked, size, n)),
            Ok(Ok(len)) => match packet::parse(&buf[..len]) {
                Ok(Incoming::Ack(a)) => {
                    // Map the 16-bit block number onto the window (block numbers wrap at 65536).
                    if let Some(pos) = window.iter().position(|(b, _)| *b as u16 == a) {
                        if let Some(p) = proven.take() {
                            p();
                        }
                        acked = window[pos].0;
                        window.drain(..=pos);
                        retries = 0;
                        deadline = tokio::time::Instant::now() + n.timeout;
                        // RFC 7440: a receiver ACKs before the window's end only when it lost a
                        // block; the rest of the window is resent at once, not after a timeout.
                        if let Some(&(front, _)) = window.front() {
                            if resent_front != front {
                                resent_front = front;
                                resend(sock, &window).await;
                            }
                        }
                    } else if n.windowsize > 1 {
                        // An ACK of the block before the window: the first block was lost.
                        if let Some(&(front, _)) = window.front() {
                            if (front as u16).wrapping_sub(1) == a && resent_front != front {
                                resent_front = front;
                                resend(sock, &window).await;
                            }
                        }
                    }
                }
                Ok(Incoming::Error { code, message }) => {
                    return (Outcome::Aborted(format!("client error {code}: {message}")), acked_bytes(acked, size, n));
                }
                _ => {}
            },
        }
    }
    (Outcome::Complete, size)
}

async fn resend(sock: &UdpSocket, window: &VecDeque<(u64, Vec<u8>)>) {
    for (_, pkt) in window {
        let _ = sock.send(pkt).await;
    }
}

fn acked_bytes(blocks: u64, size: u64, n: Negotiated) -> u64 {
    (blocks * n.blksize as u64).min(size)
}

/// Reads the block at `offset`: a full buffer, or less at the end of the file.
fn read_block(file: &Body, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        let r = file.read_at(&mut buf[got..], offset + got as u64)?;
        if r == 0 {
            break;
        }
        got += r;
    }
    Ok(got)
}

/// Sends `pkts` and waits for an ACK accepted by `want`, retransmitting on timeout.
async fn exchange(
    sock: &UdpSocket,
    pkts: &[Vec<u8>],
    buf: &mut [u8],
    timeout: Duration,
    want: impl Fn(u16) -> bool,
) -> Result<(), Outcome> {
    for _ in 0..=MAX_RETRIES {
        for p in pkts {
            sock.send(p).await.map_err(|e| Outcome::Failed(format!("send: {e}")))?;
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            match tokio::time::timeout_at(deadline, sock.recv(buf)).await {
                Err(_) => break,
                Ok(Err(e)) => return Err(Outcome::Failed(format!("recv: {e}"))),
                Ok(Ok(len)) => match packet::parse(&buf[..len]) {
                    Ok(Incoming::Ack(a)) if want(a) => return Ok(()),
                    Ok(Incoming::Error { code, message }) => {
                        return Err(Outcome::Aborted(format!("client error {code}: {message}")))
                    }
                    _ => {}
                },
            }
        }
    }
    Err(Outcome::Failed("no acknowledgement of the option ack".into()))
}
