//! The zero-copy path for boot assets on plain HTTP. Kernels, initrds and images are most of
//! the bytes a boot moves; this path answers a GET or HEAD of a file under `/boot/files/` with
//! sendfile(2), straight from the page cache to the socket, with ETag, If-None-Match and one
//! byte range, and keeps the connection for the next request. It records the same timeline event
//! and request metric as the router would.
//!
//! A plain GET or HEAD of another boot route (iPXE's script) is answered by the router inside
//! this loop ([`routed`]), so the kernel and initrd iPXE asks for next on the same connection
//! come back here. Every other request — another path, a body, a condition other than
//! If-None-Match, several or unsatisfiable ranges, a directory, a missing file, a head that
//! does not parse or is larger than [`request::MAX_HEAD`] — goes to hyper and the router with
//! the bytes already read ([`Rewind`]), so its answer is what it always was. Once there, the
//! connection stays there.

mod request;
mod rewind;
mod routed;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bytes::{Buf, BytesMut};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use axum::Router;
use rackboot_base::metrics::{HttpLabel, Metrics};
use rackboot_config::ConnLimits;
use rackboot_store::{Cmdb, EventKind};
pub use request::FileRequest;
use request::{classify, MAX_HEAD, MAX_HEADERS};
pub use rewind::Rewind;
use routed::{routable, Routed};

/// The most one sendfile call is asked for (the socket's buffer takes less anyway).
const MAX_CHUNK: u64 = 16 << 20;
const EINVAL: i32 = nix::errno::Errno::EINVAL as i32;
const ENOSYS: i32 = nix::errno::Errno::ENOSYS as i32;

/// The route label of boot files in the request metric.
pub const FILES_ROUTE: &str = "/boot/files";

/// A boot file's strong ETag: its size and modification time (the same on both HTTP paths).
pub fn etag_of(meta: &std::fs::Metadata) -> Option<String> {
    let mtime = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos();
    Some(format!("\"{:x}-{:x}\"", meta.len(), mtime))
}

/// What the fast path needs: the boot directory, and where events and metrics go.
pub struct Files {
    pub root: PathBuf,
    pub cmdb: Cmdb,
    pub metrics: Metrics,
}

/// What becomes of a connection after the fast path.
pub enum After {
    Closed,
    /// On to the router, with what was read and not answered.
    Router(Rewind<TcpStream>),
}

/// Answers boot-file requests on `stream` for as long as they come, and the other boot routes'
/// plain GETs through `app`, under the listener's header and idle timeouts; a write that makes
/// no progress for the idle timeout ends it.
pub async fn serve(
    files: &Files,
    app: &Router,
    mut stream: TcpStream,
    peer: SocketAddr,
    limits: &ConnLimits,
    shutdown: &CancellationToken,
) -> After {
    let mut buf = BytesMut::with_capacity(1024);
    let mut wait = limits.header_timeout;
    loop {
        let next = next_request(&mut stream, &mut buf, peer, wait, limits.header_timeout, shutdown).await;
        let (head_len, req) = match next {
            Next::File(n, req) => (n, req),
            Next::Routed(n, routed) => {
                buf.advance(n);
                let kept = tokio::select! {
                    kept = routed.answer(app, &mut stream, limits.idle_timeout) => kept,
                    _ = drained(shutdown) => return After::Closed,
                };
                match kept {
                    Ok(true) if !shutdown.is_cancelled() => {}
                    Ok(_) => {
                        let _ = stream.shutdown().await;
                        return After::Closed;
                    }
                    Err(error) => {
                        debug!(%peer, %error, "boot route answer ended");
                        return After::Closed;
                    }
                }
                wait = limits.idle_timeout;
                continue;
            }
            Next::Router => return After::Router(Rewind::new(buf.freeze(), stream)),
            Next::Close => return After::Closed,
        };
        let Some(answer) = prepare(&files.root, &req) else {
            return After::Router(Rewind::new(buf.freeze(), stream));
        };
        buf.advance(head_len);
        let sent = tokio::select! {
            sent = answer.send(&mut stream, limits.idle_timeout) => sent,
            _ = drained(shutdown) => return After::Closed,
        };
        account(files, &req, &answer, peer.ip());
        if let Err(error) = sent {
            debug!(%peer, file = %req.rel_str, %error, "boot file transfer ended");
            return After::Closed;
        }
        if !req.keep_alive || shutdown.is_cancelled() {
            let _ = stream.shutdown().await;
            return After::Closed;
        }
        wait = limits.idle_timeout;
    }
}

