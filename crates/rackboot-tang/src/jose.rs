//! The Tang protocol's cryptography, as Clevis speaks it: P-521 keys as JWKs, their RFC 7638
//! thumbprints, the advertisement (a JWS in general JSON serialization over the JWK set,
//! ES512-signed by every advertised signing key), and the McCallum-Relyea exchange: the server
//! multiplies the point a client posts by its exchange key's private scalar, and learns nothing
//! of the client's key in doing so.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use p521::ecdsa::signature::Signer;
use p521::ecdsa::{Signature, SigningKey};
use p521::elliptic_curve::sec1::{FromEncodedPoint, ToEncodedPoint};
use p521::{EncodedPoint, FieldBytes, PublicKey, SecretKey};
use serde_json::{json, Value};
use sha2::Digest;

use rackboot_model::tang::PublicPoint;

/// A coordinate's or scalar's length on P-521.
const FIELD_LEN: usize = 66;
/// A recovery request's body, at most (a JWK is about 300 bytes).
pub const MAX_REQUEST: usize = 4096;

/// A new private key: 66 random bytes with the bits above 521 cleared, drawn again in the rare
/// case the scalar is not below the group order.
pub fn generate() -> Result<SecretKey, String> {
    loop {
        let mut bytes = [0u8; FIELD_LEN];
        getrandom::fill(&mut bytes).map_err(|e| format!("no randomness: {e}"))?;
        bytes[0] &= 0x01;
        if let Ok(key) = SecretKey::from_slice(&bytes) {
            return Ok(key);
        }
    }
}

/// A private key from its stored bytes.
pub fn secret(bytes: &[u8]) -> Result<SecretKey, String> {
    SecretKey::from_slice(bytes).map_err(|_| "a stored tang key is not a P-521 scalar".to_string())
}

/// The public point of `key`, as JWK coordinates.
pub fn public(key: &SecretKey) -> PublicPoint {
    point(&key.public_key())
}

fn point(key: &PublicKey) -> PublicPoint {
    let p = key.to_encoded_point(false);
    let (x, y) = (p.x().expect("not the identity"), p.y().expect("uncompressed"));
    PublicPoint { x: B64.encode(x), y: B64.encode(y) }
}

/// The JWK of a public point, for `alg` ("ES512" signs, "ECMR" derives keys).
pub fn jwk(p: &PublicPoint, alg: &str) -> Value {
    let ops = if alg == "ES512" { "verify" } else { "deriveKey" };
    json!({"alg": alg, "crv": "P-521", "key_ops": [ops], "kty": "EC", "x": p.x, "y": p.y})
}

