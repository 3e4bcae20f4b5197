//! Datagrams in batches: many received with one `recvmmsg` and many sent with one `sendmmsg`
//! (Linux 3.0). For a server whose answer to a datagram is cheap (a DNS answer kept from an
//! earlier query), the two system calls per datagram, and the wake-up per datagram, are most of
//! what it costs; under load a wake-up now finds a batch waiting, and the batch's answers leave
//! together.
//!
//! Both sides are non-blocking and go through tokio's readiness (`try_io`), so a caller waits on
//! `readable()` as for a single receive. A datagram longer than the buffer is cut and flagged
//! ([`Inbox::truncated`]), never mistaken for a whole one.

use std::io::{self, IoSlice, IoSliceMut};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use nix::sys::socket::{recvmmsg, sendmmsg, ControlMessage, MsgFlags, MultiHeaders, SockaddrStorage};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Received datagrams: up to a fixed count per call, each in a buffer of a fixed size.
pub struct Inbox {
    bufs: Vec<Vec<u8>>,
    /// Per datagram of the last receive: its length, sender, and whether it was cut.
    got: Vec<(usize, Option<SocketAddr>, bool)>,
}

impl Inbox {
    /// Room for `count` datagrams of up to `size` bytes each.
    pub fn new(count: usize, size: usize) -> Inbox {
        Inbox { bufs: vec![vec![0; size]; count.max(1)], got: Vec::with_capacity(count.max(1)) }
    }

    /// Receives the datagrams waiting on `sock`, up to the inbox's count, without waiting.
    /// Returns how many; `WouldBlock` when none was waiting (tokio's readiness is cleared then,
    /// so the caller's next `readable()` waits for new ones).
    pub fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let (bufs, got) = (&mut self.bufs, &mut self.got);
        sock.try_io(Interest::READABLE, || {
            got.clear();
            let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(bufs.len(), None);
            let mut slices: Vec<[IoSliceMut<'_>; 1]> = bufs.iter_mut().map(|b| [IoSliceMut::new(b)]).collect();
            let msgs = recvmmsg(sock.as_raw_fd(), &mut headers, slices.iter_mut(), MsgFlags::MSG_DONTWAIT, None)
                .map_err(io::Error::from)?;
            for m in msgs {
                got.push((m.bytes, m.address.and_then(socket_addr), m.flags.contains(MsgFlags::MSG_TRUNC)));
            }
            Ok(got.len())
        })
    }

    /// The `i`th datagram of the last receive (cut to the buffer's size if it was longer), and
    /// its sender when the kernel gave one.
    pub fn get(&self, i: usize) -> (&[u8], Option<SocketAddr>) {
        let (len, from, _) = self.got[i];
        (&self.bufs[i][..len.min(self.bufs[i].len())], from)
    }

    /// Whether the `i`th datagram was longer than the buffer (and so was cut).
    pub fn truncated(&self, i: usize) -> bool {
        self.got[i].2
    }
}

/// Datagrams queued to go out in one `sendmmsg`, each with a tag its sender gets back once the
/// kernel took it.
pub struct Outbox<T> {
    bufs: Vec<Vec<u8>>,
    to: Vec<(SocketAddr, T)>,
}

impl<T: Copy> Outbox<T> {
    /// An empty outbox for up to `count` datagrams.
    pub fn new(count: usize) -> Outbox<T> {
        Outbox { bufs: (0..count.max(1)).map(|_| Vec::with_capacity(512)).collect(), to: Vec::new() }
    }

    /// Whether no more datagrams fit before a [`flush`](Self::flush).
    pub fn is_full(&self) -> bool {
        self.to.len() == self.bufs.len()
    }

    /// The next datagram's buffer, empty, to write into; [`push`](Self::push) queues it.
    /// Panics when the outbox is full.
    pub fn next_buf(&mut self) -> &mut Vec<u8> {
        let buf = &mut self.bufs[self.to.len()];
        buf.clear();
        buf
    }

    /// Queues what was written into [`next_buf`](Self::next_buf) for `to`.
    pub fn push(&mut self, to: SocketAddr, tag: T) {
        assert!(!self.is_full(), "outbox full");
        self.to.push((to, tag));
    }

