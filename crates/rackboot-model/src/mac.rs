//! The MAC address type: parsed leniently, printed as lowercase colon-separated hex.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A 48-bit Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

/// Why a string is not a MAC address.
#[derive(Debug, thiserror::Error)]
#[error("invalid MAC address {0:?}: expected six hex octets like 52:54:00:12:34:56")]
pub struct ParseMacError(String);

impl Mac {
    /// Packs the address into the low 48 bits of a u64 (the CMDB key form).
    pub fn to_u64(self) -> u64 {
        let mut b = [0u8; 8];
        b[2..].copy_from_slice(&self.0);
        u64::from_be_bytes(b)
    }

    /// Inverse of [`Mac::to_u64`].
    pub fn from_u64(v: u64) -> Self {
        let b = v.to_be_bytes();
        let mut m = [0u8; 6];
        m.copy_from_slice(&b[2..]);
        Mac(m)
    }

    /// Takes the first six bytes of a DHCP chaddr, if there are six.
    pub fn from_slice(s: &[u8]) -> Option<Self> {
        let arr: [u8; 6] = s.get(..6)?.try_into().ok()?;
        Some(Mac(arr))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Mac {
    type Err = ParseMacError;

    /// Accepts `52:54:00:12:34:56`, `52-54-00-12-34-56` and `525400123456`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex: String = s.chars().filter(|c| *c != ':' && *c != '-').collect();
        let err = || ParseMacError(s.to_string());
        if hex.len() != 12 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(err());
        }
        let mut out = [0u8; 6];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&hex[i * 2..i * 2 + 2], 16).map_err(|_| err())?;
        }
        Ok(Mac(out))
    }
}

impl utoipa::PartialSchema for Mac {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            // Exactly what `from_str` accepts: twelve hex digits, ':' or '-' between them.
            .pattern(Some("^[:-]*([0-9A-Fa-f][:-]*){12}$"))
            .description(Some(
                "A MAC address; shown as 52:54:00:12:34:56, also read as 52-54-00-12-34-56 or 525400123456",
            ))
            .examples([serde_json::json!("52:54:00:12:34:56")])
            .into()
    }
}

impl utoipa::ToSchema for Mac {}

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_spellings_and_round_trips() {
        let m: Mac = "52:54:00:AB:cd:01".parse().unwrap();
        assert_eq!(m.to_string(), "52:54:00:ab:cd:01");
        assert_eq!("52-54-00-ab-cd-01".parse::<Mac>().unwrap(), m);
        assert_eq!("525400abcd01".parse::<Mac>().unwrap(), m);
        assert_eq!(Mac::from_u64(m.to_u64()), m);
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "52:54:00", "zz:54:00:ab:cd:01", "52:54:00:ab:cd:01:02"] {
            assert!(bad.parse::<Mac>().is_err(), "{bad} accepted");
        }
    }
}
