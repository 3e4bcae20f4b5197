//! TFTP for a Windows boot: the boot manager DHCP named, and the backslash paths it asks for
//! next (`\Boot\BCD`, then what the BCD names: `\Boot\boot.sdi`, `\sources\boot.wim`, fonts),
//! mapped into the media of the machine that leases the asking address. Handing out the boot
//! manager also renders the machine's answer file onto the share.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use serde_json::json;

use super::{media, unattend, BOOTMGR, DIR};
use crate::cmdb::{EventKind, Sighting};
use crate::tftp::{Generate, Made};

/// The media whose boot manager `name` is (`windows/<media>/bootmgfw.efi`).
fn bootmgr_of(name: &str) -> Option<&str> {
    let media = name.strip_prefix(DIR)?.strip_prefix('/')?.strip_suffix(BOOTMGR)?.strip_suffix('/')?;
    super::valid_media_name(media).then_some(media)
}

/// The TFTP hook for Windows names; `share_address` is the appliance's address on the
/// provisioning network (where WinPE maps the share).
pub fn files(
    cmdb: crate::cmdb::Cmdb,
    cfg: std::sync::Arc<crate::config::Config>,
    templates: crate::templates::Templates,
    share_address: Option<std::net::Ipv4Addr>,
) -> Generate {
    Arc::new(move |client: SocketAddr, name: &str| {
        let bootmgr = bootmgr_of(name).map(str::to_string);
        if bootmgr.is_none() && !name.contains('\\') {
            return None;
        }
        let (cmdb, cfg, templates, name) = (cmdb.clone(), cfg.clone(), templates.clone(), name.to_string());
        Some(Box::pin(async move {
            let mac = match client.ip() {
                IpAddr::V4(ip) => cmdb.lease_holder(ip),
                IpAddr::V6(_) => None,
            };
            let brief = mac.and_then(|m| cmdb.brief_by_mac(m));
            let profile = brief.as_ref().and_then(|b| b.boot_profile.clone());
            let media = super::pinned_media(&cfg.boot.profiles, profile.as_deref());
            let Some(asked) = bootmgr else {
                return Ok(Made::File(media::tftp_path(&cfg.tftp.root, media.as_deref(), &name)));
            };
            // The boot manager of a machine booting that media: its answer file goes on the
            // share first, or the boot is refused with the reason (a Setup with no answers
            // would wait at a prompt in the rack).
            let (Some(mac), Some(brief)) = (mac, brief) else { return Ok(Made::File(name)) };
            if media.as_deref() != Some(asked.as_str()) {
                return Ok(Made::File(name));
            }
            let vars = unattend::vars(mac, brief.hostname.as_deref(), &asked, share_address);
            let written = unattend::write(&cfg.tftp.root, &templates.current(), &vars).await;
            let mut detail = json!({"plan": "windows", "profile": profile, "media": asked, "loader": "bootmgfw",
                "uefi": true, "from": client.ip().to_string()});
            let outcome = match written {
                Ok(path) => {
                    detail["unattend"] = json!(path);
                    Ok(Made::File(name))
                }
                Err(e) => {
                    tracing::warn!(%mac, error = %e, "cannot write the Windows answer file");
                    detail["error"] = json!(e.to_string());
                    Err(format!("no answer file: {e}"))
                }
            };
            cmdb.record_firmware(
                Some(client.ip()),
                Sighting { mac: Some(mac), ..Default::default() },
                vec![(EventKind::BootScript, detail)],
            );
            outcome
        }))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_media_boot_manager_name_is_one() {
        assert_eq!(super::bootmgr_of("windows/w2022/bootmgfw.efi"), Some("w2022"));
        for name in ["windows/bootmgfw.efi", "windows/a/b/bootmgfw.efi", "windows/unattend/bootmgfw.efi", "ipxe.efi"] {
            assert_eq!(super::bootmgr_of(name), None, "{name}");
        }
    }
}
