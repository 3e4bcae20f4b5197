//! Each Windows machine's answer file on the share, as `unattend/<mac>.xml` with the MAC the way
//! WinPE's `getmac` prints it (dashes; the share matches without regard to case).

use std::net::Ipv4Addr;
use std::path::Path;

use super::{DIR, UNATTEND_DIR};
use crate::mac::Mac;
use crate::render::{Renderer, UnattendVars};

/// The share path of `mac`'s answer file, relative to the share's root.
pub fn share_path(mac: Mac) -> String {
    format!("{UNATTEND_DIR}/{}.xml", mac.to_string().replace(':', "-"))
}

/// The values of one machine: its hostname, else a name from its MAC (Windows would make up a
/// random one).
pub fn vars(mac: Mac, hostname: Option<&str>, media: &str, share_address: Option<Ipv4Addr>) -> UnattendVars {
    let computer_name = match hostname {
        Some(h) => h.to_string(),
        None => format!("rb-{:02x}{:02x}{:02x}", mac.0[3], mac.0[4], mac.0[5]),
    };
    UnattendVars {
        mac: mac.to_string(),
        computer_name,
        media: media.to_string(),
        share_address: share_address.map(|a| a.to_string()).unwrap_or_else(|| "0.0.0.0".into()),
    }
}

/// Renders and writes the answer file (whole or not at all); returns its share path.
pub async fn write(root: &Path, renderer: &Renderer, vars: &UnattendVars) -> anyhow::Result<String> {
    let xml = renderer.unattend(vars)?;
    let mac: Mac = vars.mac.parse()?;
    let rel = share_path(mac);
    let (dir, file) = (root.join(DIR).join(UNATTEND_DIR), root.join(DIR).join(&rel));
    tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        // Each fetch of the boot manager renders it again; the same text is not rewritten.
        if std::fs::read(&file).is_ok_and(|old| old == xml.as_bytes()) {
            return Ok(());
        }
        std::fs::create_dir_all(&dir)?;
        // Readable by the share's guest account whatever the service's umask.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))?;
        let tmp = file.with_extension("xml.tmp");
        std::fs::write(&tmp, xml)?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))?;
        std::fs::rename(&tmp, &file)
    })
    .await??;
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_getmac_and_a_nameless_machine_gets_one_from_its_mac() {
        let mac: Mac = "52:54:00:ab:cd:ef".parse().unwrap();
        assert_eq!(share_path(mac), "unattend/52-54-00-ab-cd-ef.xml");
        assert_eq!(vars(mac, None, "w", None).computer_name, "rb-abcdef");
        assert_eq!(vars(mac, Some("node7"), "w", None).computer_name, "node7");
    }
}
