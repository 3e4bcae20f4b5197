//! The built-in `deploy_image` action: an image streamed from the appliance onto a disk, its
//! SHA-256 checked before the job succeeds.
//!
//! Three stages run at once. This task reads the HTTP stream and gathers it into blocks of about
//! [`BLOCK`] bytes; one thread hashes each block while another writes it (through the decoder
//! of a compressed image; runs of zeros are zeroed rather than written: [`crate::sparse`]). Hashing and writing used to take turns on the agent's
//! single-threaded runtime, so a deploy ran at the speed of both added up; now it runs at the
//! slower of the two. The queues between the stages hold [`QUEUE`] blocks each, so memory stays
//! bounded when the disk is slower than the network. The disk is synced before the checksum is
//! compared.

use std::io::Seek;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::image::{self, Blocks, Format};
use crate::jobs::Sink;
use crate::sparse::SparseWriter;
use crate::wire::{JobResult, JobSpec, Outcome, Stream};

/// About how many bytes go down the queues at a time.
const BLOCK: usize = 1 << 20;
/// Blocks each queue holds before the network waits.
const QUEUE: usize = 8;
/// The size of the copy's reads from the decoder.
const WRITE_BUF: usize = 4 << 20;

/// One block: the stream's chunks as they came (shared by both stages, never copied).
type Block = Arc<Vec<Bytes>>;

/// The hashing and the writing thread, and the queues to them.
pub struct Stages {
    to_hash: mpsc::Sender<Block>,
    to_disk: mpsc::Sender<Block>,
    hasher: JoinHandle<String>,
    writer: JoinHandle<std::io::Result<Written>>,
}

/// What reached the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    pub format: Format,
    /// Bytes written to the disk (the image decompressed).
    pub bytes: u64,
    /// Of those, the bytes in runs of zeros that were zeroed rather than written.
    pub zeroed: u64,
}

impl Stages {
    /// Opens `disk` (a file is created; a device must exist) and starts both threads. The writer
    /// takes the image's format from its first bytes and stops at the disk's size (a block
    /// device's, or a file's that already has one).
    pub fn start(disk: &str) -> std::io::Result<Stages> {
        let mut file =
            std::fs::OpenOptions::new().write(true).create(!disk.starts_with("/dev/")).truncate(false).open(disk)?;
        // Seeking to the end gives a block device's size too; a character device or new file says 0.
        let size = file.seek(std::io::SeekFrom::End(0)).unwrap_or(0);
        file.seek(std::io::SeekFrom::Start(0))?;
        let cap = (size > 0).then_some(size);
        let (to_hash, mut hash_rx) = mpsc::channel::<Block>(QUEUE);
        let (to_disk, disk_rx) = mpsc::channel::<Block>(QUEUE);
        let hasher = std::thread::Builder::new().name("deploy-hash".into()).spawn(move || {
            let mut hash = Sha256::new();
            while let Some(block) = hash_rx.blocking_recv() {
                block.iter().for_each(|c| hash.update(c));
            }
            hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
        })?;
        let writer = std::thread::Builder::new().name("deploy-write".into()).spawn(move || {
            let mut input = Blocks::new(disk_rx);
            let format = Format::sniff(&input.peek(Format::MAGIC_LEN)?);
            let mut from = image::decoder(format, input)?;
            let mut out = SparseWriter::new(file);
            let bytes = image::copy_capped(&mut *from, &mut out, cap, WRITE_BUF).map_err(|e| match format {
                Format::Raw => e,
                // A decoder's error: say which, as "corrupt deflate stream" alone does not.
                _ => std::io::Error::new(e.kind(), format!("{} image: {e}", format.name())),
            })?;
            let (file, zeroed) = out.finish()?;
            file.sync_all()?;
            Ok(Written { format, bytes, zeroed })
        })?;
        Ok(Stages { to_hash, to_disk, hasher, writer })
    }

    /// Queues a block for both stages; false once the writer has stopped (on an error, which
    /// [`Stages::finish`] returns).
    pub async fn push(&self, block: Vec<Bytes>) -> bool {
        let block = Arc::new(block);
        self.to_hash.send(block.clone()).await.is_ok() && self.to_disk.send(block).await.is_ok()
    }