/// Resolves when open transfers have had their time after shutdown.
async fn drained(shutdown: &CancellationToken) {
    shutdown.cancelled().await;
    tokio::time::sleep(super::DRAIN).await;
}

enum Next {
    /// A complete head of `.0` bytes the fast path takes.
    File(usize, FileRequest),
    /// A complete head of `.0` bytes the router answers inside the loop.
    Routed(usize, Routed),
    Router,
    Close,
}

/// Reads until `buf` holds a complete head: the first byte within `wait`, the whole head
/// within `header_timeout` of it. A timeout, end of stream or shutdown closes.
async fn next_request(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    peer: SocketAddr,
    wait: Duration,
    header_timeout: Duration,
    shutdown: &CancellationToken,
) -> Next {
    let mut started = !buf.is_empty();
    let mut deadline = Instant::now() + if started { header_timeout } else { wait };
    loop {
        if started {
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(buf) {
                Ok(httparse::Status::Complete(n)) => {
                    return match classify(&req) {
                        Some(file) => Next::File(n, file),
                        None => routable(&req, peer).map_or(Next::Router, |r| Next::Routed(n, r)),
                    };
                }
                Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => {}
                // Malformed, too many headers or too long: hyper answers as it always has.
                _ => return Next::Router,
            }
        }
        buf.reserve(4096);
        let read = tokio::select! {
            read = tokio::time::timeout_at(deadline, stream.read_buf(buf)) => read,
            _ = shutdown.cancelled() => return Next::Close,
        };
        match read {
            Ok(Ok(n)) if n > 0 => {
                if !started {
                    started = true;
                    deadline = Instant::now() + header_timeout;
                }
            }
            _ => return Next::Close,
        }
    }
}

/// The answer to one request: the open file and what of it goes out.
struct Answer {
    file: std::fs::File,
    status: u16,
    head: String,
    /// First byte and length of the body (none for HEAD and 304).
    body: Option<(u64, u64)>,
    /// The length the head declares, for the timeline.
    length: u64,
}

/// Opens the file and builds the head; `None` when the router should answer instead (not a
/// regular file, or a range it cannot satisfy).
fn prepare(root: &Path, req: &FileRequest) -> Option<Answer> {
    // Opened on the worker, as nginx does: an open and an fstat of a boot file cost
    // microseconds, less than the hop to the blocking pool and back.
    let file = std::fs::File::open(root.join(&req.rel)).ok()?;
    let meta = file.metadata().ok().filter(|m| m.is_file())?;
    let len = meta.len();
    let span = match req.range {
        Some(r) => Some(r.resolve(len)?),
        None => None,
    };
    let etag = etag_of(&meta);
    let fresh = match (&etag, &req.if_none_match) {
        (Some(tag), Some(inm)) => inm.as_slice() == tag.as_bytes() || inm.as_slice() == b"*",
        _ => false,
    };
    let (status, reason, first, length) = match (fresh, span) {
        (true, _) => (304, "Not Modified", 0, 0),
        (false, Some((a, b))) => (206, "Partial Content", a, b - a + 1),
        (false, None) => (200, "OK", 0, len),
    };
    let version = if req.http11 { "HTTP/1.1" } else { "HTTP/1.0" };
    let mut head = format!("{version} {status} {reason}\r\ndate: {}\r\n", httpdate::fmt_http_date(SystemTime::now()));
    if let Some(tag) = &etag {
        head += &format!("etag: {tag}\r\n");
    }
    if status != 304 {
        let mime = mime_guess::from_path(&req.rel).first_or_octet_stream();
        head += &format!("content-type: {mime}\r\naccept-ranges: bytes\r\ncontent-length: {length}\r\n");
        if let Ok(modified) = meta.modified() {
            head += &format!("last-modified: {}\r\n", httpdate::fmt_http_date(modified));
        }
        if status == 206 {
            head += &format!("content-range: bytes {first}-{}/{len}\r\n", first + length - 1);
        }
    }
    match (req.http11, req.keep_alive) {
        (true, false) => head += "connection: close\r\n",
        (false, true) => head += "connection: keep-alive\r\n",
        _ => {}
    }
    head += "\r\n";
    let body = (req.get && status != 304 && length > 0).then_some((first, length));
    Some(Answer { file, status, head, body, length })
}

