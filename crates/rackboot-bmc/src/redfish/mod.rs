//! The Redfish driver (DMTF schema): finds the ComputerSystem (by id, or the only member of
//! the Systems collection), reads its power state, calls `ComputerSystem.Reset` with the reset
//! types it advertises, and sets a one-time boot override. It logs in through the
//! SessionService (`X-Auth-Token`, deleted at the end) and falls back to basic auth where the
//! BMC has no sessions.

pub mod bios;
pub mod certs;
pub mod dialect;
pub mod firmware;
pub mod http;
mod push;
pub mod update;
pub mod vmedia;

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use serde_json::json;

use crate::model::PowerState;
use crate::BmcError;
use http::Endpoint;

/// A Redfish reset type (`ResetType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    On,
    ForceOff,
    GracefulShutdown,
    ForceRestart,
    PowerCycle,
}

impl Reset {
    pub fn as_str(self) -> &'static str {
        match self {
            Reset::On => "On",
            Reset::ForceOff => "ForceOff",
            Reset::GracefulShutdown => "GracefulShutdown",
            Reset::ForceRestart => "ForceRestart",
            Reset::PowerCycle => "PowerCycle",
        }
    }
}

/// The boot override as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootOverride {
    pub target: Option<String>,
    pub enabled: Option<String>,
    pub mode: Option<String>,
}

enum Auth {
    Basic(String),
    Session { token: String, location: Option<String> },
}

/// A logged-in Redfish client for one system.
pub struct Redfish {
    ep: Endpoint,
    auth: Auth,
    system: String,
    reset_target: Option<String>,
    /// `ResetType@Redfish.AllowableValues`; `None`: the BMC does not say (all are tried).
    allowed: Option<Vec<String>>,
}

/// What a client needs to reach a BMC.
pub struct Target<'a> {
    pub host: String,
    pub port: u16,
    pub username: &'a str,
    pub password: &'a str,
    /// The client config for the BMC's TLS policy (the caller's: pin, CA or none).
    pub tls: Arc<rustls::ClientConfig>,
    pub system_id: Option<&'a str>,
    pub timeout: Duration,
}

impl Redfish {
    /// Logs in and finds the system.
    pub async fn connect(t: Target<'_>) -> Result<Redfish, BmcError> {
        let ep =
            Endpoint { host: t.host, port: t.port, tls: tokio_rustls::TlsConnector::from(t.tls), timeout: t.timeout };
        let auth = login(&ep, t.username, t.password).await?;
        let mut rf = Redfish { ep, auth, system: String::new(), reset_target: None, allowed: None };
        if let Err(e) = rf.find_system(t.system_id).await {
            rf.logout().await;
            return Err(e);
        }
        Ok(rf)
    }

    fn auth_header(&self) -> (&'static str, &str) {
        match &self.auth {
            Auth::Basic(b) => ("authorization", b.as_str()),
            Auth::Session { token, .. } => ("x-auth-token", token.as_str()),
        }
    }

    async fn find_system(&mut self, id: Option<&str>) -> Result<(), BmcError> {
        let path = match id {
            Some(id) => format!("/redfish/v1/Systems/{id}"),
            None => {
                let c = self.call(Method::GET, "/redfish/v1/Systems", None).await?.json()?;
                let members: Vec<&str> = c["Members"]
                    .as_array()
                    .map(|m| m.iter().filter_map(|m| m["@odata.id"].as_str()).collect())
                    .unwrap_or_default();
                match members.as_slice() {
                    [one] => one.to_string(),
                    [] => return Err(BmcError::Protocol("the Systems collection is empty".into())),
                    many => {
                        return Err(BmcError::Protocol(format!(
                            "{} systems on this BMC: set system_id (one of {many:?})",
                            many.len()
                        )))
                    }
                }
            }
        };
        let sys = self.call(Method::GET, &path, None).await?.json()?;
        self.system = sys["@odata.id"].as_str().map_or(path, str::to_string);
        let reset = &sys["Actions"]["#ComputerSystem.Reset"];
        self.reset_target = reset["target"].as_str().map(str::to_string);
        self.allowed = reset["ResetType@Redfish.AllowableValues"]
            .as_array()
            .map(|v| v.iter().filter_map(|s| s.as_str().map(str::to_string)).collect());
        Ok(())
    }

