//! The accept loop both web listeners share: admits a connection only under the per-client
//! and total caps, does the TLS handshake (HTTPS) within its timeout, and serves HTTP/1.1 with
//! hyper under a header-read and an idle timeout. A connection's failure is logged at debug
//! and dropped; it never stops the listener.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;
use tracing::debug;

use super::files::{self, Files};
use crate::DRAIN;
use rackboot_base::metrics::{ConnRefusedLabel, Metrics};
use rackboot_config::ConnLimits;

/// One listener's settings.
pub struct Listener {
    /// "http" or "https", the metric label.
    pub name: &'static str,
    pub limits: ConnLimits,
    /// TLS and its handshake timeout; `None`: plain HTTP.
    pub tls: Option<(TlsAcceptor, Duration)>,
    /// Boot files answered with sendfile before hyper sees the connection (plain HTTP only).
    pub files: Option<Files>,
}

/// Serves `app` on `listener` until `shutdown`, then lets open requests finish (briefly).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    settings: Listener,
    metrics: Metrics,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let gate = Arc::new(Gate::new(settings.limits));
    let settings = Arc::new(settings);
    let tracker = TaskTracker::new();
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(error) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    debug!(listener = settings.name, %error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Some(permit) = gate.admit(peer.ip()) else {
            let reason = if gate.total.load(Ordering::Relaxed) >= settings.limits.max_connections {
                "total"
            } else {
                "per_client"
            };
            metrics
                .http_connections_refused
                .get_or_create(&ConnRefusedLabel { listener: settings.name.into(), reason: reason.into() })
                .inc();
            debug!(listener = settings.name, %peer, reason, "connection over the cap closed");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        // A child token: the connection polls it at each wake, and the listener's is one mutex
        // that every connection would lock, from each worker thread.
        let (app, settings, shutdown) = (app.clone(), settings.clone(), shutdown.child_token());
        tracker.spawn(async move {
            let _permit = permit;
            match &settings.tls {
                None => match &settings.files {
                    None => connection(stream, peer, app, &settings, shutdown).await,
                    Some(f) => match files::serve(f, &app, stream, peer, &settings.limits, &shutdown).await {
                        files::After::Router(rest) => connection(rest, peer, app, &settings, shutdown).await,
                        files::After::Closed => {}
                    },
                },
                Some((acceptor, timeout)) => match tokio::time::timeout(*timeout, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => connection(tls, peer, app, &settings, shutdown).await,
                    Ok(Err(error)) => debug!(%peer, %error, "tls handshake failed"),
                    Err(_) => debug!(%peer, "tls handshake timed out"),
                },
            }
        });
    }
    tracker.close();
    let _ = tokio::time::timeout(DRAIN + Duration::from_secs(1), tracker.wait()).await;
    Ok(())
}

/// A request extension: the request came over TLS (the HTTPS listener).
#[derive(Debug, Clone, Copy)]
pub struct OverTls;

/// Serves one connection until the client closes it, it idles out, or shutdown drains it.
async fn connection<I>(io: I, peer: SocketAddr, app: Router, settings: &Listener, shutdown: CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::default());
    let seen = activity.clone();
    let tls = settings.tls.is_some();
    let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
        req.extensions_mut().insert(ConnectInfo(peer));
        if tls {
            req.extensions_mut().insert(OverTls);
        }
        let call = app.clone().oneshot(req);
        let busy = Busy::start(seen.clone());
        async move {
            // The request counts as in flight until its response body is sent (or dropped), so a
            // long download or event stream is never taken for an idle connection.
            let resp = call.await?;
            Ok::<_, std::convert::Infallible>(resp.map(|body| {
                axum::body::Body::new(body.map_frame(move |frame| {
                    let _ = &busy;
                    frame
                }))
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(settings.limits.header_timeout);
    let conn = builder.serve_connection(TokioIo::new(io), service).with_upgrades();
    tokio::pin!(conn);
    let idle = settings.limits.idle_timeout;
    let mut drain_until: Option<Instant> = None;
    loop {
        // While a request runs, look again one idle period later.
        let idle_check = activity.idle_since().unwrap_or_else(Instant::now) + idle;
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    debug!(%peer, %error, "http connection ended with an error");
                }
                return;
            }
            _ = shutdown.cancelled(), if drain_until.is_none() => {
                conn.as_mut().graceful_shutdown();
                drain_until = Some(Instant::now() + DRAIN);
            }
            _ = sleep_until(drain_until), if drain_until.is_some() => return,
            _ = tokio::time::sleep_until(idle_check), if drain_until.is_none() => {
                if activity.idle_since().is_some_and(|since| since + idle <= Instant::now()) {
                    debug!(%peer, "idle connection closed");
                    return;
                }
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// One request in flight, from its head until its response body is gone.
struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: Arc<Activity>) -> Busy {
        activity.begin();
        Busy(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// Requests in flight on one connection and when the last one ended.
struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

impl Default for Activity {
    fn default() -> Self {
        Activity { in_flight: AtomicUsize::new(0), last: Mutex::new(Instant::now()) }
    }
}

impl Activity {
    fn begin(&self) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
    }

    fn end(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    /// When the connection went idle; `None` while a request is being handled.
    fn idle_since(&self) -> Option<Instant> {
        (self.in_flight.load(Ordering::SeqCst) == 0).then(|| *self.last.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Open connections per client address and in total.
struct Gate {
    limits: ConnLimits,
    total: AtomicUsize,
    per_client: Mutex<HashMap<IpAddr, usize>>,
}

/// One admitted connection; gives its place back when dropped.
struct Permit {
    gate: Arc<Gate>,
    ip: IpAddr,
}

impl Gate {
    fn new(limits: ConnLimits) -> Gate {
        Gate { limits, total: AtomicUsize::new(0), per_client: Mutex::new(HashMap::new()) }
    }

    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Permit> {
        let mut per = self.per_client.lock().unwrap_or_else(|e| e.into_inner());
        if self.total.load(Ordering::SeqCst) >= self.limits.max_connections {
            return None;
        }
        let n = per.entry(ip).or_insert(0);
        if *n >= self.limits.max_connections_per_client {
            return None;
        }
        *n += 1;
        self.total.fetch_add(1, Ordering::SeqCst);
        Some(Permit { gate: self.clone(), ip })
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut per = self.gate.per_client.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = per.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                per.remove(&self.ip);
            }
        }
        self.gate.total.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_caps_per_client_and_in_total_and_gives_places_back() {
        let limits = ConnLimits {
            header_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            max_connections: 3,
            max_connections_per_client: 2,
        };
        let gate = Arc::new(Gate::new(limits));
        let (a, b): (IpAddr, IpAddr) = ("198.18.0.1".parse().unwrap(), "198.18.0.2".parse().unwrap());
        let p1 = gate.admit(a).unwrap();
        let _p2 = gate.admit(a).unwrap();
        assert!(gate.admit(a).is_none(), "per-client cap");
        let _p3 = gate.admit(b).unwrap();
        assert!(gate.admit(b).is_none(), "total cap");
        drop(p1);
        assert!(gate.admit(a).is_some(), "a closed connection frees its place");
        assert!(gate.per_client.lock().unwrap().len() <= 2);
    }
}
