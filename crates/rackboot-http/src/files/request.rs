//! Which requests the zero-copy path takes, decided from the parsed head alone: a plain GET or
//! HEAD of a file under `/boot/files/`, with at most one satisfiable byte range and no
//! condition but `If-None-Match`. Everything else is [`None`] and goes to the router as before.

use std::path::PathBuf;

use percent_encoding::percent_decode_str;

/// The URL prefix of boot assets on plain HTTP.
pub const PREFIX: &str = "/boot/files/";
/// The largest request head the fast path reads before handing the connection to hyper.
pub const MAX_HEAD: usize = 8 << 10;
/// Headers a head may carry for the fast path (more: hyper decides).
pub const MAX_HEADERS: usize = 32;

/// A request the fast path answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRequest {
    /// GET (false: HEAD).
    pub get: bool,
    /// HTTP/1.1 (false: HTTP/1.0).
    pub http11: bool,
    /// The file relative to the boot directory, decoded and checked: no `..`, `.`, empty
    /// component, backslash or NUL.
    pub rel: PathBuf,
    /// `rel` as the timeline records it (`bootos/vmlinuz`).
    pub rel_str: String,
    pub range: Option<Range>,
    /// The raw `Range` header, for the timeline.
    pub range_header: Option<String>,
    pub if_none_match: Option<Vec<u8>>,
    /// Whether the client keeps the connection open after this answer.
    pub keep_alive: bool,
}

/// One byte range as asked; resolved against the file's length by [`Range::resolve`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// `first-` or `first-last`.
    From { first: u64, last: Option<u64> },
    /// `-n`: the last n bytes.
    Suffix(u64),
}

impl Range {
    /// The inclusive byte span of a file of `len` bytes, `None` when not satisfiable.
    pub fn resolve(self, len: u64) -> Option<(u64, u64)> {
        match self {
            Range::From { first, last } if first < len => Some((first, last.map_or(len - 1, |l| l.min(len - 1)))),
            Range::Suffix(n) if n > 0 && len > 0 => Some((len.saturating_sub(n), len - 1)),
            _ => None,
        }
    }
}

/// The fast path's reading of a parsed head; `None`: the router answers it.
pub fn classify(req: &httparse::Request) -> Option<FileRequest> {
    let get = match req.method? {
        "GET" => true,
        "HEAD" => false,
        _ => return None,
    };
    let http11 = match req.version? {
        1 => true,
        0 => false,
        _ => return None,
    };
    let path = req.path?;
    let path = path.split_once('?').map_or(path, |(p, _)| p);
    let encoded = path.strip_prefix(PREFIX)?;
    let decoded = percent_decode_str(encoded).decode_utf8().ok()?;
    // Doubled slashes are one (shim over HTTP asks for `<dir>//grubx64.efi`); a directory (a
    // trailing slash) and anything that could climb out are the router's.
    if decoded.is_empty() || decoded.ends_with('/') {
        return None;
    }
    let parts: Vec<&str> = decoded.split('/').filter(|c| !c.is_empty()).collect();
    if parts.iter().any(|c| *c == "." || *c == ".." || c.contains(['\\', '\0'])) {
        return None;
    }
    let rel_str = parts.join("/");
    let mut out = FileRequest {
        get,
        http11,
        rel: PathBuf::from(&rel_str),
        rel_str,
        range: None,
        range_header: None,
        if_none_match: None,
        keep_alive: http11,
    };
    let mut seen_range = false;
    for h in req.headers.iter() {
        let name = h.name;
        let eq = |n: &str| name.eq_ignore_ascii_case(n);
        if eq("content-length") {
            // A body (even an empty declared one) is hyper's to read.
            return None;
        } else if ["transfer-encoding", "expect", "if-range", "if-match", "if-modified-since", "if-unmodified-since"]
            .iter()
            .any(|n| eq(n))
        {
            return None;
        } else if eq("range") {
            if seen_range {
                return None;
            }
            seen_range = true;
            let value = std::str::from_utf8(h.value).ok()?;
            out.range = Some(parse_range(value)?);
            out.range_header = Some(value.to_string());
        } else if eq("if-none-match") {
            if out.if_none_match.is_some() {
                return None;
            }
            out.if_none_match = Some(h.value.to_vec());
        } else if eq("connection") {
            let value = std::str::from_utf8(h.value).ok()?;
            for token in value.split(',').map(str::trim) {
                if token.eq_ignore_ascii_case("close") {
                    out.keep_alive = false;
                } else if token.eq_ignore_ascii_case("keep-alive") && !http11 {
                    out.keep_alive = true;
                } else if token.eq_ignore_ascii_case("upgrade") {
                    return None;
                }
            }
        }
    }
    Some(out)
}

