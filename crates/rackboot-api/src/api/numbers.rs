//! JSON numbers as the document means them: `5.0` is the integer 5 to JSON Schema, and to
//! clients whose JSON has only floats (JavaScript, a Python float), but serde refuses it for an
//! integer field. A request body with such a number gets it written as an integer before any
//! handler reads it; every other body passes untouched.

use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Number, Value};

use super::ApiError;

/// Largest magnitude a float holds every integer up to (2^53).
const EXACT: f64 = 9_007_199_254_740_992.0;

/// The middleware: rewrites a JSON body's integral floats as integers.
pub async fn integral_floats(req: Request, next: Next) -> Response {
    let json = req.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    // The body limit (outside this layer) bounds what is read here.
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::new(axum::http::StatusCode::PAYLOAD_TOO_LARGE, "the body is too large").into_response()
        }
    };
    let mut value = serde_json::from_slice::<Value>(&bytes).ok();
    let changed = value.as_mut().is_some_and(rewrite);
    let bytes = match value.filter(|_| changed) {
        Some(v) => {
            parts.headers.remove(header::CONTENT_LENGTH);
            axum::body::Bytes::from(serde_json::to_vec(&v).unwrap_or_else(|_| bytes.to_vec()))
        }
        None => bytes,
    };
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// Rewrites every integral float in `v` (exactly representable) as an integer; whether any was.
fn rewrite(v: &mut Value) -> bool {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() != 0.0 || f.abs() > EXACT {
                return false;
            }
            *n = if f < 0.0 { Number::from(f as i64) } else { Number::from(f as u64) };
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |any, i| rewrite(i) | any),
        Value::Object(fields) => fields.values_mut().fold(false, |any, i| rewrite(i) | any),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_become_integers_and_nothing_else_changes() {
        let mut v = serde_json::json!({"ttl": 1048576.0, "mtu": [1500.0, 9000], "floor": 1.5, "neg": -3.0, "s": "2.0"});
        assert!(rewrite(&mut v));
        assert_eq!(v, serde_json::json!({"ttl": 1048576, "mtu": [1500, 9000], "floor": 1.5, "neg": -3, "s": "2.0"}));
        let mut big = serde_json::json!([1e300, 0.5]);
        assert!(!rewrite(&mut big), "too large to be exact, or not integral: left for the handler to refuse");
        assert_eq!(serde_json::from_value::<u64>(serde_json::json!(5)).unwrap(), 5);
    }
}
