//! Boot requests that are not files, answered by the router without leaving the fast path's loop.
//! iPXE keeps its connection: it asks for its boot script (`/boot/ipxe?mac=`), then the kernel
//! and the initrd on the same one. Once a connection went to hyper for the script it stayed
//! there, and the kernel and initrd were read through the router's file service (two 256 KiB
//! buffers and blocking-pool hops per busy connection: 1.5 GB of RSS in a 5,000-machine storm)
//! instead of sendfile. So a plain GET or HEAD under `/boot/` with no body is handed to the
//! router here, as hyper would hand it, and its response written back by this loop; the next
//! request on the connection is the fast path's again.
//!
//! Anything else — HTTP/1.0, a body or a declared length, `Expect`, an upgrade, a path outside
//! `/boot/` (the API, the UI) — goes to hyper as before.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Version};
use axum::Router;
use http_body_util::BodyExt;
use hyper::body::Body as _;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tower::ServiceExt;

/// The routes under this prefix are the firmware's and installers': they may be routed here.
const PREFIX: &str = "/boot/";

/// A request the router answers inside the loop.
#[derive(Debug)]
pub struct Routed {
    head_only: bool,
    keep_alive: bool,
    request: Request<Body>,
}

/// The router's request for a parsed head, when it is one this loop may answer (see the
/// module's doc).
pub fn routable(req: &httparse::Request, peer: SocketAddr) -> Option<Routed> {
    let method = match req.method? {
        "GET" => Method::GET,
        "HEAD" => Method::HEAD,
        _ => return None,
    };
    if req.version? != 1 {
        return None;
    }
    let path = req.path?;
    if !path.starts_with(PREFIX) {
        return None;
    }
    let mut request = Request::builder().method(method.clone()).uri(path).version(Version::HTTP_11);
    let mut keep_alive = true;
    for h in req.headers.iter() {
        let eq = |n: &str| h.name.eq_ignore_ascii_case(n);
        if eq("content-length") || eq("transfer-encoding") || eq("expect") || eq("upgrade") {
            return None;
        }
        if eq("connection") {
            for token in std::str::from_utf8(h.value).ok()?.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case("upgrade") {
                    return None;
                }
            }
        }
        let name = HeaderName::from_bytes(h.name.as_bytes()).ok()?;
        request = request.header(name, HeaderValue::from_bytes(h.value).ok()?);
    }
    let mut request = request.body(Body::empty()).ok()?;
    request.extensions_mut().insert(ConnectInfo(peer));
    Some(Routed { head_only: method == Method::HEAD, keep_alive, request })
}

impl Routed {
    /// Asks the router and writes its answer; whether the connection stays open after it.
    /// Each write must make progress within `stall`; a body may take as long as it takes.
    pub async fn answer(self, app: &Router, stream: &mut TcpStream, stall: Duration) -> io::Result<bool> {
        let response = match app.clone().oneshot(self.request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        write_response(stream, response, self.head_only, self.keep_alive, stall).await
    }
}

/// Writes `response` as HTTP/1.1: its length when known, else chunked; no body for HEAD, 204,
/// 304 and 1xx. Returns whether the connection stays open.
async fn write_response(
    stream: &mut TcpStream,
    response: Response<Body>,
    head_only: bool,
    keep_alive: bool,
    stall: Duration,
) -> io::Result<bool> {
    let (parts, mut body) = response.into_parts();
    let status = parts.status;
    let bodiless = status.is_informational() || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED;
    let closes =
        |v: &HeaderValue| v.to_str().is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")));
    let keep_alive = keep_alive && !parts.headers.get(header::CONNECTION).is_some_and(closes);
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let length = declared.or_else(|| body.size_hint().exact());
    let chunked = !bodiless && !head_only && length.is_none();
    let mut head = format!("HTTP/1.1 {} {}\r\n", status.as_u16(), status.canonical_reason().unwrap_or("")).into_bytes();
    for (name, value) in &parts.headers {
        if [header::CONNECTION, header::TRANSFER_ENCODING, header::CONTENT_LENGTH].contains(name)
            || name.as_str() == "keep-alive"
        {
            continue;
        }
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    if !parts.headers.contains_key(header::DATE) {
        head.extend_from_slice(format!("date: {}\r\n", httpdate::fmt_http_date(SystemTime::now())).as_bytes());
    }
    match length {
        Some(n) if !bodiless => head.extend_from_slice(format!("content-length: {n}\r\n").as_bytes()),
        _ if chunked => head.extend_from_slice(b"transfer-encoding: chunked\r\n"),
        _ => {}
    }
    if !keep_alive {
        head.extend_from_slice(b"connection: close\r\n");
    }
    head.extend_from_slice(b"\r\n");
    write(stream, &head, stall).await?;
    if bodiless || head_only {
        return Ok(keep_alive);
    }
    let mut sent = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(io::Error::other)?;
        let Ok(data) = frame.into_data() else { continue };
        if data.is_empty() {
            continue;
        }
        sent += data.len() as u64;
        if chunked {
            write(stream, format!("{:x}\r\n", data.len()).as_bytes(), stall).await?;
            write(stream, &data, stall).await?;
            write(stream, b"\r\n", stall).await?;
        } else {
            if length.is_some_and(|n| sent > n) {
                return Err(io::Error::other("the body is longer than its declared length"));
            }
            write(stream, &data, stall).await?;
        }
    }
    if chunked {
        write(stream, b"0\r\n\r\n", stall).await?;
    } else if length.is_some_and(|n| sent != n) {
        return Err(io::Error::other("the body is shorter than its declared length"));
    }
    Ok(keep_alive)
}

async fn write(stream: &mut TcpStream, bytes: &[u8], stall: Duration) -> io::Result<()> {
    tokio::time::timeout(stall, stream.write_all(bytes))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "client stopped reading"))?
}

#[cfg(test)]
mod tests;
