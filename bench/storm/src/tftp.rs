//! TFTP as a PXE ROM fetches its network boot program: a first read request with `tsize` only
//! (the ROM wants the size), aborted with an error once the option acknowledgement tells it,
//! then the real read with `blksize 1456`; every packet retransmitted on 1, 2, 4, 8 and 16 s
//! timeouts, and every block acknowledged (lock-step, no windowsize: ROMs do not send it).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::net::UdpSocket;

/// The ROM's retransmission timeouts, seconds.
pub const TIMEOUTS: [u64; 5] = [1, 2, 4, 8, 16];
const RRQ: u16 = 1;
const DATA: u16 = 3;
const ACK: u16 = 4;
const ERROR: u16 = 5;
const OACK: u16 = 6;

/// A finished download.
pub struct Fetched {
    pub bytes: u64,
    pub retries: u32,
}

/// Reads `file` from `server` with a socket bound to `from` (the machine's leased address).
pub async fn fetch(from: Ipv4Addr, server: SocketAddr, file: &str) -> anyhow::Result<Fetched> {
    // One receive buffer for the whole transfer: a storm moves hundreds of thousands of blocks.
    let mut buf = vec![0u8; 65_536];
    let socket = UdpSocket::bind(SocketAddr::new(from.into(), 0)).await?;
    let mut retries = 0;
    // The size probe: tsize only, then abort as a ROM does.
    let probe = rrq(file, &[("tsize", "0")]);
    let (n, peer, r) = send_until(&socket, &probe, server, &mut buf, |op, _| op == OACK || op == DATA).await?;
    retries += r;
    let size = options(&buf[..n]).into_iter().find(|(k, _)| k.eq_ignore_ascii_case("tsize")).map(|(_, v)| v);
    let _ = socket.send_to(&error(0, "TFTP Aborted"), peer).await;
    // The download, on a new socket (a new transfer id), with the ROM's block size.
    let socket = UdpSocket::bind(SocketAddr::new(from.into(), 0)).await?;
    let request = rrq(file, &[("blksize", "1456"), ("tsize", "0")]);
    let (mut n, peer, r) = send_until(&socket, &request, server, &mut buf, |op, _| op == OACK || op == DATA).await?;
    retries += r;
    let mut blksize = 512usize;
    if opcode(&buf) == OACK {
        for (k, v) in options(&buf[..n]) {
            if k.eq_ignore_ascii_case("blksize") {
                blksize = v.parse().unwrap_or(512);
            }
        }
        let (got, _, r) = send_until(&socket, &ack(0), peer, &mut buf, |op, b| op == DATA && b == 1).await?;
        retries += r;
        n = got;
    }
    let mut got = 0u64;
    let mut block = 1u16;
    loop {
        let payload = n - 4;
        got += payload as u64;
        if payload < blksize {
            let _ = socket.send_to(&ack(block), peer).await;
            break;
        }
        let next = block.wrapping_add(1);
        let (len, _, r) = send_until(&socket, &ack(block), peer, &mut buf, |op, b| op == DATA && b == next).await?;
        retries += r;
        n = len;
        block = next;
    }
    if let Some(size) = size.and_then(|s| s.parse::<u64>().ok()) {
        anyhow::ensure!(size == got, "tsize said {size} bytes, the transfer gave {got}");
    }
    Ok(Fetched { bytes: got, retries })
}

/// Sends `packet` and waits for an answer `accept` takes (opcode, block) from `to`'s host,
/// resending on each timeout; the answer is left in `buf` and its length returned. A TFTP error
/// ends the transfer.
async fn send_until(
    socket: &UdpSocket,
    packet: &[u8],
    to: SocketAddr,
    buf: &mut [u8],
    accept: impl Fn(u16, u16) -> bool,
) -> anyhow::Result<(usize, SocketAddr, u32)> {
    for (attempt, secs) in TIMEOUTS.iter().enumerate() {
        socket.send_to(packet, to).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(*secs);
        while let Ok(got) = tokio::time::timeout_at(deadline, socket.recv_from(buf)).await {
            let (n, from) = got?;
            if n < 4 || from.ip() != to.ip() {
                continue;
            }
            let (op, block) = (opcode(buf), u16::from_be_bytes([buf[2], buf[3]]));
            if op == ERROR {
                let text = String::from_utf8_lossy(&buf[4..n]).trim_end_matches('\0').to_string();
                anyhow::bail!("TFTP error {block}: {text}");
            }
            if accept(op, block) {
                return Ok((n, from, attempt as u32));
            }
        }
    }
    anyhow::bail!("no answer after {} tries", TIMEOUTS.len())
}

fn opcode(p: &[u8]) -> u16 {
    u16::from_be_bytes([p[0], p[1]])
}

fn rrq(file: &str, opts: &[(&str, &str)]) -> Vec<u8> {
    let mut p = RRQ.to_be_bytes().to_vec();
    for s in [file, "octet"].into_iter().chain(opts.iter().flat_map(|(k, v)| [*k, *v])) {
        p.extend_from_slice(s.as_bytes());
        p.push(0);
    }
    p
}

fn ack(block: u16) -> Vec<u8> {
    let mut p = ACK.to_be_bytes().to_vec();
    p.extend_from_slice(&block.to_be_bytes());
    p
}

fn error(code: u16, text: &str) -> Vec<u8> {
    let mut p = ERROR.to_be_bytes().to_vec();
    p.extend_from_slice(&code.to_be_bytes());
    p.extend_from_slice(text.as_bytes());
    p.push(0);
    p
}

/// The name/value pairs of an OACK.
fn options(p: &[u8]) -> Vec<(String, String)> {
    if p.len() < 2 || opcode(p) != OACK {
        return Vec::new();
    }
    let words: Vec<String> = p[2..].split(|b| *b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
    words.chunks(2).filter(|c| c.len() == 2 && !c[0].is_empty()).map(|c| (c[0].clone(), c[1].clone())).collect()
}