    /// Ends both stages: the writer's outcome (written and synced) and the image's SHA-256.
    pub async fn finish(self) -> (std::io::Result<Written>, String) {
        let Stages { to_hash, to_disk, hasher, writer } = self;
        drop((to_hash, to_disk));
        let joined = tokio::task::spawn_blocking(move || {
            let wrote = writer.join().unwrap_or_else(|_| Err(std::io::Error::other("the disk writer panicked")));
            (wrote, hasher.join().unwrap_or_default())
        })
        .await;
        joined.unwrap_or_else(|e| (Err(std::io::Error::other(e)), String::new()))
    }
}

/// Writes an image from `url` to `disk` (raw, gzip, xz or zstd, told by its first bytes),
/// hashing what arrives; reports progress about every 2 s.
pub async fn deploy_image(sink: &mut Sink<'_>, spec: &JobSpec, url: &str, sha256: &str, disk: &str) -> JobResult {
    let start = Instant::now();
    let done = |outcome, error: Option<String>| JobResult::ended(spec.attempt, start, outcome, error);
    let mut resp = match crate::client::get_stream(url).await {
        Ok(r) => r,
        Err(e) => return done(Outcome::Error, Some(format!("fetching {url}: {e:#}"))),
    };
    let total = resp.size;
    // The checksum is of the file as served (a compressed image is expanded on the way to the disk).
    let stages = match Stages::start(disk) {
        Ok(s) => s,
        Err(e) => return done(Outcome::Error, Some(format!("opening {disk}: {e}"))),
    };
    let msg = format!("deploy: {url} -> {disk} ({} bytes)\n", total.map_or("?".into(), |t| t.to_string()));
    sink.send(Stream::Stdout, msg).await;
    let (mut received, mut next_report) = (0u64, Instant::now() + Duration::from_secs(2));
    let (mut block, mut block_len) = (Vec::new(), 0usize);
    loop {
        let chunk = match tokio::time::timeout(Duration::from_secs(60), resp.next_chunk()).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => break,
            Ok(Err(e)) => return done(Outcome::Error, Some(format!("reading {url} at byte {received}: {e:#}"))),
            Err(_) => return done(Outcome::Error, Some(format!("{url} stalled for 60 s at byte {received}"))),
        };
        received += chunk.len() as u64;
        block_len += chunk.len();
        block.push(chunk);
        if block_len >= BLOCK {
            block_len = 0;
            if !stages.push(std::mem::take(&mut block)).await {
                break; // the writer failed: finish() says why
            }
        }
        if Instant::now() >= next_report {
            let pct = total.map_or(String::new(), |t| format!(" {}%", received * 100 / t.max(1)));
            let rate = received as f64 / start.elapsed().as_secs_f64() / 1e6;
            sink.send(Stream::Stdout, format!("deploy:{pct} {received} bytes, {rate:.1} MB/s\n")).await;
            next_report = Instant::now() + Duration::from_secs(2);
            if sink.stop {
                return done(Outcome::Cancelled, Some("cancelled by the operator".into()));
            }
        }
    }
    if !block.is_empty() {
        stages.push(block).await;
    }
    let (wrote, got) = stages.finish().await;
    let written = match wrote {
        Ok(w) => w,
        Err(e) => return done(Outcome::Error, Some(format!("writing {disk}: {e}"))),
    };
    if !got.eq_ignore_ascii_case(sha256) {
        return done(Outcome::Failed, Some(format!("sha256 mismatch: image is {got}, expected {sha256}")));
    }
    let secs = start.elapsed().as_secs_f64();
    let msg = format!(
        "deploy: 100% {received} bytes in {secs:.1} s ({:.1} MB/s), sha256 ok; {} image, {} bytes on the disk ({} of them zeros, zeroed rather than written)\n",
        received as f64 / secs / 1e6,
        written.format.name(),
        written.bytes,
        written.zeroed
    );
    sink.send(Stream::Stdout, msg).await;
    JobResult { exit_code: Some(0), ..done(Outcome::Succeeded, None) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn hex(data: &[u8]) -> String {
        Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
    }

    async fn run(disk: &str, data: &[u8]) -> (std::io::Result<Written>, String) {
        let stages = Stages::start(disk).unwrap();
        // Uneven chunks, several per block, as a socket delivers them.
        for block in data.chunks(BLOCK + 12_345) {
            let chunks: Vec<Bytes> = block.chunks(16_411).map(Bytes::copy_from_slice).collect();
            if !stages.push(chunks).await {
                break;
            }
        }
        stages.finish().await
    }

    /// A disk image's worth of bytes that compresses a little, not to nothing.
    fn image(len: usize) -> Vec<u8> {
        (0..len as u32).map(|i| ((i.wrapping_mul(2_654_435_761) >> 13) % 7) as u8).collect()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(data).unwrap();
        xz.finish().unwrap()
    }

    fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 3).unwrap()
    }

    #[tokio::test]
    async fn every_format_lands_byte_for_byte_and_is_hashed_as_served() {
        let dir = tempfile::tempdir().unwrap();
        let data = image((20 << 20) + 777);
        let forms = [("raw", data.clone()), ("gzip", gzip(&data)), ("xz", xz(&data)), ("zstd", zstd(&data))];
        for (name, served) in forms {
            let disk = dir.path().join(format!("{name}.disk"));
            let (wrote, digest) = run(disk.to_str().unwrap(), &served).await;
            let wrote = wrote.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!((wrote.format.name(), wrote.bytes), (name, data.len() as u64));
            assert_eq!(digest, hex(&served), "{name}: the digest of what was served");
            assert!(std::fs::read(&disk).unwrap() == data, "{name}: the disk holds the image byte for byte");
        }
        // Two gzip members, as `cat a.gz b.gz` makes: both reach the disk.
        let (a, b) = data.split_at(5 << 20);
        let joined = [gzip(a), gzip(b)].concat();
        let disk = dir.path().join("joined.disk");
        run(disk.to_str().unwrap(), &joined).await.0.unwrap();
        assert!(std::fs::read(&disk).unwrap() == data, "concatenated gzip members");
    }

    #[tokio::test]
    async fn truncated_or_corrupt_streams_fail_saying_so() {
        let dir = tempfile::tempdir().unwrap();
        let data = image(4 << 20);
        for (name, packed) in [("gzip", gzip(&data)), ("xz", xz(&data)), ("zstd", zstd(&data))] {
            let disk = dir.path().join(format!("{name}.disk"));
            let err = run(disk.to_str().unwrap(), &packed[..packed.len() / 2]).await.0.unwrap_err();
            assert!(err.to_string().starts_with(&format!("{name} image: ")), "{name} truncated: {err}");
            let mut bad = packed.clone();
            let mid = bad.len() / 2;
            bad[mid..mid + 64].iter_mut().for_each(|b| *b ^= 0x5a);
            let err = run(disk.to_str().unwrap(), &bad).await.0.unwrap_err();
            assert!(err.to_string().starts_with(&format!("{name} image: ")), "{name} corrupt: {err}");
        }
        let err = run(dir.path().join("q.disk").to_str().unwrap(), b"QFI\xfb\0\0\0\x03rest").await.0.unwrap_err();
        assert!(err.to_string().contains("qcow2"), "{err}");
    }

    #[tokio::test]
    async fn an_image_that_expands_past_the_disk_is_stopped_there() {
        let dir = tempfile::tempdir().unwrap();
        // 64 MiB of zeros packs into a few KiB: a bomb for a 1 MiB disk.
        let bomb = zstd(&vec![0u8; 64 << 20]);
        assert!(bomb.len() < 64 << 10);
        for (name, served) in [("zstd", bomb), ("raw", image(2 << 20))] {
            let disk = dir.path().join(format!("{name}.disk"));
            std::fs::File::create(&disk).unwrap().set_len(1 << 20).unwrap();
            let err = run(disk.to_str().unwrap(), &served).await.0.unwrap_err();
            assert!(err.to_string().contains("past the disk's 1048576 bytes"), "{name}: {err}");
            assert_eq!(std::fs::metadata(&disk).unwrap().len(), 1 << 20, "{name}: the disk did not grow");
        }
    }

    #[tokio::test]
    async fn a_disk_error_ends_the_deploy_with_its_reason() {
        if !std::path::Path::new("/dev/full").exists() {
            eprintln!("SKIPPED: no /dev/full");
            return;
        }
        let data = vec![7u8; 64 << 20];
        let (wrote, _) = run("/dev/full", &data).await;
        let err = wrote.expect_err("/dev/full takes nothing");
        assert_eq!(err.raw_os_error(), Some(28), "ENOSPC: {err}");
        assert!(Stages::start("/dev/no-such-disk").is_err());
    }
}