impl Answer {
    async fn send(&self, stream: &mut TcpStream, stall: Duration) -> io::Result<()> {
        tokio::time::timeout(stall, stream.write_all(self.head.as_bytes()))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "client stopped reading"))??;
        match self.body {
            Some((first, length)) => send_file(stream, &self.file, first, length, stall).await,
            None => Ok(()),
        }
    }
}

/// Sends `length` bytes of `file` from `first` with sendfile(2); a call that cannot send
/// within `stall` fails the transfer. Where the file system has no sendfile, copies instead.
async fn send_file(
    stream: &mut TcpStream,
    file: &std::fs::File,
    first: u64,
    length: u64,
    stall: Duration,
) -> io::Result<()> {
    let end = first + length;
    let mut offset = i64::try_from(first).map_err(io::Error::other)?;
    while (offset as u64) < end {
        let want = (end - offset as u64).min(MAX_CHUNK) as usize;
        let call = stream.async_io(Interest::WRITABLE, || {
            nix::sys::sendfile::sendfile64(&*stream, file, Some(&mut offset), want).map_err(io::Error::from)
        });
        let sent = match tokio::time::timeout(stall, call).await {
            Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, "client stopped reading")),
            Ok(Err(e)) if offset as u64 == first && matches!(e.raw_os_error(), Some(EINVAL | ENOSYS)) => {
                return copy_file(stream, file, first, length, stall).await;
            }
            Ok(sent) => sent?,
        };
        if sent == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was sent"));
        }
    }
    Ok(())
}

/// The copying fallback of [`send_file`].
async fn copy_file(
    stream: &mut TcpStream,
    file: &std::fs::File,
    first: u64,
    length: u64,
    stall: Duration,
) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let mut chunk = vec![0u8; 256 << 10];
    let mut done = 0u64;
    while done < length {
        let want = (length - done).min(chunk.len() as u64) as usize;
        let n = file.read_at(&mut chunk[..want], first + done)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was sent"));
        }
        tokio::time::timeout(stall, stream.write_all(&chunk[..n]))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "client stopped reading"))??;
        done += n as u64;
    }
    Ok(())
}

/// The request metric, and for a GET of content the event on the timeline of the machine
/// leasing the client's address — both as the router records them.
fn account(files: &Files, req: &FileRequest, answer: &Answer, ip: IpAddr) {
    let method = if req.get { "GET" } else { "HEAD" };
    let label = HttpLabel { method: method.into(), route: FILES_ROUTE.into(), status: answer.status };
    files.metrics.http_requests.get_or_create(&label).inc();
    if req.get && answer.status != 304 {
        if let IpAddr::V4(ip) = ip {
            let detail = json!({"path": req.rel_str, "status": answer.status, "bytes": answer.length, "range": req.range_header, "tls": false});
            files.cmdb.record_for_ip(ip, EventKind::BootAsset, detail);
        }
    }
}