/// One `bytes=` range; `None` for several ranges, other units or anything malformed (the
/// router then answers as it always has).
fn parse_range(value: &str) -> Option<Range> {
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    if spec.contains(',') {
        return None;
    }
    let (first, last) = spec.split_once('-')?;
    let num = |s: &str| -> Option<u64> {
        let s = s.trim();
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    match (first.trim().is_empty(), last.trim().is_empty()) {
        (true, false) => Some(Range::Suffix(num(last)?)),
        (false, true) => Some(Range::From { first: num(first)?, last: None }),
        (false, false) => {
            let (first, last) = (num(first)?, num(last)?);
            (last >= first).then_some(Range::From { first, last: Some(last) })
        }
        (true, true) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify_raw(raw: &str) -> Option<FileRequest> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        assert!(req.parse(raw.as_bytes()).unwrap().is_complete(), "{raw}");
        classify(&req)
    }

    #[test]
    fn plain_gets_and_heads_of_boot_files_are_taken() {
        let r = classify_raw("GET /boot/files/bootos/vmlinuz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert!(r.get && r.http11 && r.keep_alive);
        assert_eq!((r.rel_str.as_str(), r.range), ("bootos/vmlinuz", None));
        let r = classify_raw("HEAD /boot/files/a%20b.img?x=1 HTTP/1.0\r\n\r\n").unwrap();
        assert!(!r.get && !r.http11 && !r.keep_alive);
        assert_eq!(r.rel_str, "a b.img");
        let r = classify_raw("GET /boot/files/k HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").unwrap();
        assert!(r.keep_alive);
        let r =
            classify_raw("GET /boot/files/k HTTP/1.1\r\nConnection: close\r\nIf-None-Match: \"a\"\r\n\r\n").unwrap();
        assert!(!r.keep_alive);
        assert_eq!(r.if_none_match.as_deref(), Some(&b"\"a\""[..]));
    }

    #[test]
    fn doubled_slashes_are_one() {
        for raw in ["GET /boot/files//a/b HTTP/1.1\r\n\r\n", "GET /boot/files/a//b HTTP/1.1\r\n\r\n"] {
            let r = classify_raw(raw).unwrap();
            assert_eq!((r.rel_str.as_str(), r.rel.as_path()), ("a/b", std::path::Path::new("a/b")), "{raw}");
        }
    }

    #[test]
    fn anything_unusual_goes_to_the_router() {
        for raw in [
            "POST /boot/files/k HTTP/1.1\r\n\r\n",
            "GET /boot/ipxe?mac=x HTTP/1.1\r\n\r\n",
            "GET /boot/files/ HTTP/1.1\r\n\r\n",
            "GET /boot/files/dir/ HTTP/1.1\r\n\r\n",
            "GET /boot/files/../secret HTTP/1.1\r\n\r\n",
            "GET /boot/files/a/%2e%2e/%2e%2e/secret HTTP/1.1\r\n\r\n",
            "GET /boot/files/a%5c..%5csecret HTTP/1.1\r\n\r\n",
            "GET /boot/files/a%00 HTTP/1.1\r\n\r\n",
            "GET /boot/files/%ff HTTP/1.1\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nIf-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nIf-Range: \"x\"\r\nRange: bytes=0-1\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nRange: bytes=0-1,5-6\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nRange: bytes=5-1\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nRange: lines=1-2\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nRange: bytes=0-1\r\nRange: bytes=2-3\r\n\r\n",
            "GET /boot/files/k HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
        ] {
            assert_eq!(classify_raw(raw), None, "{raw}");
        }
    }

    #[test]
    fn ranges_resolve_against_the_length() {
        let r = |v: &str| parse_range(v).unwrap();
        assert_eq!(r("bytes=1000-1999").resolve(100_000), Some((1000, 1999)));
        assert_eq!(r("bytes=1000-").resolve(100_000), Some((1000, 99_999)));
        assert_eq!(r("bytes=99000-200000").resolve(100_000), Some((99_000, 99_999)));
        assert_eq!(r("bytes=-500").resolve(100_000), Some((99_500, 99_999)));
        assert_eq!(r("bytes=-500").resolve(100), Some((0, 99)));
        assert_eq!(r("bytes=100-").resolve(100), None, "past the end");
        assert_eq!(r("bytes=-0").resolve(100), None);
        assert_eq!(r("bytes=0-").resolve(0), None);
        assert_eq!(parse_range("bytes=-"), None);
        assert_eq!(parse_range("bytes=+1-2"), None);
        assert_eq!(parse_range("bytes=99999999999999999999999-"), None);
    }
}
