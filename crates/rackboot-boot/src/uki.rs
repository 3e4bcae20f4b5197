//! BootOS as one UEFI image (a unified kernel image): systemd's EFI stub
//! (`linuxx64.efi.stub`, Debian's `systemd-boot-efi`) with the kernel, the initrd and the
//! command line added as PE sections (`.linux`, `.initrd`, `.cmdline`, `.osrel`), which the
//! stub finds by name and boots. This is what the firmware's HTTPS boot is to load: one file, so
//! one fetch over TLS holds the whole boot, and (signed) one signature covers kernel, initrd
//! and command line alike. The stub's own sections stay where they are; the new ones follow
//! them in memory and at the end of the file.

/// Why an image could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UkiError {
    #[error("the EFI stub is not a PE32+ image: {0}")]
    NotPe(&'static str),
    #[error("the EFI stub is signed already: sign the image, not the stub")]
    Signed,
    #[error("the EFI stub's headers have no room for {0} more sections")]
    NoRoom(usize),
    #[error("the image would pass 4 GiB")]
    TooLarge,
}

/// Where BootOS's image sits in the boot directory (served at `/boot/files/bootos/bootos.efi`).
pub const IMAGE_PATH: &str = "bootos/bootos.efi";

const SCN_INITIALIZED_DATA: u32 = 0x0000_0040;
const SCN_MEM_READ: u32 = 0x4000_0000;
/// Index of the certificate table among the optional header's data directories.
const DIR_SECURITY: usize = 4;

fn u16_at(b: &[u8], at: usize) -> Result<u16, UkiError> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]])).ok_or(UkiError::NotPe("truncated"))
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, UkiError> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]])).ok_or(UkiError::NotPe("truncated"))
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn align(v: u64, to: u64) -> u64 {
    v.div_ceil(to) * to
}

/// `stub` with `sections` (name of at most 8 bytes, contents) added, in order.
pub fn build(stub: &[u8], sections: &[(&str, &[u8])]) -> Result<Vec<u8>, UkiError> {
    if stub.get(..2) != Some(b"MZ") {
        return Err(UkiError::NotPe("no MZ header"));
    }
    let pe = u32_at(stub, 0x3c)? as usize;
    if stub.get(pe..pe + 4) != Some(b"PE\0\0") {
        return Err(UkiError::NotPe("no PE signature"));
    }
    let coff = pe + 4;
    let count = u16_at(stub, coff + 2)? as usize;
    let opt_size = u16_at(stub, coff + 16)? as usize;
    let opt = coff + 20;
    if u16_at(stub, opt)? != 0x20b {
        return Err(UkiError::NotPe("not PE32+"));
    }
    let (section_align, file_align) = (u32_at(stub, opt + 32)? as u64, u32_at(stub, opt + 36)? as u64);
    if section_align == 0 || file_align == 0 {
        return Err(UkiError::NotPe("zero alignment"));
    }
    let headers_size = u32_at(stub, opt + 60)? as usize;
    let dirs = u32_at(stub, opt + 108)? as usize;
    if dirs > DIR_SECURITY && u32_at(stub, opt + 112 + 8 * DIR_SECURITY + 4)? != 0 {
        return Err(UkiError::Signed);
    }
    let table = opt + opt_size;
    let table_end = table + 40 * count;
    if table_end + 40 * sections.len() > headers_size || headers_size > stub.len() {
        return Err(UkiError::NoRoom(sections.len()));
    }
    // Where the stub's sections end, in memory and in the file.
    let mut va_end = 0u64;
    let mut file_end = stub.len() as u64;
    for i in 0..count {
        let at = table + 40 * i;
        let (vsize, va) = (u32_at(stub, at + 8)? as u64, u32_at(stub, at + 12)? as u64);
        let (raw, ptr) = (u32_at(stub, at + 16)? as u64, u32_at(stub, at + 20)? as u64);
        va_end = va_end.max(va + vsize);
        file_end = file_end.max(ptr + raw);
    }
    let mut out = stub.to_vec();
    out.resize(align(file_end, file_align) as usize, 0);
    let mut va = align(va_end, section_align);
    let mut data_size = 0u64;
    for (i, (name, bytes)) in sections.iter().enumerate() {
        let mut header = [0u8; 40];
        let n = name.as_bytes();
        header[..n.len().min(8)].copy_from_slice(&n[..n.len().min(8)]);
        let raw = align(bytes.len() as u64, file_align);
        let ptr = out.len() as u64;
        if ptr + raw > u64::from(u32::MAX) || va + raw > u64::from(u32::MAX) {
            return Err(UkiError::TooLarge);
        }
        put_u32(&mut header, 8, bytes.len() as u32);
        put_u32(&mut header, 12, va as u32);
        put_u32(&mut header, 16, raw as u32);
        put_u32(&mut header, 20, ptr as u32);
        put_u32(&mut header, 36, SCN_INITIALIZED_DATA | SCN_MEM_READ);
        let at = table_end + 40 * i;
        out[at..at + 40].copy_from_slice(&header);
        out.extend_from_slice(bytes);
        out.resize((ptr + raw) as usize, 0);
        va = align(va + bytes.len() as u64, section_align);
        data_size += raw;
    }
    let count = u16::try_from(count + sections.len()).map_err(|_| UkiError::NoRoom(sections.len()))?;
    out[coff + 2..coff + 4].copy_from_slice(&count.to_le_bytes());
    let initialized = u64::from(u32_at(&out, opt + 8)?) + data_size;
    put_u32(&mut out, opt + 8, u32::try_from(initialized).map_err(|_| UkiError::TooLarge)?);
    put_u32(&mut out, opt + 56, u32::try_from(va).map_err(|_| UkiError::TooLarge)?);
    // The checksum is not checked by UEFI firmware; a stale one would only mislead.
    put_u32(&mut out, opt + 64, 0);
    Ok(out)
}

