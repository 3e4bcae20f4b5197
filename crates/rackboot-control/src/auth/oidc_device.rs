//! The CLI's login through the OpenID provider: the device authorization flow (RFC 8628), with
//! this appliance as the client (its secret never leaves it). [`Provider::device_begin`] asks the
//! provider for a user code and keeps the device code here under a handle of its own (bounded
//! like browser logins, per address too); the CLI shows the user where to enter the code and
//! polls [`Provider::device_poll`] with the handle, which asks the provider at most once per
//! interval. The ID token that comes back is checked as a browser login's (the issuer's keys,
//! this client, the issuer, expiry and issue time), without a nonce (the flow has none).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine;
use openidconnect::core::CoreIdToken;
use serde_json::Value;

use super::oidc::{Identity, OidcError, Provider, MAX_PENDING, MAX_PENDING_PER_PEER};

/// A device login begun: what the user is told, and the handle the CLI polls with.
#[derive(Debug, Clone)]
pub struct DeviceBegun {
    pub handle: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: Option<String>,
    pub expires_in: u64,
    pub interval: u64,
}

/// Where a device login is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DevicePoll {
    /// Not yet confirmed by the user: ask again after `interval` seconds.
    Pending {
        interval: u64,
    },
    Done(Identity),
}

/// A device login waiting for its user.
pub(super) struct DevicePending {
    device_code: String,
    interval: Duration,
    expires: Instant,
    last_poll: Option<Instant>,
    peer: std::net::IpAddr,
}

/// Device logins kept, by handle.
pub(super) type DeviceLogins = HashMap<String, DevicePending>;

impl Provider {
    /// Begins a device login from `peer`.
    pub async fn device_begin(&self, peer: std::net::IpAddr) -> Result<DeviceBegun, OidcError> {
        let endpoint = self.endpoint("device_authorization_endpoint").await?;
        let scopes = self.cfg.scopes.join(" ");
        let answer = self.post(&endpoint, &[("scope", scopes.as_str())]).await?;
        let text = |k: &str| answer[k].as_str().map(str::to_string);
        let (Some(device_code), Some(user_code), Some(verification_uri)) =
            (text("device_code"), text("user_code"), text("verification_uri"))
        else {
            return Err(OidcError::Unreachable(format!("the device authorization answer lacks fields: {answer}")));
        };
        let expires_in = answer["expires_in"].as_u64().unwrap_or(600).clamp(60, 1800);
        let interval = answer["interval"].as_u64().unwrap_or(5).clamp(1, 60);
        let (_, handle, _) = super::new_token().map_err(|e| OidcError::Unreachable(e.to_string()))?;
        let mut logins = self.devices.lock().expect("device logins");
        let now = Instant::now();
        logins.retain(|_, d| d.expires > now);
        if logins.len() >= MAX_PENDING || logins.values().filter(|d| d.peer == peer).count() >= MAX_PENDING_PER_PEER {
            return Err(OidcError::Busy);
        }
        let pending = DevicePending {
            device_code,
            interval: Duration::from_secs(interval),
            expires: now + Duration::from_secs(expires_in),
            last_poll: None,
            peer,
        };
        logins.insert(handle.clone(), pending);
        Ok(DeviceBegun {
            handle,
            user_code,
            verification_uri,
            verification_uri_complete: text("verification_uri_complete"),
            expires_in,
            interval,
        })
    }

