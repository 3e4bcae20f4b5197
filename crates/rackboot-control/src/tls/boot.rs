//! The TLS of the boot listener, which firmware's HTTPS boot fetches BootOS's image from. EDK2's
//! TLS (OVMF, and the many servers' firmware built on it) has no elliptic curves: its ClientHello
//! offers TLS 1.2 with DHE-RSA and plain RSA key exchange, no `supported_groups`, and RSA
//! signatures only. So this listener serves the boot CA's RSA certificate (see
//! [`super::ca::BOOT`]) and adds to rustls's suites the DHE-RSA ones with AES-GCM, over RFC
//! 7919's ffdhe2048 group, which rustls picks for a TLS 1.2 client that names no group. Plain
//! RSA key exchange (no forward secrecy) is not offered. Everything else (ECDHE, TLS 1.3) stays
//! as on the main listener.

use std::sync::{Arc, OnceLock};

use crypto_bigint::modular::runtime_mod::{DynResidue, DynResidueParams};
use crypto_bigint::{Encoding, U2048};
use rustls::crypto::{
    ActiveKeyExchange, CipherSuiteCommon, CryptoProvider, KeyExchangeAlgorithm, SharedSecret, SupportedKxGroup,
};
use rustls::ffdhe_groups::{FfdheGroup, FFDHE2048};
use rustls::{CipherSuite, NamedGroup, PeerMisbehaved, SupportedCipherSuite, Tls12CipherSuite};

/// Bytes of an ffdhe2048 value.
const LEN: usize = 256;
/// Bits of the private exponent: RFC 7919 (5.2) asks at least 225 for ffdhe2048.
const EXPONENT_BITS: usize = 256;

/// RFC 7919's ffdhe2048 (generator 2), computed with crypto-bigint's constant-time
/// Montgomery exponentiation.
#[derive(Debug)]
struct Ffdhe2048;

static FFDHE: Ffdhe2048 = Ffdhe2048;

fn params() -> DynResidueParams<{ U2048::LIMBS }> {
    DynResidueParams::new(&U2048::from_be_slice(FFDHE2048.p))
}

fn pow(base: &U2048, exponent: &U2048) -> [u8; LEN] {
    DynResidue::new(base, params()).pow_bounded_exp(exponent, EXPONENT_BITS).retrieve().to_be_bytes()
}

impl SupportedKxGroup for Ffdhe2048 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        let mut x = [0u8; LEN];
        getrandom::fill(&mut x[LEN - EXPONENT_BITS / 8..]).map_err(|_| rustls::Error::FailedToGetRandomBytes)?;
        let x = U2048::from_be_slice(&x);
        let pub_key = pow(&U2048::from_u8(2), &x).to_vec();
        Ok(Box::new(Active { x, pub_key }))
    }

    fn ffdhe_group(&self) -> Option<FfdheGroup<'static>> {
        Some(FFDHE2048)
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::FFDHE2048
    }
}

/// One exchange: the private exponent and the public value sent.
struct Active {
    x: U2048,
    pub_key: Vec<u8>,
}

impl ActiveKeyExchange for Active {
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, rustls::Error> {
        // 1 < y < p - 1: the values of small order (1 and p - 1) would fix the secret.
        let invalid = || rustls::Error::from(PeerMisbehaved::InvalidKeyShare);
        let peer = peer.get(peer.iter().take_while(|b| **b == 0).count()..).unwrap_or_default();
        if peer.is_empty() || peer.len() > LEN {
            return Err(invalid());
        }
        let mut y = [0u8; LEN];
        y[LEN - peer.len()..].copy_from_slice(peer);
        let y = U2048::from_be_slice(&y);
        let p_minus_1 = U2048::from_be_slice(FFDHE2048.p).wrapping_sub(&U2048::ONE);
        if y <= U2048::ONE || y >= p_minus_1 {
            return Err(invalid());
        }
        // Padded to the modulus's length (TLS 1.3); rustls strips the zeros for TLS 1.2.
        Ok(SharedSecret::from(&pow(&y, &self.x)[..]))
    }

    fn pub_key(&self) -> &[u8] {
        &self.pub_key
    }

    fn ffdhe_group(&self) -> Option<FfdheGroup<'static>> {
        Some(FFDHE2048)
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::FFDHE2048
    }
}

/// `ecdhe` with DHE key exchange under suite id `id` (the same AEAD, PRF and signatures).
fn dhe(ecdhe: SupportedCipherSuite, id: CipherSuite) -> SupportedCipherSuite {
    let SupportedCipherSuite::Tls12(s) = ecdhe else { unreachable!("a TLS 1.2 suite") };
    let suite =
        Tls12CipherSuite { common: CipherSuiteCommon { suite: id, ..s.common }, kx: KeyExchangeAlgorithm::DHE, ..*s };
    SupportedCipherSuite::Tls12(Box::leak(Box::new(suite)))
}

/// The DHE-RSA suites with AES-GCM, made once.
fn dhe_suites() -> &'static [SupportedCipherSuite; 2] {
    static SUITES: OnceLock<[SupportedCipherSuite; 2]> = OnceLock::new();
    SUITES.get_or_init(|| {
        use rustls::crypto::ring::cipher_suite as ring;
        [
            dhe(ring::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, CipherSuite::TLS_DHE_RSA_WITH_AES_128_GCM_SHA256),
            dhe(ring::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, CipherSuite::TLS_DHE_RSA_WITH_AES_256_GCM_SHA384),
        ]
    })
}

/// ring's provider with the DHE-RSA suites after its own, and ffdhe2048 after its curves.
pub fn provider() -> Arc<CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites.extend(dhe_suites().iter().copied());
    p.kx_groups.push(&FFDHE);
    Arc::new(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_of_an_exchange_agree_and_bad_shares_are_refused() {
        let (a, b) = (FFDHE.start().unwrap(), FFDHE.start().unwrap());
        let (pa, pb) = (a.pub_key().to_vec(), b.pub_key().to_vec());
        assert_eq!((pa.len(), pb.len()), (LEN, LEN));
        let (sa, sb) = (a.complete(&pb).unwrap(), b.complete(&pa).unwrap());
        assert_eq!(sa.secret_bytes(), sb.secret_bytes());
        let p_minus_1 = U2048::from_be_slice(FFDHE2048.p).wrapping_sub(&U2048::ONE).to_be_bytes();
        for bad in [&[][..], &[0][..], &[1][..], &p_minus_1[..], FFDHE2048.p, &[7u8; LEN + 1][..]] {
            assert!(FFDHE.start().unwrap().complete(bad).is_err(), "{:?}", &bad[..bad.len().min(4)]);
        }
    }
}
