//! One connected BMC, whichever protocol: the few operations the power service needs, mapped
//! to Redfish reset types or ipmitool chassis commands.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::ipmi::{self, Command};
use crate::model::{split_address, Bmc, PowerState, Protocol, TlsPolicy};
use crate::redfish::{BootOverride, Redfish, Reset};
use crate::BmcError;
use rackboot_model::bios::{self, FirmwareCert};

/// A power operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    On,
    ForceOff,
    SoftOff,
    /// Restart without going through off + on: Redfish ForceRestart (or PowerCycle),
    /// IPMI `power cycle`.
    Restart,
}

/// Builds the TLS client config for a Redfish BMC's policy (a pinned certificate, the
/// appliance CA, or none): the caller's, which holds the CA.
pub type TlsFor = Arc<dyn Fn(&TlsPolicy) -> anyhow::Result<rustls::ClientConfig> + Send + Sync>;

/// What a driver needs besides the record.
pub struct Settings {
    pub timeout: Duration,
    pub tls: TlsFor,
    pub ipmitool: PathBuf,
    pub cipher_suite: u8,
}

/// A connected BMC.
pub enum Driver {
    Redfish(Redfish),
    Ipmi { bin: PathBuf, target: ipmi::Target, password: String, timeout: Duration },
}

impl Driver {
    /// Connects (Redfish: logs in and finds the system; IPMI: nothing until the first command).
    pub async fn open(b: &Bmc, password: &str, s: &Settings) -> Result<Driver, BmcError> {
        let default_port = if b.protocol == Protocol::Redfish { 443 } else { 623 };
        let (host, port) = split_address(&b.address, default_port)
            .ok_or_else(|| BmcError::Other(format!("bad BMC address {:?}", b.address)))?;
        Ok(match b.protocol {
            Protocol::Redfish => Driver::Redfish(
                Redfish::connect(crate::redfish::Target {
                    host,
                    port,
                    username: &b.username,
                    password,
                    tls: Arc::new((s.tls)(&b.tls).map_err(|e| BmcError::Tls(format!("{e:#}")))?),
                    system_id: b.system_id.as_deref(),
                    timeout: s.timeout,
                })
                .await?,
            ),
            Protocol::Ipmi => Driver::Ipmi {
                bin: s.ipmitool.clone(),
                target: ipmi::Target { host, port, username: b.username.clone(), cipher_suite: s.cipher_suite },
                password: password.to_string(),
                timeout: s.timeout,
            },
        })
    }

    async fn ipmi(&self, cmd: Command) -> Result<String, BmcError> {
        match self {
            Driver::Ipmi { bin, target, password, timeout } => ipmi::run(bin, target, password, cmd, *timeout).await,
            Driver::Redfish(_) => unreachable!("ipmi command on a redfish driver"),
        }
    }

    /// The power state.
    pub async fn power_state(&self) -> Result<PowerState, BmcError> {
        match self {
            Driver::Redfish(r) => r.power_state().await,
            Driver::Ipmi { .. } => {
                let out = self.ipmi(Command::PowerStatus).await?;
                ipmi::parse_power(&out).ok_or_else(|| BmcError::Protocol(format!("ipmitool said {out:?}")))
            }
        }
    }

    /// Whether the BMC offers `op` (Redfish: among `ResetType@Redfish.AllowableValues`).
    pub fn offers(&self, op: Op) -> bool {
        match (self, op) {
            (Driver::Redfish(r), Op::Restart) => r.supports(Reset::ForceRestart) || r.supports(Reset::PowerCycle),
            (Driver::Redfish(r), Op::SoftOff) => r.supports(Reset::GracefulShutdown),
            _ => true,
        }
    }

    /// Carries out `op` (without waiting for its effect).
    pub async fn run(&self, op: Op) -> Result<(), BmcError> {
        match self {
            Driver::Redfish(r) => {
                let reset = match op {
                    Op::On => Reset::On,
                    Op::ForceOff => Reset::ForceOff,
                    Op::SoftOff => Reset::GracefulShutdown,
                    Op::Restart if r.supports(Reset::ForceRestart) => Reset::ForceRestart,
                    Op::Restart => Reset::PowerCycle,
                };
                r.reset(reset).await
            }
            Driver::Ipmi { .. } => {
                let cmd = match op {
                    Op::On => Command::PowerOn,
                    Op::ForceOff => Command::PowerOff,
                    Op::SoftOff => Command::PowerSoft,
                    Op::Restart => Command::PowerCycle,
                };
                self.ipmi(cmd).await.map(drop)
            }
        }
    }