    /// Asks whether the device login `handle` is done (the provider at most once per interval).
    pub async fn device_poll(&self, handle: &str) -> Result<DevicePoll, OidcError> {
        let device_code = {
            let mut logins = self.devices.lock().expect("device logins");
            let d = logins
                .get_mut(handle)
                .ok_or_else(|| OidcError::Refused("no such device login (or it ended)".into()))?;
            if d.expires <= Instant::now() {
                logins.remove(handle);
                return Err(OidcError::Refused("the code expired: log in again".into()));
            }
            if d.last_poll.is_some_and(|t| t.elapsed() < d.interval) {
                return Ok(DevicePoll::Pending { interval: d.interval.as_secs() });
            }
            d.last_poll = Some(Instant::now());
            d.device_code.clone()
        };
        // The token endpoint from the metadata the client is made of (read at most every 15
        // minutes), not a discovery read per poll.
        let client = self.client().await?;
        let token = client
            .token_uri()
            .map(|u| u.url().to_string())
            .ok_or_else(|| OidcError::Unreachable("the provider names no token endpoint".into()))?;
        let form = [("grant_type", "urn:ietf:params:oauth:grant-type:device_code"), ("device_code", &device_code)];
        let answer = match self.post(&token, &form).await {
            Ok(a) => a,
            Err(OidcError::Refused(why)) if why.contains("authorization_pending") || why.contains("slow_down") => {
                let mut logins = self.devices.lock().expect("device logins");
                let d = logins.get_mut(handle).ok_or_else(|| OidcError::Refused("the device login ended".into()))?;
                if why.contains("slow_down") {
                    d.interval += Duration::from_secs(5);
                }
                return Ok(DevicePoll::Pending { interval: d.interval.as_secs() });
            }
            Err(e) => {
                self.devices.lock().expect("device logins").remove(handle);
                return Err(e);
            }
        };
        self.devices.lock().expect("device logins").remove(handle);
        let jwt =
            answer["id_token"].as_str().ok_or_else(|| OidcError::Refused("the provider sent no ID token".into()))?;
        let token: CoreIdToken = jwt.parse().map_err(|e| OidcError::Refused(format!("the ID token: {e}")))?;
        let verifier = self.verifier(&client);
        let no_nonce = |_: Option<&openidconnect::Nonce>| Ok(());
        let claims = token.claims(&verifier, no_nonce).map_err(|e| OidcError::Refused(format!("the ID token: {e}")))?;
        let subject = format!("{} at {}", claims.subject().as_str(), claims.issuer().as_str());
        let raw = super::oidc::payload(jwt)?;
        Ok(DevicePoll::Done(Identity { username: self.username(&raw)?, subject, access: self.access(&raw) }))
    }

    /// An endpoint the provider's discovery document names.
    async fn endpoint(&self, name: &str) -> Result<String, OidcError> {
        let url = format!("{}/.well-known/openid-configuration", self.cfg.issuer);
        let doc = self.get_json(&url).await?;
        let found = doc[name].as_str().ok_or_else(|| OidcError::Unreachable(format!("the provider has no {name}")))?;
        if !found.starts_with("https://") {
            return Err(OidcError::Unreachable(format!("{name} {found} is not https")));
        }
        Ok(found.to_string())
    }

    async fn get_json(&self, url: &str) -> Result<Value, OidcError> {
        let req = hyper::Request::get(url).body(Vec::new()).map_err(|e| OidcError::Unreachable(e.to_string()))?;
        let resp = self.send(req).await?;
        serde_json::from_slice(resp.body()).map_err(|e| OidcError::Unreachable(format!("{url}: {e}")))
    }

    /// POSTs a form to the provider as this client (HTTP Basic with the secret, or the client id
    /// in the form for a public client): the JSON answer, or the provider's error as a refusal.
    async fn post(&self, url: &str, form: &[(&str, &str)]) -> Result<Value, OidcError> {
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let mut body: Vec<String> = form.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect();
        let mut req = hyper::Request::post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        match self.secret() {
            Some(secret) => {
                let basic = format!("{}:{}", enc(&self.cfg.client_id), enc(secret));
                let basic = base64::engine::general_purpose::STANDARD.encode(basic);
                req = req.header("authorization", format!("Basic {basic}"));
            }
            None => body.push(format!("client_id={}", enc(&self.cfg.client_id))),
        }
        let req = req.body(body.join("&").into_bytes()).map_err(|e| OidcError::Unreachable(e.to_string()))?;
        let resp = self.send(req).await?;
        let v: Value = serde_json::from_slice(resp.body())
            .map_err(|e| OidcError::Unreachable(format!("{url} answered {}: {e}", resp.status())))?;
        if resp.status().is_success() {
            return Ok(v);
        }
        let error = v["error"].as_str().unwrap_or("error");
        Err(OidcError::Refused(format!("{error}: {}", v["error_description"].as_str().unwrap_or(""))))
    }
}
