//! Read-request policy: path confinement to the boot directory and option negotiation
//! (blksize RFC 2348, timeout and tsize RFC 2349, windowsize RFC 7440).

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Longest file name accepted.
const MAX_NAME: usize = 255;
/// Largest window we agree to; more buys nothing on a LAN and costs memory per transfer.
pub const MAX_WINDOW: u16 = 64;
/// Largest block size (RFC 2348: 65464).
pub const MAX_BLKSIZE: usize = 65464;

/// What the transfer will use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    pub blksize: usize,
    pub windowsize: u16,
    pub timeout: Duration,
}

/// Resolves `name` inside `root`, refusing anything that could leave it: absolute paths, `..`,
/// backslashes, NUL, over-long names, and symlinks that point outside.
pub fn resolve(root: &Path, name: &str) -> Result<PathBuf, &'static str> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err("file name empty or too long");
    }
    if name.contains('\\') || name.contains('\0') {
        return Err("backslash or NUL in file name");
    }
    let rel = Path::new(name);
    for c in rel.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => return Err("'..' in file name"),
            Component::RootDir | Component::Prefix(_) => return Err("absolute file name"),
        }
    }
    let path = root.join(rel);
    let real = path.canonicalize().map_err(|_| "file not found")?;
    let real_root = root.canonicalize().map_err(|_| "boot directory missing")?;
    if !real.starts_with(&real_root) {
        return Err("file name resolves outside the boot directory");
    }
    if !real.is_file() {
        return Err("file not found");
    }
    Ok(real)
}

/// Picks the options to use and the ones to acknowledge in an OACK (empty: no OACK).
pub fn negotiate(options: &[(String, String)], file_size: u64) -> (Negotiated, Vec<(String, String)>) {
    let mut n = Negotiated { blksize: 512, windowsize: 1, timeout: Duration::from_secs(1) };
    let mut ack = Vec::new();
    for (k, v) in options {
        match k.as_str() {
            "blksize" => {
                if let Ok(b) = v.parse::<usize>() {
                    if b >= 8 {
                        n.blksize = b.min(MAX_BLKSIZE);
                        ack.push((k.clone(), n.blksize.to_string()));
                    }
                }
            }
            "windowsize" => {
                if let Ok(w) = v.parse::<u16>() {
                    if w >= 1 {
                        n.windowsize = w.min(MAX_WINDOW);
                        ack.push((k.clone(), n.windowsize.to_string()));
                    }
                }
            }
            "timeout" => {
                // RFC 2349 allows up to 255 s; more than 10 s would let one silent client hold a
                // transfer slot for most of an hour, so larger values are declined.
                if let Ok(t @ 1..=10) = v.parse::<u64>() {
                    n.timeout = Duration::from_secs(t);
                    ack.push((k.clone(), t.to_string()));
                }
            }
            "tsize" => ack.push((k.clone(), file_size.to_string())),
            // Unknown options are left out of the OACK, which tells the client they were refused.
            _ => {}
        }
    }
    (n, ack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("efi")).unwrap();
        std::fs::write(dir.path().join("efi/ipxe.efi"), b"x").unwrap();
        std::fs::write(dir.path().parent().unwrap().join("outside-secret"), b"s").ok();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        assert!(resolve(dir.path(), "efi/ipxe.efi").is_ok());
        assert!(resolve(dir.path(), "./efi/ipxe.efi").is_ok());
        for bad in
            ["../outside-secret", "efi/../../x", "/etc/passwd", "efi\\ipxe.efi", "a\0b", "link", "efi", "missing", ""]
        {
            assert!(resolve(dir.path(), bad).is_err(), "{bad:?} accepted");
        }
        assert!(resolve(dir.path(), &"a".repeat(256)).is_err());
    }

    #[test]
    fn negotiation() {
        let opts = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
        let (n, ack) =
            negotiate(&opts(&[("tsize", "0"), ("blksize", "1428"), ("windowsize", "16"), ("foo", "1")]), 4242);
        assert_eq!((n.blksize, n.windowsize), (1428, 16));
        assert_eq!(ack, opts(&[("tsize", "4242"), ("blksize", "1428"), ("windowsize", "16")]));
        let (n, ack) = negotiate(&opts(&[("blksize", "70000"), ("windowsize", "1000"), ("timeout", "0")]), 1);
        assert_eq!((n.blksize, n.windowsize, n.timeout), (MAX_BLKSIZE, MAX_WINDOW, Duration::from_secs(1)));
        assert_eq!(ack.len(), 2, "timeout 0 is refused");
        assert!(negotiate(&opts(&[("timeout", "255")]), 1).1.is_empty(), "long timeouts are declined");
        assert_eq!(negotiate(&opts(&[("timeout", "5")]), 1).0.timeout, Duration::from_secs(5));
        assert!(negotiate(&[], 1).1.is_empty());
        assert!(negotiate(&opts(&[("blksize", "7")]), 1).1.is_empty());
    }
}