    /// Whether the BMC advertises `r` (or advertises nothing).
    pub fn supports(&self, r: Reset) -> bool {
        self.allowed.as_ref().is_none_or(|a| a.iter().any(|s| s == r.as_str()))
    }

    /// The system's power state.
    pub async fn power_state(&self) -> Result<PowerState, BmcError> {
        let sys = self.call(Method::GET, &self.system, None).await?.json()?;
        Ok(match sys["PowerState"].as_str() {
            Some("On") => PowerState::On,
            Some("Off") => PowerState::Off,
            Some("PoweringOn") => PowerState::PoweringOn,
            Some("PoweringOff") => PowerState::PoweringOff,
            _ => PowerState::Unknown,
        })
    }

    /// `ComputerSystem.Reset` with `r`.
    pub async fn reset(&self, r: Reset) -> Result<(), BmcError> {
        let target =
            self.reset_target.clone().unwrap_or_else(|| format!("{}/Actions/ComputerSystem.Reset", self.system));
        self.call(Method::POST, &target, Some(&json!({"ResetType": r.as_str()}))).await.map(drop)
    }

    /// Boots from the network once at the next start, in UEFI or legacy mode.
    pub async fn set_pxe_once(&self, uefi: bool) -> Result<(), BmcError> {
        let body = json!({"Boot": {
            "BootSourceOverrideTarget": "Pxe",
            "BootSourceOverrideEnabled": "Once",
            "BootSourceOverrideMode": if uefi { "UEFI" } else { "Legacy" },
        }});
        self.call(Method::PATCH, &self.system, Some(&body)).await.map(drop)
    }

    /// The boot override as the BMC reports it.
    pub async fn boot_override(&self) -> Result<BootOverride, BmcError> {
        let sys = self.call(Method::GET, &self.system, None).await?.json()?;
        let s = |k: &str| sys["Boot"][k].as_str().map(str::to_string);
        Ok(BootOverride {
            target: s("BootSourceOverrideTarget"),
            enabled: s("BootSourceOverrideEnabled"),
            mode: s("BootSourceOverrideMode"),
        })
    }

    /// Ends the session, if there is one (best effort: it times out on the BMC anyway).
    pub async fn logout(&self) {
        if let Auth::Session { location: Some(loc), .. } = &self.auth {
            if let Err(error) = self.call(Method::DELETE, loc, None).await {
                tracing::debug!(bmc = %self.ep.authority(), %error, "redfish session not deleted");
            }
        }
    }
}

/// Opens a session; basic auth where the BMC has no SessionService (404/405/501, 401, no token).
async fn login(ep: &Endpoint, user: &str, password: &str) -> Result<Auth, BmcError> {
    let basic = Auth::Basic(format!("Basic {}", base64(format!("{user}:{password}").as_bytes())));
    let body = json!({"UserName": user, "Password": password});
    match ep.send(Method::POST, "/redfish/v1/SessionService/Sessions", &[], Some(&body)).await {
        Ok(a) => {
            let h = |k| a.headers.get(k).and_then(|v: &hyper::header::HeaderValue| v.to_str().ok()).map(str::to_string);
            // The session's path (a Location may be absolute), to delete it at the end.
            let location = h("location").and_then(|l| l.parse::<hyper::Uri>().ok()).map(|u| u.path().to_string());
            match h("x-auth-token") {
                Some(token) => Ok(Auth::Session { token, location }),
                None => Ok(basic),
            }
        }
        // No SessionService, or one behind basic auth itself (sushy-emulator's htpasswd): basic
        // auth, which the next request then accepts or refuses.
        Err(BmcError::Status { status: 400 | 404 | 405 | 501, .. } | BmcError::Auth(_)) => Ok(basic),
        Err(e) => Err(e),
    }
}

fn base64(b: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            out.push(if i <= chunk.len() { B64[(n >> (18 - 6 * i)) as usize & 63] as char } else { '=' });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn basic_auth_is_base64() {
        assert_eq!(super::base64(b"admin:password"), "YWRtaW46cGFzc3dvcmQ=");
        assert_eq!(super::base64(b"ab"), "YWI=");
    }
}
