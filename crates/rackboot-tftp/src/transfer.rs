//! One read transfer: optional OACK handshake, then DATA in windows of `windowsize` blocks
//! (lockstep when 1), bounded retransmits, and an immediate end on a client ERROR.
//!
//! A window's blocks leave in one send where the kernel segments UDP (GSO, `UDP_SEGMENT`, Linux
//! 4.18): its DATA packets are all one size but the file's last, so the kernel cuts one buffer
//! into the datagrams, one system call for up to [`MAX_SEGMENTS`] blocks instead of one each.
//! Where it cannot (no checksum offload on the way out), the transfer sends block by block.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Duration;
#[cfg(test)]
use std::time::Instant;

use nix::sys::socket::sockopt::UdpGsoSegment;
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
/// Most datagrams in one segmented send (the kernel's UDP_MAX_SEGMENTS).
const MAX_SEGMENTS: usize = 64;
/// Most bytes in one segmented send (an IPv4 datagram's payload, with room to spare).
const MAX_GSO_BYTES: usize = 65_000;

/// How DATA packets go out: segmented by the kernel when the socket takes `UDP_SEGMENT`.
struct Sender<'a> {
    sock: &'a UdpSocket,
    /// The segment size, while segmenting works.
    segment: Option<usize>,
    batch: Vec<u8>,
}

