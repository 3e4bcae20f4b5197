//! The boot CA's certificate as UEFI firmware takes it: an EFI signature list (UEFI 2.x, 32.4.1) of
//! one X.509 certificate. OVMF reads the certificates its HTTPS boot trusts from fw_cfg
//! `etc/edk2/https/cacerts` in this form; vendors' firmware takes the same list through their
//! BMC or setup screens (see the book's secure-boot page).

/// `EFI_CERT_X509_GUID` (a5c059a1-94e4-4aa7-87b5-ab155c2bf072), as it is laid out in memory
/// (the first three fields little-endian).
const CERT_X509: [u8; 16] =
    [0xa1, 0x59, 0xc0, 0xa5, 0xe4, 0x94, 0xa7, 0x4a, 0x87, 0xb5, 0xab, 0x15, 0x5c, 0x2b, 0xf0, 0x72];

/// The owner recorded with each entry: rackboot's own GUID (7261636b-626f-6f74-8000-000000000001).
const OWNER: [u8; 16] =
    [0x6b, 0x63, 0x61, 0x72, 0x6f, 0x62, 0x74, 0x6f, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01];

/// One EFI signature list holding the certificate `der`.
pub fn signature_list(der: &[u8]) -> Vec<u8> {
    let signature_size = 16 + der.len();
    let list_size = 16 + 4 + 4 + 4 + signature_size;
    let mut out = Vec::with_capacity(list_size);
    out.extend_from_slice(&CERT_X509);
    out.extend_from_slice(&(list_size as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(signature_size as u32).to_le_bytes());
    out.extend_from_slice(&OWNER);
    out.extend_from_slice(der);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_x509_entry_with_its_sizes() {
        let der = vec![0x30, 0x82, 0x01, 0x00, 7, 7, 7];
        let l = signature_list(&der);
        assert_eq!(&l[..16], &CERT_X509);
        let u32_at = |i: usize| u32::from_le_bytes(l[i..i + 4].try_into().unwrap()) as usize;
        assert_eq!((u32_at(16), u32_at(20), u32_at(24)), (l.len(), 0, 16 + der.len()));
        assert_eq!(&l[28..44], &OWNER);
        assert_eq!(&l[44..], &der[..]);
    }
}