    /// Sends every queued datagram, in order: as many per `sendmmsg` as the socket takes, the
    /// rest (a full send buffer) one by one as the socket drains. A datagram the kernel refuses
    /// on its own (an unreachable destination) is skipped; `sent` gets each other one's tag.
    pub async fn flush(&mut self, sock: &UdpSocket, mut sent: impl FnMut(T)) {
        let mut from = 0;
        while from < self.to.len() {
            let (bufs, to) = (&self.bufs, &self.to[from..]);
            let r = sock.try_io(Interest::WRITABLE, || {
                let addrs: Vec<Option<SockaddrStorage>> = to.iter().map(|(a, _)| Some((*a).into())).collect();
                let slices: Vec<[IoSlice<'_>; 1]> =
                    bufs[from..from + to.len()].iter().map(|b| [IoSlice::new(b)]).collect();
                let mut headers = MultiHeaders::<SockaddrStorage>::preallocate(to.len(), None);
                let done = sendmmsg(sock.as_raw_fd(), &mut headers, slices.iter(), &addrs, NO_CMSGS, MsgFlags::empty())
                    .map_err(io::Error::from)?;
                Ok(done.count())
            });
            match r {
                Ok(n) => {
                    self.to[from..from + n].iter().for_each(|(_, tag)| sent(*tag));
                    from += n;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let (addr, tag) = self.to[from];
                    if sock.send_to(&self.bufs[from], addr).await.is_ok() {
                        sent(tag);
                    }
                    from += 1;
                }
                // The first datagram's own error (sendmmsg reports an error only for the first
                // one it tried): skip it, send the rest.
                Err(_) => from += 1,
            }
        }
        self.to.clear();
    }
}

/// No control messages with a send.
const NO_CMSGS: [ControlMessage<'static>; 0] = [];

fn socket_addr(s: SockaddrStorage) -> Option<SocketAddr> {
    if let Some(v4) = s.as_sockaddr_in() {
        return Some(SocketAddr::V4((*v4).into()));
    }
    s.as_sockaddr_in6().map(|v6| SocketAddr::V6((*v6).into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        (a, b)
    }

    #[tokio::test]
    async fn a_batch_comes_in_with_its_senders_and_goes_out_in_order() {
        let (server, client) = pair().await;
        let other = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let to = server.local_addr().unwrap();
        for i in 0..5u8 {
            let from = if i % 2 == 0 { &client } else { &other };
            from.send_to(&[i; 3], to).await.unwrap();
        }
        // A datagram longer than the inbox's buffers is cut and says so.
        client.send_to(&[9; 100], to).await.unwrap();
        let mut inbox = Inbox::new(4, 64);
        server.readable().await.unwrap();
        let mut seen = Vec::new();
        let mut outbox = Outbox::new(8);
        loop {
            let n = match inbox.recv(&server) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            };
            assert!(n <= 4, "at most the inbox's count per receive");
            for i in 0..n {
                let (bytes, from) = inbox.get(i);
                seen.push((bytes.to_vec(), from.unwrap(), inbox.truncated(i)));
                outbox.next_buf().extend_from_slice(&[bytes[0] + 100]);
                outbox.push(from.unwrap(), bytes[0]);
            }
        }
        let (c, o) = (client.local_addr().unwrap(), other.local_addr().unwrap());
        let want: Vec<(Vec<u8>, SocketAddr, bool)> = (0..5u8)
            .map(|i| (vec![i; 3], if i % 2 == 0 { c } else { o }, false))
            .chain([(vec![9; 64], c, true)])
            .collect();
        assert_eq!(seen, want);
        let mut tags = Vec::new();
        outbox.flush(&server, |t| tags.push(t)).await;
        assert_eq!(tags, [0, 1, 2, 3, 4, 9], "every datagram handed to the kernel, in order");
        let mut buf = [0u8; 8];
        for want in [100, 102, 104, 109] {
            let (n, _) = client.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &[want]);
        }
        for want in [101, 103] {
            let (n, _) = other.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &[want]);
        }
    }

    #[tokio::test]
    async fn an_unreachable_destination_is_skipped_and_the_rest_still_go() {
        let (server, client) = pair().await;
        let mut outbox = Outbox::new(3);
        for (i, to) in [client.local_addr().unwrap(), "[::1]:9".parse().unwrap(), client.local_addr().unwrap()]
            .into_iter()
            .enumerate()
        {
            outbox.next_buf().push(i as u8);
            outbox.push(to, i);
        }
        let mut tags = Vec::new();
        outbox.flush(&server, |t| tags.push(t)).await;
        assert_eq!(tags, [0, 2], "an IPv6 destination from an IPv4 socket is refused alone");
        let mut buf = [0u8; 4];
        for want in [0u8, 2] {
            let (n, _) = client.recv_from(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], &[want]);
        }
    }
}
