//! Network-bound disk encryption: the appliance is a Tang server (the protocol Clevis speaks),
//! and a layout's encrypted file systems are bound to it, so they unlock at boot only while the
//! appliance answers. These are its records: the key pairs (private halves sealed) and which
//! machines' volumes are bound to which pair. What a key does is the control layer's.

use serde::{Deserialize, Serialize};

/// A Tang key pair set: a signing key (ES512) that signs the advertisement and an exchange key
/// (ECMR) clients bind to, both on P-521. The newest set is advertised; older ones still answer
/// recovery requests until no machine is bound to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TangKey {
    pub id: u64,
    /// Unix seconds.
    pub created_at: u64,
    /// Advertised (the newest); false: rotated out, kept for the machines still bound to it.
    pub active: bool,
    /// The signing key's public point (base64url x and y, 66 bytes each).
    pub signing: PublicPoint,
    /// The exchange key's public point.
    pub exchange: PublicPoint,
    /// The exchange key's JWK thumbprint (RFC 7638, SHA-256): the `kid` a bound volume names.
    pub thumbprint: String,
    /// Both private scalars, sealed with the data key (bound to [`TangKey::seal_binding`]);
    /// never in an answer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schema(ignore)]
    pub private_sealed: String,
}

/// A P-521 public point, as JWK coordinates (base64url without padding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PublicPoint {
    pub x: String,
    pub y: String,
}

impl TangKey {
    /// The key as the API shows it: without its sealed private half.
    pub fn shown(mut self) -> TangKey {
        self.private_sealed.clear();
        self
    }

    /// What the sealed private half is bound to, so it cannot be moved to another key record.
    pub fn seal_binding(id: u64) -> String {
        format!("tang-key:{id}")
    }
}

/// Machine `machine`'s encrypted volumes and the key they are bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TangBinding {
    pub machine: u64,
    pub key: u64,
    /// Device paths on the installed system (`/dev/rackboot/srv_data`).
    pub volumes: Vec<String>,
    /// Unix seconds of the bind (or the last re-bind).
    pub bound_at: u64,
    /// The re-bind job moving the volumes to `rebind_to`, while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebind_job: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebind_to: Option<u64>,
    /// Why the last re-bind did not finish (its job failed, or no agent took it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebind_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_half_is_stored_but_never_shown() {
        let p = PublicPoint { x: "x".into(), y: "y".into() };
        let key = TangKey {
            id: 3,
            created_at: 1,
            active: true,
            signing: p.clone(),
            exchange: p,
            thumbprint: "t".into(),
            private_sealed: "SEALED".into(),
        };
        assert!(serde_json::to_string(&key).unwrap().contains("SEALED"), "the store keeps it");
        assert!(!serde_json::to_string(&key.shown()).unwrap().contains("SEALED"));
        assert_eq!(TangKey::seal_binding(3), "tang-key:3");
    }
}