impl<'a> Sender<'a> {
    /// Segments windows of full `packet`-sized blocks when there are windows to segment.
    fn new(sock: &'a UdpSocket, packet: usize, windowsize: u16) -> Sender<'a> {
        let segment = (windowsize > 1 && 2 * packet <= MAX_GSO_BYTES)
            .then(|| nix::sys::socket::setsockopt(sock, UdpGsoSegment, &(packet as i32)).ok().map(|()| packet))
            .flatten();
        Sender { sock, segment, batch: Vec::new() }
    }

    /// Sends `pkts` in order; each but the last must be a full block.
    async fn send<'p>(&mut self, mut pkts: impl Iterator<Item = &'p [u8]>) -> std::io::Result<()> {
        let Some(seg) = self.segment else {
            for p in pkts {
                self.sock.send(p).await?;
            }
            return Ok(());
        };
        let per = MAX_SEGMENTS.min(MAX_GSO_BYTES / seg);
        loop {
            self.batch.clear();
            pkts.by_ref().take(per).for_each(|p| self.batch.extend_from_slice(p));
            if self.batch.is_empty() {
                return Ok(());
            }
            match self.sock.send(&self.batch).await {
                Ok(_) => {}
                // EIO (no checksum offload on the route) or EINVAL: block by block from now on.
                Err(e) if matches!(e.raw_os_error(), Some(c) if c == nix::libc::EIO || c == nix::libc::EINVAL) => {
                    tracing::debug!(error = %e, "tftp: no UDP segmentation here, sending block by block");
                    let _ = nix::sys::socket::setsockopt(self.sock, UdpGsoSegment, &0);
                    self.segment = None;
                    // The batch is the group's blocks end to end: all full but perhaps the last.
                    for p in self.batch.chunks(seg) {
                        self.sock.send(p).await?;
                    }
                    for p in pkts {
                        self.sock.send(p).await?;
                    }
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

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
    // The timer is armed once and moved only when it fires early (progress pushed the deadline
    // on since): in lockstep a timer per block, set and cancelled, cost as much as its sends.
    let timer = tokio::time::sleep_until(deadline);
    tokio::pin!(timer);
    // The window front we last resent early, so duplicate ACKs cannot snowball (RFC 1123's
    // Sorcerer's Apprentice) into every block being sent twice.
    let mut resent_front = 0u64;
    let mut out = Sender::new(sock, 4 + n.blksize, n.windowsize);
    // Packets of acknowledged blocks, for the next ones to reuse.
    let mut spare: Vec<Vec<u8>> = Vec::new();
    while acked < last_block {
        let first_new = window.len();
        while next <= last_block && window.len() < n.windowsize as usize {
            let mut pkt = spare.pop().unwrap_or_else(|| Vec::with_capacity(4 + n.blksize));
            pkt.clear();
            packet::data(&mut pkt, next as u16, &[]);
            pkt.resize(4 + n.blksize, 0);
            let got = match read_block(&file, (next - 1) * n.blksize as u64, &mut pkt[4..]) {
                Ok(g) => g,
                Err(e) => return (Outcome::Failed(format!("reading file: {e}")), acked_bytes(acked, size, n)),
            };
            pkt.truncate(4 + got);
            window.push_back((next, pkt));
            next += 1;
        }
        // The window's new blocks, straight from the window (no list of them made per send).
        if let Err(e) = out.send(window.range(first_new..).map(|(_, p)| p.as_slice())).await {
            return (Outcome::Failed(format!("send: {e}")), acked_bytes(acked, size, n));
        }
        let received = tokio::select! {
            biased;
            r = sock.recv(&mut buf) => Ok(r),
            () = &mut timer => Err(()),
        };
        match received {
            Err(()) if tokio::time::Instant::now() < deadline => timer.as_mut().reset(deadline),
            Err(()) => {
                retries += 1;
                if retries > MAX_RETRIES {
                    return (Outcome::Failed("client stopped acknowledging".into()), acked_bytes(acked, size, n));
                }
                resend(&mut out, &window).await;
                deadline = tokio::time::Instant::now() + n.timeout;
                timer.as_mut().reset(deadline);
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
                        spare.extend(window.drain(..=pos).map(|(_, p)| p));
                        retries = 0;
                        deadline = tokio::time::Instant::now() + n.timeout;
                        // RFC 7440: a receiver ACKs before the window's end only when it lost a
                        // block; the rest of the window is resent at once, not after a timeout.
                        if let Some(&(front, _)) = window.front() {
                            if resent_front != front {
                                resent_front = front;
                                resend(&mut out, &window).await;
                            }
                        }
                    } else if n.windowsize > 1 {
                        // An ACK of the block before the window: the first block was lost.
                        if let Some(&(front, _)) = window.front() {
                            if (front as u16).wrapping_sub(1) == a && resent_front != front {
                                resent_front = front;
                                resend(&mut out, &window).await;
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

async fn resend(out: &mut Sender<'_>, window: &VecDeque<(u64, Vec<u8>)>) {
    let _ = out.send(window.iter().map(|(_, p)| p.as_slice())).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A server socket and a client socket connected to each other on loopback.
    async fn pair() -> (UdpSocket, UdpSocket) {
        let (a, b) = (UdpSocket::bind("127.0.0.1:0").await.unwrap(), UdpSocket::bind("127.0.0.1:0").await.unwrap());
        a.connect(b.local_addr().unwrap()).await.unwrap();
        b.connect(a.local_addr().unwrap()).await.unwrap();
        (a, b)
    }

    fn ack(block: u16) -> Vec<u8> {
        [&[0, 4][..], &block.to_be_bytes()].concat()
    }

    /// The next DATA packet's block number and length (the server's datagrams, one each).
    async fn data(client: &UdpSocket) -> (u16, usize) {
        let mut buf = vec![0u8; 70_000];
        let n = tokio::time::timeout(Duration::from_secs(5), client.recv(&mut buf)).await.unwrap().unwrap();
        assert_eq!(&buf[..2], &[0, 3], "a DATA packet");
        (u16::from_be_bytes([buf[2], buf[3]]), n)
    }

    #[tokio::test]
    async fn an_unacknowledged_block_is_sent_again_after_the_timeout_and_the_transfer_goes_on() {
        let (server, client) = pair().await;
        let n = Negotiated { blksize: 512, windowsize: 1, timeout: Duration::from_millis(300) };
        let body = Body::Bytes(vec![7u8; 1500]);
        let task = tokio::spawn(async move { run(&server, body, 1500, n, None, || {}).await });
        assert_eq!(data(&client).await, (1, 516));
        let lost = Instant::now();
        assert_eq!(data(&client).await, (1, 516), "sent again");
        assert!(lost.elapsed() >= Duration::from_millis(250), "after the timeout: {:?}", lost.elapsed());
        for block in 1..=3u16 {
            client.send(&ack(block)).await.unwrap();
            if block < 3 {
                // Acknowledged blocks move the deadline: no early resend of the next one.
                assert_eq!(data(&client).await, (block + 1, if block == 2 { 480 } else { 516 }));
            }
        }
        assert_eq!(task.await.unwrap(), (Outcome::Complete, 1500));
    }

    #[tokio::test]
    async fn a_refused_segmented_send_goes_block_by_block_and_loses_none_of_a_long_window() {
        let (server, client) = pair().await;
        // The kernel refuses this socket's segmented sends (EINVAL: more than 64 segments of
        // 16 bytes), as a route without checksum offload refuses them (EIO) in mid-transfer.
        nix::sys::socket::setsockopt(&server, UdpGsoSegment, &16).unwrap();
        // 70 blocks: a group of 63 (the most one send takes at this size) and the rest, few
        // enough for the client's receive buffer.
        let mut out = Sender { sock: &server, segment: Some(1028), batch: Vec::new() };
        let blocks: Vec<Vec<u8>> = (1..=70u16)
            .map(|b| [&[0, 3][..], &b.to_be_bytes(), &vec![b as u8; if b == 70 { 10 } else { 1024 }]].concat())
            .collect();
        out.send(blocks.iter().map(Vec::as_slice)).await.unwrap();
        assert_eq!(out.segment, None, "segmentation is off from then on");
        for b in 1..=70u16 {
            assert_eq!(data(&client).await, (b, if b == 70 { 14 } else { 1028 }), "every block, in order, alone");
        }
    }

    #[tokio::test]
    async fn a_silent_client_fails_the_transfer_after_the_retries() {
        let (server, client) = pair().await;
        let n = Negotiated { blksize: 1024, windowsize: 4, timeout: Duration::from_millis(100) };
        let body = Body::Bytes((0..10_000u32).map(|i| i as u8).collect());
        let start = Instant::now();
        let task = tokio::spawn(async move { run(&server, body, 10_000, n, None, || {}).await });
        let (outcome, bytes) = task.await.unwrap();
        assert_eq!(outcome, Outcome::Failed("client stopped acknowledging".into()));
        assert_eq!(bytes, 0);
        assert!(start.elapsed() >= Duration::from_millis(550), "{:?}", start.elapsed());
        // The first window and its resends, each block a datagram of its own (segmented by the
        // kernel where it can be), in order.
        let mut seen = Vec::new();
        let mut buf = vec![0u8; 70_000];
        while let Ok(n) = client.try_recv(&mut buf) {
            seen.push((u16::from_be_bytes([buf[2], buf[3]]), n));
        }
        let window: Vec<(u16, usize)> = (1..=4).map(|b| (b, 1028)).collect();
        assert_eq!(seen, window.repeat(1 + MAX_RETRIES as usize));
    }
}