    /// Network boot at the next start only.
    pub async fn pxe_once(&self, uefi: bool) -> Result<(), BmcError> {
        match self {
            Driver::Redfish(r) => r.set_pxe_once(uefi).await,
            Driver::Ipmi { .. } => self.ipmi(Command::BootdevPxe { uefi }).await.map(drop),
        }
    }

    /// The boot override read back (Redfish; IPMI: `None`, ipmitool's exit status is all).
    pub async fn boot_override(&self) -> Result<Option<BootOverride>, BmcError> {
        match self {
            Driver::Redfish(r) => r.boot_override().await.map(Some),
            Driver::Ipmi { .. } => Ok(None),
        }
    }

    /// The firmware report (Redfish only: IPMI has no BIOS attributes or inventory to read).
    pub async fn firmware(&self, now_ms: u64) -> Result<rackboot_model::firmware::FirmwareReport, BmcError> {
        match self {
            Driver::Redfish(r) => r.firmware(now_ms).await,
            Driver::Ipmi { .. } => Err(BmcError::Other(
                "IPMI has no BIOS attributes or firmware inventory to read: set the machine's BMC as Redfish".into(),
            )),
        }
    }

    /// Writes the declared BIOS attributes that differ, then puts in the certificates the
    /// firmware lacks (Redfish only); what it changed (attribute names, `certificate <name>`).
    pub async fn bios_apply(
        &self,
        want: &bios::Settings,
        certs: &[(FirmwareCert, String)],
    ) -> Result<Vec<String>, BmcError> {
        let r = self.bios_redfish()?;
        let mut changed = if want.is_empty() { Vec::new() } else { r.bios_apply(want).await? };
        for (cert, pem) in certs {
            if r.enrol(*cert, pem).await? {
                changed.push(format!("certificate {}", cert.as_str()));
            }
        }
        Ok(changed)
    }

    /// The certificates of `certs` the firmware does not have (Redfish only).
    pub async fn certs_missing(&self, certs: &[(FirmwareCert, String)]) -> Result<Vec<FirmwareCert>, BmcError> {
        let r = self.bios_redfish()?;
        let mut missing = Vec::new();
        for (cert, pem) in certs {
            if !r.enrolled(*cert, pem).await? {
                missing.push(*cert);
            }
        }
        Ok(missing)
    }

    /// Flashes `image` into `targets` through the `UpdateService` (fetched by the BMC, or
    /// pushed to it) and follows the BMC's task (Redfish only), reporting its progress.
    pub async fn firmware_update(
        &self,
        image: &crate::redfish::update::Image<'_>,
        targets: &[String],
        wait: std::time::Duration,
        progress: &mut (dyn FnMut(crate::redfish::update::Progress) + Send),
    ) -> Result<crate::redfish::update::Updated, BmcError> {
        match self {
            Driver::Redfish(r) => r.update(image, targets, wait, progress).await,
            Driver::Ipmi { .. } => Err(BmcError::Other(
                "IPMI has no firmware update service: set the machine's BMC as Redfish, or update it in BootOS with a vendor plugin".into(),
            )),
        }
    }

    fn bios_redfish(&self) -> Result<&Redfish, BmcError> {
        match self {
            Driver::Redfish(r) => Ok(r),
            Driver::Ipmi { .. } => Err(BmcError::Other(
                "IPMI has no BIOS attributes or firmware certificates to set: set the machine's BMC as Redfish".into(),
            )),
        }
    }

    /// The Redfish client, for what only Redfish has (virtual media).
    pub fn redfish(&self) -> Result<&Redfish, BmcError> {
        match self {
            Driver::Redfish(r) => Ok(r),
            Driver::Ipmi { .. } => {
                Err(BmcError::Other("IPMI has no virtual media: set the machine's BMC as Redfish".into()))
            }
        }
    }

    /// Ends a Redfish session.
    pub async fn close(self) {
        if let Driver::Redfish(r) = self {
            r.logout().await;
        }
    }
}
