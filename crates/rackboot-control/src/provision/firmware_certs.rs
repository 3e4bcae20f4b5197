//! The certificates a hardware profile's BIOS step puts into machines' firmware, read from the
//! appliance's data directory when the step calls the BMC: the boot CA (made with
//! `https.boot_port`) and BootOS's signing certificate (made with the first signed image).

use std::path::Path;

use rackboot_model::bios::FirmwareCert;

/// Each certificate's PEM; an error names what the appliance lacks to have it.
pub fn pems(data_dir: &Path, certs: &[FirmwareCert]) -> Result<Vec<(FirmwareCert, String)>, String> {
    certs
        .iter()
        .map(|&cert| {
            let (path, needs) = match cert {
                FirmwareCert::HttpsBoot => {
                    (crate::tls::dir(data_dir).join(crate::tls::ca::BOOT_CA_PEM), "https.boot_port set")
                }
                FirmwareCert::SecureBootDb => (
                    crate::secureboot::dir(data_dir).join(crate::secureboot::CERT),
                    "BootOS's image signed (the EFI stub and sbsign present at start)",
                ),
            };
            match std::fs::read_to_string(&path) {
                Ok(pem) => Ok((cert, pem)),
                Err(e) => Err(format!(
                    "{} is not there to enrol ({}: {e}); the appliance makes it with {needs}",
                    cert.describe(),
                    path.display()
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_the_appliance_has_not_made_is_named_with_what_makes_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = pems(dir.path(), &[FirmwareCert::SecureBootDb]).unwrap_err();
        assert!(e.contains("BootOS's signing certificate") && e.contains("sbsign"), "{e}");
        let e = pems(dir.path(), &[FirmwareCert::HttpsBoot]).unwrap_err();
        assert!(e.contains("https.boot_port"), "{e}");
        let tls = crate::tls::dir(dir.path());
        std::fs::create_dir_all(&tls).unwrap();
        std::fs::write(tls.join(crate::tls::ca::BOOT_CA_PEM), "PEM").unwrap();
        assert_eq!(pems(dir.path(), &[FirmwareCert::HttpsBoot]).unwrap(), [(FirmwareCert::HttpsBoot, "PEM".into())]);
        assert!(pems(dir.path(), &[]).unwrap().is_empty());
    }
}
