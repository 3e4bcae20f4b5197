use std::time::Duration;

use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::files::{self, After, Files, MAX_HEADERS};

const PEER: &str = "198.18.0.7:40000";

fn routable_raw(raw: &str) -> Option<Routed> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    assert!(req.parse(raw.as_bytes()).unwrap().is_complete(), "{raw}");
    routable(&req, PEER.parse().unwrap())
}

#[test]
fn plain_gets_and_heads_of_boot_routes_are_routed_here_and_nothing_else() {
    let r = routable_raw("GET /boot/ipxe?mac=52:54:00:00:00:01 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(r.keep_alive && !r.head_only);
    assert_eq!(r.request.uri(), "/boot/ipxe?mac=52:54:00:00:00:01");
    assert_eq!(r.request.headers()["host"], "x");
    assert!(r.request.extensions().get::<ConnectInfo<SocketAddr>>().is_some(), "handlers see the peer");
    let r = routable_raw("HEAD /boot/cloud-init/x HTTP/1.1\r\nConnection: close\r\n\r\n").unwrap();
    assert!(r.head_only && !r.keep_alive);
    for raw in [
        "POST /boot/ipxe HTTP/1.1\r\n\r\n",
        "GET /boot/ipxe HTTP/1.0\r\n\r\n",
        "GET /api/v1/machines HTTP/1.1\r\n\r\n",
        "GET /ui/ HTTP/1.1\r\n\r\n",
        "GET /boot/ipxe HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        "GET /boot/ipxe HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET /boot/ipxe HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
        "GET /boot/ipxe HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    ] {
        assert!(routable_raw(raw).is_none(), "{raw}");
    }
}

/// A router like the appliance's boot routes: a script, a stream of unknown length, and no
/// file service (a boot file the router were asked for would be a 404).
fn app() -> Router {
    Router::new().route("/boot/ipxe", get(|| async { "#!ipxe\nkernel /boot/files/k\nboot\n" })).route(
        "/boot/stream",
        get(|| async { Body::from_stream(tokio_util::io::ReaderStream::new(std::io::Cursor::new(b"one,two,three"))) }),
    )
}

/// One response read off `s`: status, headers (lower-case names), body (by length or chunks).
async fn response(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (u16, Vec<(String, String)>, Vec<u8>) {
    answer(s, buf, false).await
}

/// The answer to a HEAD: the head only, whatever length it declares.
async fn head_response(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (u16, Vec<(String, String)>, Vec<u8>) {
    answer(s, buf, true).await
}

async fn answer(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>, head: bool) -> (u16, Vec<(String, String)>, Vec<u8>) {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(n) = r.parse(buf).unwrap() {
            let status = r.code.unwrap();
            let hs: Vec<(String, String)> = r
                .headers
                .iter()
                .map(|h| (h.name.to_ascii_lowercase(), String::from_utf8_lossy(h.value).into_owned()))
                .collect();
            buf.drain(..n);
            let find = |k: &str| hs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            let body = if head {
                Vec::new()
            } else if let Some(len) = find("content-length") {
                let len: usize = len.parse().unwrap();
                fill(s, buf, len).await;
                buf.drain(..len).collect()
            } else if find("transfer-encoding").as_deref() == Some("chunked") {
                let mut body = Vec::new();
                loop {
                    let line_end = loop {
                        if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
                            break i;
                        }
                        read_more(s, buf).await;
                    };
                    let size = usize::from_str_radix(std::str::from_utf8(&buf[..line_end]).unwrap(), 16).unwrap();
                    fill(s, buf, line_end + 2 + size + 2).await;
                    body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
                    buf.drain(..line_end + 2 + size + 2);
                    if size == 0 {
                        break body;
                    }
                }
            } else {
                Vec::new()
            };
            return (status, hs, body);
        }
        read_more(s, buf).await;
    }
}

async fn fill(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>, n: usize) {
    while buf.len() < n {
        read_more(s, buf).await;
    }
}

async fn read_more(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) {
    let mut chunk = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut chunk)).await.expect("an answer").unwrap();
    assert!(n > 0, "connection closed early");
    buf.extend_from_slice(&chunk[..n]);
}

#[tokio::test]
async fn ipxes_script_then_its_kernel_on_one_connection_both_stay_on_the_fast_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("boot");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("k"), vec![7u8; 100_000]).unwrap();
    let cmdb = rackboot_store::Cmdb::open(&dir.path().join("cmdb.redb"), 64).unwrap();
    let files = Files { root, cmdb, metrics: Default::default() };
    let limits = rackboot_config::ConnLimits {
        header_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(5),
        max_connections: 16,
        max_connections_per_client: 16,
    };
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let (stream, peer) = listener.accept().await.unwrap();
        let after = files::serve(&files, &app(), stream, peer, &limits, &CancellationToken::new()).await;
        matches!(after, After::Closed)
    });
    let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    c.write_all(b"GET /boot/ipxe?mac=52:54:00:00:00:01 HTTP/1.1\r\nHost: a\r\n\r\n").await.unwrap();
    let (status, headers, body) = response(&mut c, &mut buf).await;
    assert_eq!((status, body.as_slice()), (200, &b"#!ipxe\nkernel /boot/files/k\nboot\n"[..]));
    assert!(headers.iter().any(|(n, v)| n == "content-type" && v.starts_with("text/plain")), "{headers:?}");
    assert!(headers.iter().any(|(n, _)| n == "date"));
    // The kernel on the same connection: the router has no file service, so a 200 with the
    // file's bytes and ETag says the fast path served it.
    c.write_all(b"GET /boot/files/k HTTP/1.1\r\nHost: a\r\n\r\n").await.unwrap();
    let (status, headers, body) = response(&mut c, &mut buf).await;
    assert_eq!((status, body.len()), (200, 100_000));
    assert!(headers.iter().any(|(n, _)| n == "etag"), "{headers:?}");
    // A body of unknown length goes out chunked; a HEAD gets the head only.
    c.write_all(b"GET /boot/stream HTTP/1.1\r\n\r\nHEAD /boot/ipxe HTTP/1.1\r\n\r\n").await.unwrap();
    let (status, headers, body) = response(&mut c, &mut buf).await;
    assert_eq!((status, body.as_slice()), (200, &b"one,two,three"[..]), "{headers:?}");
    let (status, headers, _) = head_response(&mut c, &mut buf).await;
    assert_eq!(status, 200);
    assert!(headers.iter().any(|(n, v)| n == "content-length" && v == "33"), "{headers:?}");
    // Nothing but the head came: the next answer's status line follows at once.
    // A missing route is the router's 404, and the connection is still kept; `close` ends it.
    c.write_all(b"GET /boot/nothing HTTP/1.1\r\nConnection: close\r\n\r\n").await.unwrap();
    let (status, headers, _) = response(&mut c, &mut buf).await;
    assert_eq!(status, 404);
    assert!(headers.iter().any(|(n, v)| n == "connection" && v == "close"), "{headers:?}");
    assert_eq!(c.read(&mut [0u8; 16]).await.unwrap(), 0, "closed after the answer");
    assert!(server.await.unwrap());
}
