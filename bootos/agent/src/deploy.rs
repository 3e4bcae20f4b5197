//! The built-in `deploy_image` action: an image streamed from the appliance onto a disk, its
//! SHA-256 checked before the job succeeds.
//!
//! Three stages run at once. This task reads the HTTP stream and gathers it into blocks of about
//! [`BLOCK`] bytes; one thread hashes each block while another writes it (through a gzip decoder
//! for a `.gz` image) in 4 MiB writes. Hashing and writing used to take turns on the agent's
//! single-threaded runtime, so a deploy ran at the speed of both added up; now it runs at the
//! slower of the two. The queues between the stages hold [`QUEUE`] blocks each, so memory stays
//! bounded when the disk is slower than the network. The disk is synced before the checksum is
//! compared.

use std::io::Write;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::jobs::Sink;
use crate::wire::{JobResult, JobSpec, Outcome, Stream};

/// About how many bytes go down the queues at a time.
const BLOCK: usize = 1 << 20;
/// Blocks each queue holds before the network waits.
const QUEUE: usize = 8;
/// The disk writes' size.
const WRITE_BUF: usize = 4 << 20;

/// One block: the stream's chunks as they came (shared by both stages, never copied).
type Block = Arc<Vec<Bytes>>;

/// The disk writer: as is, or through a gzip decoder.
enum Out {
    Raw(std::io::BufWriter<std::fs::File>),
    Gz(Box<flate2::write::GzDecoder<std::io::BufWriter<std::fs::File>>>),
}

impl Out {
    fn write_all(&mut self, b: &[u8]) -> std::io::Result<()> {
        match self {
            Out::Raw(w) => w.write_all(b),
            Out::Gz(w) => w.write_all(b),
        }
    }

    /// Ends the stream (a gzip image must be complete), flushes and syncs the disk.
    fn finish(self) -> std::io::Result<()> {
        let w = match self {
            Out::Raw(w) => w,
            Out::Gz(w) => w.finish()?,
        };
        w.into_inner().map_err(|e| e.into_error())?.sync_all()
    }
}

/// The hashing and the writing thread, and the queues to them.
pub struct Stages {
    to_hash: mpsc::Sender<Block>,
    to_disk: mpsc::Sender<Block>,
    hasher: JoinHandle<String>,
    writer: JoinHandle<std::io::Result<()>>,
}

impl Stages {
    /// Opens `disk` (a file is created; a device must exist) and starts both threads.
    pub fn start(disk: &str, gzip: bool) -> std::io::Result<Stages> {
        let file =
            std::fs::OpenOptions::new().write(true).create(!disk.starts_with("/dev/")).truncate(false).open(disk)?;
        let file = std::io::BufWriter::with_capacity(WRITE_BUF, file);
        let mut out = if gzip { Out::Gz(Box::new(flate2::write::GzDecoder::new(file))) } else { Out::Raw(file) };
        let (to_hash, mut hash_rx) = mpsc::channel::<Block>(QUEUE);
        let (to_disk, mut disk_rx) = mpsc::channel::<Block>(QUEUE);
        let hasher = std::thread::Builder::new().name("deploy-hash".into()).spawn(move || {
            let mut hash = Sha256::new();
            while let Some(block) = hash_rx.blocking_recv() {
                block.iter().for_each(|c| hash.update(c));
            }
            hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
        })?;
        let writer = std::thread::Builder::new().name("deploy-write".into()).spawn(move || {
            while let Some(block) = disk_rx.blocking_recv() {
                for chunk in block.iter() {
                    out.write_all(chunk)?;
                }
            }
            out.finish()
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
    pub async fn finish(self) -> (std::io::Result<()>, String) {
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

/// Writes an image from `url` to `disk` (raw, or gzip when the name ends in .gz), hashing what
/// arrives; reports progress about every 2 s.
pub async fn deploy_image(sink: &mut Sink<'_>, spec: &JobSpec, url: &str, sha256: &str, disk: &str) -> JobResult {
    let start = Instant::now();
    let done = |outcome, error: Option<String>| JobResult {
        attempt: spec.attempt,
        outcome,
        exit_code: None,
        duration_ms: start.elapsed().as_millis() as u64,
        error,
        plugin: None,
    };
    let mut resp = match crate::client::get_stream(url).await {
        Ok(r) => r,
        Err(e) => return done(Outcome::Error, Some(format!("fetching {url}: {e:#}"))),
    };
    let total = resp.size;
    // The checksum is of the file as served (a .gz image is inflated on the way to the disk).
    let stages = match Stages::start(disk, url.ends_with(".gz")) {
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
    if let Err(e) = wrote {
        return done(Outcome::Error, Some(format!("writing {disk}: {e}")));
    }
    if !got.eq_ignore_ascii_case(sha256) {
        return done(Outcome::Failed, Some(format!("sha256 mismatch: image is {got}, expected {sha256}")));
    }
    let secs = start.elapsed().as_secs_f64();
    let msg =
        format!("deploy: 100% {received} bytes in {secs:.1} s ({:.1} MB/s), sha256 ok\n", received as f64 / secs / 1e6);
    sink.send(Stream::Stdout, msg).await;
    JobResult { exit_code: Some(0), ..done(Outcome::Succeeded, None) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(data: &[u8]) -> String {
        Sha256::digest(data).iter().map(|b| format!("{b:02x}")).collect()
    }

    async fn run(disk: &str, gzip: bool, data: &[u8]) -> (std::io::Result<()>, String) {
        let stages = Stages::start(disk, gzip).unwrap();
        // Uneven chunks, several per block, as a socket delivers them.
        for block in data.chunks(BLOCK + 12_345) {
            let chunks: Vec<Bytes> = block.chunks(16_411).map(Bytes::copy_from_slice).collect();
            if !stages.push(chunks).await {
                break;
            }
        }
        stages.finish().await
    }

    #[tokio::test]
    async fn blocks_are_hashed_and_written_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..(20u32 << 20) + 777).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let disk = dir.path().join("disk.img");
        let (wrote, digest) = run(disk.to_str().unwrap(), false, &data).await;
        wrote.unwrap();
        assert_eq!(digest, hex(&data), "the digest of what was sent");
        assert!(std::fs::read(&disk).unwrap() == data, "the disk holds the image byte for byte");

        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        let gz = gz.finish().unwrap();
        let disk = dir.path().join("disk2.img");
        let (wrote, digest) = run(disk.to_str().unwrap(), true, &gz).await;
        wrote.unwrap();
        assert_eq!(digest, hex(&gz), "a .gz image is checked as served");
        assert!(std::fs::read(&disk).unwrap() == data, "and written inflated");
        let (wrote, _) = run(dir.path().join("disk3.img").to_str().unwrap(), true, &gz[..gz.len() / 2]).await;
        assert!(wrote.is_err(), "a truncated gzip image fails");
    }

    #[tokio::test]
    async fn a_disk_error_ends_the_deploy_with_its_reason() {
        if !std::path::Path::new("/dev/full").exists() {
            eprintln!("SKIPPED: no /dev/full");
            return;
        }
        let data = vec![7u8; 64 << 20];
        let (wrote, _) = run("/dev/full", false, &data).await;
        let err = wrote.expect_err("/dev/full takes nothing");
        assert_eq!(err.raw_os_error(), Some(28), "ENOSPC: {err}");
        assert!(Stages::start("/dev/no-such-disk", false).is_err());
    }
}