/// The thumbprints Clevis may name a key by (RFC 7638 over the required members, in their
/// order): SHA-256 (`S256`, its default) and SHA-1 (`S1`, older releases').
pub fn thumbprints(p: &PublicPoint) -> [String; 2] {
    let members = format!(r#"{{"crv":"P-521","kty":"EC","x":"{}","y":"{}"}}"#, p.x, p.y);
    [B64.encode(sha2::Sha256::digest(members.as_bytes())), B64.encode(sha1::Sha1::digest(members.as_bytes()))]
}

/// The advertisement: the JWK set of `keys` (each pair's signing and exchange key), signed with
/// ES512 by each of `signers`.
pub fn advertisement(keys: &[(&PublicPoint, &PublicPoint)], signers: &[&SecretKey]) -> String {
    let set: Vec<Value> = keys.iter().flat_map(|(sig, exc)| [jwk(sig, "ES512"), jwk(exc, "ECMR")]).collect();
    let payload = B64.encode(json!({ "keys": set }).to_string());
    let protected = B64.encode(r#"{"alg":"ES512","cty":"jwk-set+json"}"#);
    let signatures: Vec<Value> = signers
        .iter()
        .map(|key| {
            let signer = SigningKey::from_bytes(&key.to_bytes()).expect("a valid scalar");
            let sig: Signature = signer.sign(format!("{protected}.{payload}").as_bytes());
            json!({"protected": protected, "signature": B64.encode(sig.to_bytes())})
        })
        .collect();
    json!({"payload": payload, "signatures": signatures}).to_string()
}

/// Why a recovery request was refused (the client's fault: 400).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadRequest(pub String);

/// The McCallum-Relyea step: the point in the JWK `body` times `exchange`'s scalar, as a JWK.
/// A body that is not an EC JWK on P-521 with a point on the curve is refused.
pub fn recover(exchange: &SecretKey, body: &[u8]) -> Result<Value, BadRequest> {
    let bad = |why: &str| BadRequest(why.to_string());
    if body.len() > MAX_REQUEST {
        return Err(bad("the request is larger than a JWK"));
    }
    let jwk: Value = serde_json::from_slice(body).map_err(|_| bad("the request is not JSON"))?;
    if jwk["kty"] != "EC" || jwk["crv"] != "P-521" {
        return Err(bad("the request is not an EC key on P-521"));
    }
    let coord = |name: &str| -> Result<FieldBytes, BadRequest> {
        let raw = jwk[name].as_str().and_then(|s| B64.decode(s).ok()).ok_or_else(|| bad("a coordinate is missing"))?;
        if raw.is_empty() || raw.len() > FIELD_LEN {
            return Err(bad("a coordinate has the wrong length"));
        }
        let mut full = [0u8; FIELD_LEN];
        full[FIELD_LEN - raw.len()..].copy_from_slice(&raw);
        Ok(FieldBytes::clone_from_slice(&full))
    };
    let encoded = EncodedPoint::from_affine_coordinates(&coord("x")?, &coord("y")?, false);
    let client: PublicKey =
        Option::from(PublicKey::from_encoded_point(&encoded)).ok_or_else(|| bad("the point is not on P-521"))?;
    let product = (client.to_projective() * *exchange.to_nonzero_scalar()).to_affine();
    let product = PublicKey::from_affine(product).map_err(|_| bad("the product is the identity"))?;
    Ok(jwk_of(&point(&product)))
}

fn jwk_of(p: &PublicPoint) -> Value {
    json!({"alg": "ECMR", "crv": "P-521", "key_ops": ["deriveKey"], "kty": "EC", "x": p.x, "y": p.y})
}

#[cfg(test)]
mod tests {
    use super::*;
    use p521::ecdsa::signature::Verifier;
    use p521::ecdsa::VerifyingKey;

    fn decode_point(v: &Value) -> PublicKey {
        let c = |n: &str| FieldBytes::clone_from_slice(&B64.decode(v[n].as_str().unwrap()).unwrap());
        let e = EncodedPoint::from_affine_coordinates(&c("x"), &c("y"), false);
        Option::from(PublicKey::from_encoded_point(&e)).unwrap()
    }

    #[test]
    fn the_exchange_recovers_the_key_a_client_bound_to() {
        // As Clevis does: bind with the server's exchange key S = sG and a client key c:
        // K = cS. Recover with an ephemeral e: send X = cG + eG, get Y = sX, K = Y - eS.
        let server = generate().unwrap();
        let (client, eph) = (generate().unwrap(), generate().unwrap());
        let s_pub = server.public_key().to_projective();
        let k = (s_pub * *client.to_nonzero_scalar()).to_affine();
        let x = (client.public_key().to_projective() + eph.public_key().to_projective()).to_affine();
        let body = jwk_of(&point(&PublicKey::from_affine(x).unwrap())).to_string();
        let y = decode_point(&recover(&server, body.as_bytes()).unwrap()).to_projective();
        let got = (y - s_pub * *eph.to_nonzero_scalar()).to_affine();
        assert_eq!(got, k);
    }

    #[test]
    fn a_request_that_is_not_a_point_on_the_curve_is_refused() {
        let server = generate().unwrap();
        let p = public(&generate().unwrap());
        let off_curve = PublicPoint { x: p.x.clone(), y: p.x.clone() };
        let cases = [
            ("not json".to_string(), "not JSON"),
            (json!({"kty": "EC", "crv": "P-256", "x": p.x, "y": p.y}).to_string(), "not an EC key on P-521"),
            (json!({"kty": "EC", "crv": "P-521", "x": p.x}).to_string(), "missing"),
            (jwk_of(&off_curve).to_string(), "not on P-521"),
            (json!({"kty": "EC", "crv": "P-521", "x": B64.encode([1u8; 67]), "y": p.y}).to_string(), "wrong length"),
            ("x".repeat(MAX_REQUEST + 1), "larger"),
        ];
        for (body, want) in cases {
            let err = recover(&server, body.as_bytes()).unwrap_err();
            assert!(err.0.contains(want), "{body}: {err}");
        }
    }

    #[test]
    fn the_advertisement_is_signed_by_each_signing_key_over_its_key_set() {
        let (sig, exc) = (generate().unwrap(), generate().unwrap());
        let (sp, ep) = (public(&sig), public(&exc));
        let adv: Value = serde_json::from_str(&advertisement(&[(&sp, &ep)], &[&sig])).unwrap();
        let payload = adv["payload"].as_str().unwrap();
        let set: Value = serde_json::from_slice(&B64.decode(payload).unwrap()).unwrap();
        assert_eq!(set["keys"][0], jwk(&sp, "ES512"));
        assert_eq!(set["keys"][1]["key_ops"], json!(["deriveKey"]));
        let s = &adv["signatures"][0];
        let protected = s["protected"].as_str().unwrap();
        let signature = Signature::from_slice(&B64.decode(s["signature"].as_str().unwrap()).unwrap()).unwrap();
        let verifier = VerifyingKey::from(&SigningKey::from_bytes(&sig.to_bytes()).unwrap());
        verifier.verify(format!("{protected}.{payload}").as_bytes(), &signature).unwrap();
        // Thumbprints: base64url of SHA-256 (43 characters) and SHA-1 (27).
        let [s256, s1] = thumbprints(&ep);
        assert_eq!((s256.len(), s1.len()), (43, 27));
    }
}
