//! Answers from our zones, kept per UDP socket and reused for the same query.
//!
//! A zone answer depends only on the query's bytes after its ID (flags, the question as it was
//! spelled, the client's EDNS record) and on the zone snapshot, named by its SOA serial, which
//! every rebuild moves forward. So once a query was answered from the zones, the same query
//! again is answered with those bytes and the new query's ID, without parsing the query or
//! building the answer (most of the CPU a query costs). Only authoritative, untruncated answers
//! are kept (our zones' NOERROR, NODATA and NXDOMAIN); forwarded answers and refusals never are.
//! A new serial empties the cache, and it holds at most [`MAX_ENTRIES`] answers of at most
//! [`MAX_ANSWER`] bytes (a flood of invented names clears it over and over, no more).

use std::collections::HashMap;

use hickory_server::proto::op::ResponseCode;

/// Answers kept per socket.
pub const MAX_ENTRIES: usize = 2048;
/// The longest answer kept (the size RFC 9715 advises for UDP); longer ones are built each time.
pub const MAX_ANSWER: usize = 1232;
/// The longest query kept as a key.
const MAX_QUERY: usize = 512;

/// A kept answer and its response code.
type Kept = (Box<[u8]>, ResponseCode);

/// One socket's cache.
#[derive(Default)]
pub struct Answers {
    serial: u32,
    /// By the query's bytes after its ID.
    kept: HashMap<Box<[u8]>, Kept>,
}

impl Answers {
    /// The answer to `query` (a whole datagram) for zone serial `serial`, written into `out`
    /// with the query's ID, and its response code; None when it must be answered afresh.
    pub fn answer(&mut self, query: &[u8], serial: u32, out: &mut Vec<u8>) -> Option<ResponseCode> {
        if serial != self.serial {
            self.kept.clear();
            self.serial = serial;
            return None;
        }
        let (answer, rcode) = self.kept.get(query.get(2..)?)?;
        out.clear();
        out.extend_from_slice(answer);
        out[..2].copy_from_slice(&query[..2]);
        Some(*rcode)
    }

    /// Keeps `answer` to `query` for zone serial `serial`, where it may be (see the module).
    pub fn keep(&mut self, query: &[u8], answer: &[u8], rcode: ResponseCode, serial: u32) {
        if serial != self.serial || query.len() > MAX_QUERY || answer.len() > MAX_ANSWER || query.len() < 12 {
            return;
        }
        if answer.len() < 12 {
            return;
        }
        if self.kept.len() >= MAX_ENTRIES {
            self.kept.clear();
        }
        self.kept.insert(query[2..].into(), (answer.into(), rcode));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(id: u16, name: &[u8]) -> Vec<u8> {
        [&id.to_be_bytes()[..], &[1, 0, 0, 1, 0, 0, 0, 0, 0, 0], name, &[0, 1, 0, 1]].concat()
    }

    #[test]
    fn the_same_query_gets_the_kept_answer_with_its_own_id_until_the_serial_moves() {
        let mut a = Answers::default();
        let mut out = Vec::new();
        let q = query(0x1111, b"\x02h1\x03lab\x00");
        assert_eq!(a.answer(&q, 7, &mut out), None, "a new serial: nothing kept");
        let answer = [&[0x11, 0x11, 0x85, 0x80][..], &[0, 1, 0, 1, 0, 0, 0, 0], b"rest"].concat();
        a.keep(&q, &answer, ResponseCode::NoError, 7);
        let again = query(0xbeef, b"\x02h1\x03lab\x00");
        assert_eq!(a.answer(&again, 7, &mut out), Some(ResponseCode::NoError));
        assert_eq!(&out[..2], &[0xbe, 0xef], "the new query's ID");
        assert_eq!(&out[2..], &answer[2..], "the rest as kept");
        // Another spelling (0x20 case) or another question is another key.
        assert_eq!(a.answer(&query(1, b"\x02H1\x03lab\x00"), 7, &mut out), None);
        // The zones were rebuilt: answered afresh, and kept again only for the new serial.
        assert_eq!(a.answer(&again, 8, &mut out), None);
        a.keep(&q, &answer, ResponseCode::NoError, 7);
        assert_eq!(a.answer(&again, 8, &mut out), None, "an answer built before the rebuild is not kept");
    }

    #[test]
    fn the_cache_stays_bounded() {
        let mut a = Answers::default();
        let mut out = Vec::new();
        a.answer(&query(0, b"\x00"), 1, &mut out);
        for i in 0..(MAX_ENTRIES as u32 * 3) {
            let q = query(0, format!("\x08{i:08}\x00").as_bytes());
            a.keep(&q, &q, ResponseCode::NXDomain, 1);
            assert!(a.kept.len() <= MAX_ENTRIES);
        }
        let big = vec![0u8; MAX_ANSWER + 1];
        let q = query(0, b"\x03big\x00");
        a.keep(&q, &big, ResponseCode::NoError, 1);
        assert_eq!(a.answer(&q, 1, &mut out), None, "too long to keep");
        a.keep(&[0; 5], &[0; 20], ResponseCode::NoError, 1);
        assert_eq!(a.answer(&[0; 5], 1, &mut out), None, "a datagram shorter than a header");
    }
}
