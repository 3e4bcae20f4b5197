//! Virtual media through the power service (Redfish): an image inserted and read back, a
//! one-time boot from the CD and a power cycle (both verified, on the machine's timeline), a
//! one-time boot from the disk into the installed system, and the CD ejected, each under the
//! same lock, cap, deadline and credential hold as power actions.

use super::power::{Caller, PowerError};
use super::{Power, PowerAction};

impl Power {
    /// Inserts the image at `url` into machine `id`'s virtual CD (the BMC fetches it with `user`
    /// and `password`), boots from it once (UEFI or legacy) and cycles the power.
    pub async fn boot_virtual_cd(
        &self,
        id: u64,
        url: &str,
        (user, password): (&str, &str),
        uefi: bool,
    ) -> Result<(), PowerError> {
        let (url, user, password) = (url.to_string(), user.to_string(), password.to_string());
        self.with_driver(id, "virtual-media", |d| async move {
            let r = d.redfish()?;
            let cd = r.find_cd().await?;
            r.insert_cd(&cd, &url, &user, &password).await?;
            r.set_boot_once("Cd", uefi).await
        })
        .await?;
        self.act(id, PowerAction::Cycle, uefi, Caller::Provision).await.map(drop)
    }

    /// Starts machine `id` from its disk once (after its OS powered it off): read back as off
    /// (forced after the soft-off timeout), a one-time boot from the disk, on. For machines
    /// booted from virtual media, whose firmware would otherwise try the CD or a network with
    /// no DHCP first.
    pub async fn boot_disk_once(&self, id: u64, uefi: bool) -> Result<(), PowerError> {
        self.act(id, PowerAction::Off, uefi, Caller::Provision).await?;
        self.with_driver(id, "boot-disk", |d| async move { d.redfish()?.set_boot_once("Hdd", uefi).await }).await?;
        self.act(id, PowerAction::On, uefi, Caller::Provision).await.map(drop)
    }

    /// Ejects machine `id`'s virtual CD.
    pub async fn eject_virtual_cd(&self, id: u64) -> Result<(), PowerError> {
        self.with_driver(id, "virtual-media", |d| async move {
            let r = d.redfish()?;
            let cd = r.find_cd().await?;
            r.eject_cd(&cd).await
        })
        .await
        .map(drop)
    }
}
