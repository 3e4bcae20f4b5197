//! A qcow2 image's header, read before anything converts it: an image is untrusted input (it
//! comes from vendors and downloads), and qcow2 can name other files for its converter to read
//! (a backing file, an external data file). Such an image, an encrypted one, one marked corrupt
//! or with features this reader does not know, and one whose virtual size is over the bound are
//! refused with the reason. The format: qemu's `docs/interop/qcow2.txt`.

/// Header fields read (big-endian), by offset.
const VERSION: usize = 4;
const BACKING_OFFSET: usize = 8;
const BACKING_SIZE: usize = 16;
const SIZE: usize = 24;
const CRYPT: usize = 32;
const INCOMPATIBLE: usize = 72;
const HEADER_LENGTH: usize = 100;
/// Version 2's header is fixed at 72 bytes; version 3 says its own length.
const V2_LENGTH: usize = 72;

/// Incompatible feature bits: dirty (0), corrupt (1), external data file (2), compression type
/// (3), extended L2 entries (4).
const CORRUPT: u64 = 1 << 1;
const EXTERNAL_DATA: u64 = 1 << 2;
const KNOWN: u64 = 0b11111;

/// Header extensions that name another file: the backing file's format, the external data file.
const EXT_BACKING_FORMAT: u32 = 0xe279_2aca;
const EXT_DATA_FILE: u32 = 0x4441_5441;
/// Header extensions read at most (a real image has a handful).
const MAX_EXTENSIONS: usize = 64;

