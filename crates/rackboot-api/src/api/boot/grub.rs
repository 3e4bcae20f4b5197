//! The signed UEFI chain's GRUB configs, made on request over TFTP. shim loads Debian's signed
//! network GRUB, which reads `/grub/grub.cfg` only (its built-in prefix) and has no HTTP. That
//! first file is the same for every machine and sends GRUB on to `/grub/grub.cfg-<its MAC>`,
//! which is the machine's boot plan rendered by [`super::script_for`] for [`Loader::Grub`]: the
//! same decision, nonce and timeline entry as an iPXE script. The MAC comes from GRUB's
//! `net_default_mac` (the NIC it booted from), so this works in proxy DHCP mode too, where the
//! address is not ours to look up.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::mac::Mac;
use crate::render::Loader;
use crate::tftp::{Generate, Made};

/// The name the signed GRUB reads first.
pub const FIRST: &str = "grub/grub.cfg";
/// Each machine's config: this, then its MAC as GRUB writes it (`52:54:00:e4:00:02`).
pub const PER_MAC: &str = "grub/grub.cfg-";

/// `/grub/grub.cfg`.
const FIRST_CFG: &str = "\
# rackboot: the signed GRUB's first config, the same for every machine; the next one is rendered
# from the machine's boot plan.
set timeout=0
configfile /grub/grub.cfg-${net_default_mac}
";

/// The TFTP server's generated files: [`FIRST`] and the per-MAC configs.
pub fn tftp_files(state: &crate::api::ApiState) -> Generate {
    let state = state.clone();
    Arc::new(move |client: SocketAddr, name: &str| {
        if name == FIRST {
            return Some(Box::pin(std::future::ready(Ok(Made::Bytes(FIRST_CFG.as_bytes().to_vec())))));
        }
        let mac = name.strip_prefix(PER_MAC)?.to_string();
        let state = state.clone();
        Some(Box::pin(async move {
            let mac: Mac = mac.parse().map_err(|e: crate::mac::ParseMacError| format!("no such config: {e}"))?;
            // The signed GRUB runs only on UEFI.
            let cfg = super::script_for(&state, mac, client.ip(), Loader::Grub, Some(true)).await;
            cfg.map(|c| Made::Bytes(c.into_bytes())).map_err(|e| e.detail)
        }))
    })
}
