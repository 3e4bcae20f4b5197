//! What every listener's router gets around each route: the body limit and the request count,
//! in one layer.
//!
//! One hand-written layer rather than two `middleware::from_fn`: each of those boxes a future
//! that holds the request, a clone of the inner service and the state for as long as the
//! request runs, and a waiting long-poll holds them all (about 2.5 KB per layer per agent, at
//! 10,000 agents a tenth of the appliance's memory). This one holds the route's own future and
//! two labels.

use std::convert::Infallible;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use tower::{Layer, Service};

use super::{boot, ApiError, ApiState, MAX_BODY};
use crate::metrics::HttpLabel;

/// The one route whose body may exceed [`MAX_BODY`].
const PLUGIN_UPLOAD: &str = "/api/v1/plugins";

/// The layer: see the module.
#[derive(Clone)]
pub struct Bounded(pub ApiState);

impl<S> Layer<S> for Bounded {
    type Service = BoundedService<S>;
    fn layer(&self, inner: S) -> BoundedService<S> {
        BoundedService { state: self.0.clone(), inner }
    }
}

/// A route behind [`Bounded`].
#[derive(Clone)]
pub struct BoundedService<S> {
    state: ApiState,
    inner: S,
}

impl<S> Service<Request> for BoundedService<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let s = self.state.clone();
        let method = fold_method(req.method());
        let route = route_label(&req);
        let limit = body_limit(&s, &req);
        // A declared length past the limit is refused at once; a body that grows past it fails
        // as it is read (413).
        let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            let resp =
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("body larger than {limit} bytes")).into_response();
            count(&s, method, route, &resp);
            return Box::pin(std::future::ready(Ok(resp)));
        }
        let (parts, body) = req.into_parts();
        let req = Request::from_parts(parts, axum::body::Body::new(http_body_util::Limited::new(body, limit)));
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            count(&s, method, route, &resp);
            Ok(resp)
        })
    }
}

/// The body limit: [`MAX_BODY`] for every route but a plugin upload, which may be as large as
/// `plugins.max_bundle_bytes` (plus its form's framing), and a firmware image's
/// (`firmware.max_image_mb`).
fn body_limit(s: &ApiState, req: &Request) -> usize {
    let upload = req.method() == Method::POST && req.uri().path() == PLUGIN_UPLOAD;
    let image = req.method() == Method::PUT && req.uri().path() == super::baselines::IMAGE_UPLOAD;
    match (&s.plugins, &s.firmware) {
        (Some(p), _) if upload => {
            usize::try_from(p.limits.max_bundle_bytes).unwrap_or(usize::MAX).saturating_add(64 << 10)
        }
        (_, Some(f)) if image => usize::try_from(f.images.max_bytes()).unwrap_or(usize::MAX),
        _ => MAX_BODY,
    }
}

/// The route template as a metric label (never the raw path, so junk paths cannot grow the
/// number of series).
fn route_label(req: &Request) -> String {
    req.extensions()
        .get::<axum::extract::MatchedPath>()
        .map(|p| p.as_str().to_string())
        // Boot files are a nested service, which axum gives no matched path.
        .or_else(|| req.uri().path().starts_with(boot::FILES_ROUTE).then(|| boot::FILES_ROUTE.to_string()))
        .unwrap_or_else(|| "unmatched".to_string())
}

/// Counts a request by method (folded to a fixed set), route template and status.
fn count(s: &ApiState, method: &'static str, route: String, resp: &Response) {
    let label = HttpLabel { method: method.to_string(), route, status: resp.status().as_u16() };
    s.metrics.http_requests.get_or_create(&label).inc();
}

/// A method as a metric label: the standard ones by name, anything else as `other`.
fn fold_method(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}
