//! What an unauthenticated client can do to the HTTP server's bookkeeping is bounded: junk
//! methods and random paths do not add metric series (methods fold to a fixed set, routes are
//! templates), and a body past the limit is refused with 413 before a handler reads it.

use std::collections::HashSet;

use crate::common::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends raw request bytes on a new connection; returns the response.
async fn raw(addr: std::net::SocketAddr, req: &[u8]) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(req).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn junk_methods_and_paths_keep_metric_series_bounded() {
    let lab = Lab::start("").await;
    let http = lab.app.as_ref().unwrap().http_addr;
    for i in 0..10_000 {
        let req = format!("JUNK{i} /api/v1/machines/{i}/nowhere{i} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let r = raw(http, req.as_bytes()).await;
        assert!(r.starts_with("HTTP/1.1 4"), "{r}");
    }
    for i in 0..200 {
        http_get(http, &format!("/boot/ipxe?mac=52:54:00:00:{:02x}:{:02x}", i / 256, i % 256)).await;
        http_get(http, &format!("/no/such/{i}")).await;
    }
    let metrics = lab.metrics().await;
    let series: Vec<&str> = metrics.lines().filter(|l| l.starts_with("rackboot_http_requests_total{")).collect();
    assert!(series.len() < 20, "{} series:\n{}", series.len(), series.join("\n"));
    let methods: HashSet<&str> = series.iter().filter_map(|l| l.split("method=\"").nth(1)?.split('"').next()).collect();
    assert!(methods.contains("other") && methods.iter().all(|m| !m.starts_with("JUNK")), "{methods:?}");
    assert!(series.iter().any(|l| l.contains("route=\"/boot/ipxe\"")), "{series:?}");
    assert!(series.iter().all(|l| !l.contains("nowhere") && !l.contains("/no/such")), "{series:?}");
}

#[tokio::test]
async fn a_body_past_the_limit_is_refused_with_413() {
    let lab = Lab::start("").await;
    let http = lab.app.as_ref().unwrap().http_addr;
    let big = 2 << 20;
    for path in ["/agent/v1/enroll", "/api/v1/tasks"] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {big}\r\nConnection: close\r\n\r\n"
        );
        let mut req = head.into_bytes();
        req.extend(std::iter::repeat_n(b' ', big));
        let r = raw(http, &req).await;
        assert!(r.starts_with("HTTP/1.1 413"), "{path}: {r}");
    }
}
