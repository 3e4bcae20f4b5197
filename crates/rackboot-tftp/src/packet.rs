//! TFTP wire format (RFC 1350) with option extension (RFC 2347): read requests, ACKs and errors
//! in; DATA, OACK and ERROR out.

/// Opcodes.
pub const RRQ: u16 = 1;
pub const WRQ: u16 = 2;
pub const DATA: u16 = 3;
pub const ACK: u16 = 4;
pub const ERROR: u16 = 5;
pub const OACK: u16 = 6;

/// Error codes (RFC 1350, 2347).
pub const ERR_NOT_DEFINED: u16 = 0;
pub const ERR_NOT_FOUND: u16 = 1;
pub const ERR_ACCESS: u16 = 2;
pub const ERR_ILLEGAL: u16 = 4;
pub const ERR_UNKNOWN_TID: u16 = 5;
pub const ERR_OPTIONS: u16 = 8;

/// A packet a client sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    Read { filename: String, mode: String, options: Vec<(String, String)> },
    Write,
    Ack(u16),
    Error { code: u16, message: String },
}

/// Why a datagram could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed tftp packet: {0}")]
pub struct Malformed(pub &'static str);

fn strings(body: &[u8]) -> Result<Vec<String>, Malformed> {
    if body.last() != Some(&0) {
        return Err(Malformed("strings not NUL-terminated"));
    }
    body[..body.len() - 1]
        .split(|b| *b == 0)
        .map(|s| String::from_utf8(s.to_vec()).map_err(|_| Malformed("non-UTF-8 string")))
        .collect()
}

/// Parses one datagram.
pub fn parse(buf: &[u8]) -> Result<Incoming, Malformed> {
    if buf.len() < 4 {
        return Err(Malformed("shorter than 4 bytes"));
    }
    let op = u16::from_be_bytes([buf[0], buf[1]]);
    let body = &buf[2..];
    match op {
        RRQ => {
            let parts = strings(body)?;
            if parts.len() < 2 || parts.len() % 2 != 0 {
                return Err(Malformed("request needs filename, mode and option pairs"));
            }
            let options = parts[2..].chunks(2).map(|kv| (kv[0].to_ascii_lowercase(), kv[1].clone())).collect();
            Ok(Incoming::Read { filename: parts[0].clone(), mode: parts[1].to_ascii_lowercase(), options })
        }
        WRQ => Ok(Incoming::Write),
        ACK => Ok(Incoming::Ack(u16::from_be_bytes([body[0], body[1]]))),
        ERROR => {
            let code = u16::from_be_bytes([body[0], body[1]]);
            let message = String::from_utf8_lossy(&body[2..]).trim_end_matches('\0').to_string();
            Ok(Incoming::Error { code, message })
        }
        _ => Err(Malformed("unknown opcode")),
    }
}

/// A DATA packet header followed by `payload`, written into `out`.
pub fn data(out: &mut Vec<u8>, block: u16, payload: &[u8]) {
    out.clear();
    out.extend_from_slice(&DATA.to_be_bytes());
    out.extend_from_slice(&block.to_be_bytes());
    out.extend_from_slice(payload);
}

/// An OACK listing the accepted options.
pub fn oack(options: &[(String, String)]) -> Vec<u8> {
    let mut out = OACK.to_be_bytes().to_vec();
    for (k, v) in options {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

/// An ERROR packet.
pub fn error(code: u16, message: &str) -> Vec<u8> {
    let mut out = ERROR.to_be_bytes().to_vec();
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(message.as_bytes());
    out.push(0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_read_request_with_options() {
        let pkt = b"\x00\x01undionly.kpxe\x00octet\x00tsize\x000\x00BLKSIZE\x001428\x00";
        assert_eq!(
            parse(pkt).unwrap(),
            Incoming::Read {
                filename: "undionly.kpxe".into(),
                mode: "octet".into(),
                options: vec![("tsize".into(), "0".into()), ("blksize".into(), "1428".into())],
            }
        );
    }

    #[test]
    fn parses_ack_and_error() {
        assert_eq!(parse(b"\x00\x04\x01\x02").unwrap(), Incoming::Ack(0x0102));
        assert_eq!(
            parse(b"\x00\x05\x00\x08tsize probe\x00").unwrap(),
            Incoming::Error { code: 8, message: "tsize probe".into() }
        );
    }

    #[test]
    fn refuses_malformed() {
        for bad in
            [&b"\x00"[..], b"\x00\x01name", b"\x00\x01name\x00", b"\x00\x09\x00\x00", b"\x00\x01a\x00octet\x00odd\x00"]
        {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn random_input_never_panics() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let seed = b"\x00\x01file.bin\x00octet\x00blksize\x001428\x00".to_vec();
        for i in 0..50_000 {
            let mut p = if i % 2 == 0 { seed.clone() } else { (0..next() % 64).map(|_| next() as u8).collect() };
            if !p.is_empty() && i % 2 == 0 {
                for _ in 0..(next() % 4 + 1) {
                    let at = next() as usize % p.len();
                    p[at] = next() as u8;
                }
                p.truncate(next() as usize % (p.len() + 1));
            }
            let _ = parse(&p);
        }
    }

    #[test]
    fn builds_packets() {
        let mut out = Vec::new();
        data(&mut out, 7, b"abc");
        assert_eq!(out, b"\x00\x03\x00\x07abc");
        assert_eq!(oack(&[("blksize".into(), "1428".into())]), b"\x00\x06blksize\x001428\x00");
        assert_eq!(error(1, "nope"), b"\x00\x05\x00\x01nope\x00");
    }
}
