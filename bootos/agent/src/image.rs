//! What a disk image is and how it reaches the disk: the format from its first bytes (never its
//! name), a decoder for each compressed one, and a copy that stops at the disk's size.
//!
//! Raw, gzip (concatenated members too), xz and zstd are streamed; a qcow2 image is refused
//! here: the appliance converts it to raw once and serves that.

use std::io::{BufRead, Read, Write};

use hyper::body::Bytes;
use tokio::sync::mpsc;

/// An image's format, from its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Raw,
    Gzip,
    Xz,
    Zstd,
    Qcow2,
}

impl Format {
    /// The most bytes [`Format::sniff`] looks at.
    pub const MAGIC_LEN: usize = 6;

    /// The format whose magic `head` starts with; anything else is raw.
    pub fn sniff(head: &[u8]) -> Format {
        const XZ: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0x00];
        if head.starts_with(&[0x1f, 0x8b]) {
            Format::Gzip
        } else if head.starts_with(XZ) {
            Format::Xz
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Format::Zstd
        } else if head.starts_with(b"QFI\xfb") {
            Format::Qcow2
        } else {
            Format::Raw
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Gzip => "gzip",
            Format::Xz => "xz",
            Format::Zstd => "zstd",
            Format::Qcow2 => "qcow2",
        }
    }
}

/// The blocks of a stream, read as bytes: what the network task queued, in order.
pub struct Blocks {
    rx: mpsc::Receiver<std::sync::Arc<Vec<Bytes>>>,
    block: std::sync::Arc<Vec<Bytes>>,
    /// The chunk of `block` being read, and how far.
    chunk: usize,
    at: usize,
}

impl Blocks {
    pub fn new(rx: mpsc::Receiver<std::sync::Arc<Vec<Bytes>>>) -> Blocks {
        Blocks { rx, block: Default::default(), chunk: 0, at: 0 }
    }

    /// Up to `n` bytes from the start of what is left, without consuming them (fewer only at
    /// the stream's end).
    pub fn peek(&mut self, n: usize) -> std::io::Result<Vec<u8>> {
        // The first chunks may be shorter than a magic number: gather across them.
        let mut head = Vec::with_capacity(n);
        let (mut chunk, mut at) = (self.chunk, self.at);
        loop {
            while head.len() < n && chunk < self.block.len() {
                let c = &self.block[chunk][at..];
                let take = c.len().min(n - head.len());
                head.extend_from_slice(&c[..take]);
                (chunk, at) = (chunk + 1, 0);
            }
            if head.len() >= n || !self.append_next() {
                return Ok(head);
            }
        }
    }

    /// Appends the next queued block to the current one (for [`Blocks::peek`]); false at the end.
    fn append_next(&mut self) -> bool {
        match self.rx.blocking_recv() {
            Some(next) => {
                let mut joined: Vec<Bytes> = self.block[self.chunk..].to_vec();
                if let Some(first) = joined.first_mut() {
                    *first = first.slice(self.at..);
                }
                joined.extend(next.iter().cloned());
                (self.block, self.chunk, self.at) = (std::sync::Arc::new(joined), 0, 0);
                true
            }
            None => false,
        }
    }
}

impl Read for Blocks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let have = self.fill_buf()?;
        let n = have.len().min(buf.len());
        buf[..n].copy_from_slice(&have[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Blocks {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        loop {
            match self.block.get(self.chunk) {
                Some(c) if self.at < c.len() => return Ok(&self.block[self.chunk][self.at..]),
                // Read through (or empty): the next chunk.
                Some(_) => (self.chunk, self.at) = (self.chunk + 1, 0),
                None => match self.rx.blocking_recv() {
                    Some(next) => (self.block, self.chunk, self.at) = (next, 0, 0),
                    None => return Ok(&[]),
                },
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.at += n;
    }
}

/// A decoder over `input` for `format`, or why there is none.
pub fn decoder<'a, R: BufRead + 'a>(format: Format, input: R) -> std::io::Result<Box<dyn Read + 'a>> {
    Ok(match format {
        Format::Raw => Box::new(input),
        Format::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        Format::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(input)),
        Format::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(input)?),
        Format::Qcow2 => {
            return Err(std::io::Error::other(
                "a qcow2 image cannot be streamed to a disk: the appliance serves it converted to raw",
            ))
        }
    })
}

/// Copies `from` to `to` in `buf`-sized reads; fails once more than `cap` bytes came out (a
/// compressed image that expands past the disk). Returns the bytes written.
pub fn copy_capped(from: &mut dyn Read, to: &mut dyn Write, cap: Option<u64>, buf: usize) -> std::io::Result<u64> {
    let mut buf = vec![0u8; buf];
    let mut total = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        total += n as u64;
        if let Some(cap) = cap.filter(|&cap| total > cap) {
            return Err(std::io::Error::other(format!(
                "the image expands past the disk's {cap} bytes: stopped there, nothing more written"
            )));
        }
        to.write_all(&buf[..n])?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_magic_bytes() {
        assert_eq!(Format::sniff(&[0x1f, 0x8b, 8, 0]), Format::Gzip);
        assert_eq!(Format::sniff(&[0xfd, b'7', b'z', b'X', b'Z', 0]), Format::Xz);
        assert_eq!(Format::sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0]), Format::Zstd);
        assert_eq!(Format::sniff(b"QFI\xfb\0\0\0\x03"), Format::Qcow2);
        // An MBR, a GPT disk's first sector, nothing at all: raw.
        assert_eq!(Format::sniff(&[0xeb, 0x63, 0x90]), Format::Raw);
        assert_eq!(Format::sniff(&[0; 512]), Format::Raw);
        assert_eq!(Format::sniff(&[]), Format::Raw);
        assert_eq!(Format::sniff(&[0x1f]), Format::Raw, "half a magic number");
    }

    #[test]
    fn peek_gathers_across_short_chunks_and_reads_lose_nothing() {
        let (tx, rx) = mpsc::channel(8);
        let parts: Vec<Vec<Bytes>> = vec![
            vec![Bytes::from_static(b"ab"), Bytes::from_static(b"c")],
            vec![Bytes::from_static(b"")],
            vec![Bytes::from_static(b"defg"), Bytes::from_static(b"hij")],
        ];
        for p in parts {
            tx.try_send(std::sync::Arc::new(p)).unwrap();
        }
        drop(tx);
        let mut blocks = Blocks::new(rx);
        assert_eq!(blocks.peek(6).unwrap(), b"abcdef");
        assert_eq!(blocks.peek(6).unwrap(), b"abcdef", "peeking consumes nothing");
        let mut all = Vec::new();
        blocks.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"abcdefghij");
        assert_eq!(blocks.peek(4).unwrap(), b"", "at the end");
    }

    #[test]
    fn the_copy_stops_past_the_cap() {
        let data = vec![0u8; 10_000];
        let mut out = Vec::new();
        let err = copy_capped(&mut &data[..], &mut out, Some(4096), 1000).unwrap_err();
        assert!(err.to_string().contains("past the disk's 4096 bytes"), "{err}");
        assert!(out.len() <= 4096, "nothing past the cap is written: {}", out.len());
        let mut out = Vec::new();
        assert_eq!(copy_capped(&mut &data[..], &mut out, Some(10_000), 1000).unwrap(), 10_000, "exactly the disk");
    }
}