/// How many bytes of the file [`check`] needs: the header and its extensions fit in the first
/// cluster, which qemu keeps at 64 KiB or less for the header.
pub const HEAD: usize = 64 << 10;

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Checks the header `head` (the file's first [`HEAD`] bytes or all of a smaller file); the
/// image's virtual size if it refers to nothing outside itself and is at most `max_size`.
pub fn check(head: &[u8], max_size: u64) -> Result<u64, String> {
    let short = || "its qcow2 header is cut short".to_string();
    if head.get(..4) != Some(b"QFI\xfb") {
        return Err("it is not a qcow2 image".into());
    }
    let version = be32(head, VERSION).ok_or_else(short)?;
    if !(2..=3).contains(&version) {
        return Err(format!("qcow2 version {version} is not one this appliance reads (2 or 3)"));
    }
    if be64(head, BACKING_OFFSET).ok_or_else(short)? != 0 || be32(head, BACKING_SIZE).ok_or_else(short)? != 0 {
        return Err("it has a backing file: it reads another file (flatten it first: qemu-img convert -O qcow2)".into());
    }
    if be32(head, CRYPT).ok_or_else(short)? != 0 {
        return Err("it is encrypted".into());
    }
    let size = be64(head, SIZE).ok_or_else(short)?;
    if size > max_size {
        return Err(format!("its virtual size ({size} bytes) is over the {max_size} allowed"));
    }
    let length = if version == 2 {
        V2_LENGTH
    } else {
        let features = be64(head, INCOMPATIBLE).ok_or_else(short)?;
        if features & EXTERNAL_DATA != 0 {
            return Err("it keeps its data in an external data file: it reads another file".into());
        }
        if features & CORRUPT != 0 {
            return Err("qemu marked it corrupt".into());
        }
        if features & !KNOWN != 0 {
            return Err(format!("it needs qcow2 features this appliance does not know ({features:#x})"));
        }
        be32(head, HEADER_LENGTH).ok_or_else(short)? as usize
    };
    // The extensions: (type, length, data padded to 8 bytes) until type 0.
    let mut at = length;
    for _ in 0..MAX_EXTENSIONS {
        let kind = be32(head, at).ok_or_else(short)?;
        let len = be32(head, at + 4).ok_or_else(short)? as usize;
        match kind {
            0 => return Ok(size),
            EXT_DATA_FILE => return Err("it names an external data file: it reads another file".into()),
            EXT_BACKING_FORMAT => return Err("it names a backing file's format: it reads another file".into()),
            _ => at = at.checked_add(8 + len.div_ceil(8) * 8).ok_or_else(short)?,
        }
    }
    Err(format!("its header has more than {MAX_EXTENSIONS} extensions"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const MAX: u64 = 1 << 40;

    /// `qemu-img create` with `args`, the file's first bytes; `None` without qemu-img.
    fn made(args: &[&str]) -> Option<Vec<u8>> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("qemu-img").arg("create").arg("-q").args(args).current_dir(dir.path()).output().ok()?;
        assert!(out.status.success(), "qemu-img create {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let bytes = std::fs::read(dir.path().join("t.qcow2")).unwrap();
        Some(bytes[..bytes.len().min(HEAD)].to_vec())
    }

    #[test]
    fn what_qemu_img_makes_is_read_as_qemu_means_it() {
        let Some(plain) = made(&["-f", "qcow2", "t.qcow2", "64M"]) else {
            eprintln!("SKIPPED: no qemu-img (qemu-utils)");
            return;
        };
        assert_eq!(check(&plain, MAX), Ok(64 << 20));
        let v2 = made(&["-f", "qcow2", "-o", "compat=0.10", "t.qcow2", "1M"]).unwrap();
        assert_eq!(check(&v2, MAX), Ok(1 << 20));
        assert!(check(&plain, 1 << 20).unwrap_err().contains("over the"));

        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret"), "admin token").unwrap();
        let backed = Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2", "-F", "raw", "-b"])
            .arg(dir.path().join("secret"))
            .arg(dir.path().join("t.qcow2"))
            .arg("1M")
            .status()
            .unwrap();
        assert!(backed.success());
        let head = std::fs::read(dir.path().join("t.qcow2")).unwrap();
        assert!(check(&head, MAX).unwrap_err().contains("backing file"));

        let data = Command::new("qemu-img")
            .args(["create", "-q", "-f", "qcow2", "-o"])
            .arg(format!("data_file={}", dir.path().join("secret").display()))
            .arg(dir.path().join("d.qcow2"))
            .arg("1M")
            .status()
            .unwrap();
        assert!(data.success());
        let head = std::fs::read(dir.path().join("d.qcow2")).unwrap();
        assert!(check(&head, MAX).unwrap_err().contains("external data file"));
    }

    #[test]
    fn forged_headers_are_refused_without_panic() {
        let mut h = vec![0u8; 512];
        h[..4].copy_from_slice(b"QFI\xfb");
        h[4..8].copy_from_slice(&3u32.to_be_bytes());
        h[100..104].copy_from_slice(&112u32.to_be_bytes());
        assert_eq!(check(&h, MAX), Ok(0));
        // A backing file name given by length alone.
        let mut b = h.clone();
        b[16..20].copy_from_slice(&9u32.to_be_bytes());
        assert!(check(&b, MAX).is_err());
        // The data-file extension, after an unknown one.
        let mut d = h.clone();
        d[112..116].copy_from_slice(&0x1234_5678u32.to_be_bytes());
        d[116..120].copy_from_slice(&3u32.to_be_bytes());
        d[128..132].copy_from_slice(&EXT_DATA_FILE.to_be_bytes());
        assert!(check(&d, MAX).unwrap_err().contains("external data file"));
        // Lengths that run off the end, huge header lengths, too many extensions: errors.
        let mut l = h.clone();
        l[100..104].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(check(&l, MAX).is_err());
        let mut many = h.clone();
        for i in 0..50 {
            let at = 112 + i * 8;
            many[at..at + 4].copy_from_slice(&7u32.to_be_bytes());
        }
        assert!(check(&many, MAX).is_err(), "runs off the 512 bytes");
        for n in 0..h.len() {
            let _ = check(&h[..n], MAX);
        }
        assert!(check(b"QFI", MAX).is_err());
        assert!(check(b"not an image at all", MAX).is_err());
    }
}