/// The sections of a PE image, as (name, file bytes): for checks and tests.
pub fn sections(image: &[u8]) -> Result<Vec<(String, &[u8])>, UkiError> {
    let pe = u32_at(image, 0x3c)? as usize;
    let coff = pe + 4;
    let count = u16_at(image, coff + 2)? as usize;
    let table = coff + 20 + u16_at(image, coff + 16)? as usize;
    (0..count)
        .map(|i| {
            let at = table + 40 * i;
            let raw = image.get(at..at + 8).ok_or(UkiError::NotPe("truncated"))?;
            let name = String::from_utf8_lossy(raw).trim_end_matches('\0').to_string();
            let (vsize, ptr) = (u32_at(image, at + 8)? as usize, u32_at(image, at + 20)? as usize);
            let bytes = image.get(ptr..ptr + vsize).ok_or(UkiError::NotPe("a section past the end"))?;
            Ok((name, bytes))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUB: &str = "/usr/lib/systemd/boot/efi/linuxx64.efi.stub";

    #[test]
    fn the_stub_gains_the_kernel_initrd_and_command_line_as_sections() {
        let Ok(stub) = std::fs::read(STUB) else {
            eprintln!("SKIPPED: {STUB} is missing (Debian's systemd-boot-efi)");
            return;
        };
        let (kernel, initrd) = (vec![0xaa; 5000], vec![0xbb; 70_001]);
        let cmdline = b"console=ttyS0 rackboot.url=https://198.18.0.1";
        let image = build(&stub, &[(".cmdline", cmdline), (".linux", &kernel), (".initrd", &initrd)]).unwrap();
        let all = sections(&image).unwrap();
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names[names.len() - 3..], [".cmdline", ".linux", ".initrd"]);
        let find = |n: &str| all.iter().find(|(x, _)| x == n).unwrap().1;
        assert_eq!((find(".cmdline"), find(".linux"), find(".initrd")), (&cmdline[..], &kernel[..], &initrd[..]));
        // The stub's own sections are untouched, and binutils reads the image.
        for (name, bytes) in sections(&stub).unwrap() {
            assert_eq!(find(&name), bytes, "{name}");
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.efi"), &image).unwrap();
        match std::process::Command::new("objdump").arg("-h").arg(dir.path().join("x.efi")).output() {
            Ok(out) => {
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(out.status.success() && text.contains(".initrd") && text.contains("pei-x86-64"), "{text}");
            }
            Err(_) => eprintln!("SKIPPED the objdump check: binutils is missing"),
        }
        // Built again from the image: a signed or foreign file is refused.
        assert_eq!(build(b"not a PE", &[]), Err(UkiError::NotPe("no MZ header")));
        let mut signed = stub.clone();
        let opt = u32_at(&stub, 0x3c).unwrap() as usize + 24;
        put_u32(&mut signed, opt + 112 + 8 * DIR_SECURITY + 4, 16);
        assert_eq!(build(&signed, &[]), Err(UkiError::Signed));
        let many: Vec<(&str, &[u8])> = (0..40).map(|_| (".x", &b"x"[..])).collect();
        assert!(matches!(build(&stub, &many), Err(UkiError::NoRoom(40))));
    }
}
