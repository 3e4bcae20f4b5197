//! What happened to a machine: the kinds of timeline events, each with its meaning and the
//! fields of its `detail`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

macro_rules! event_kinds {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal, fields: $fields:literal; )*) => {
        /// What happened to a machine. Serialized as its dotted name (`dhcp.offer`); the table in
        /// [`EventKind::ALL`] documents each kind and the fields of its `detail`.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $( $(#[doc = $doc])* $variant, )*
            /// A kind this rackboot does not know (written by a newer or older version).
            Other(Box<str>),
        }

        impl EventKind {
            /// Every known kind: (kind, dotted name, what it means, its detail fields).
            pub const ALL: &'static [(EventKind, &'static str, &'static str, &'static str)] = &[
                $( (EventKind::$variant, $name, concat!($($doc),*), $fields), )*
            ];

            /// The dotted name.
            pub fn as_str(&self) -> &str {
                match self {
                    $( EventKind::$variant => $name, )*
                    EventKind::Other(s) => s,
                }
            }

            /// The kind with this dotted name; unknown names are [`EventKind::Other`].
            pub fn from_name(name: &str) -> EventKind {
                match name {
                    $( $name => EventKind::$variant, )*
                    other => EventKind::Other(other.into()),
                }
            }
        }
    };
}

event_kinds! {
    /// DHCP saw a MAC for the first time and created its machine.
    MachineDiscovered = "machine.discovered", fields: "mac, arch (DHCP) or by: \"agent\", macs (enrollment)";
    /// An operator registered the machine.
    MachineRegistered = "machine.registered", fields: "macs";
    /// An operator changed the machine's record.
    MachineUpdated = "machine.updated", fields: "the changed fields";
    /// The machine's lifecycle state changed.
    MachineState = "machine.state", fields: "from, to (machine states)";
    /// An offer was sent to the machine.
    DhcpOffer = "dhcp.offer", fields: "ip, arch, boot_file, relay; repeats, first_ms when folded";
    /// A lease was acknowledged (durable before the ACK left).
    DhcpAck = "dhcp.ack", fields: "ip, lease_secs, boot_file, hostname; repeats, first_ms when folded";
    /// A request was refused with a NAK.
    DhcpNak = "dhcp.nak", fields: "requested, reason";
    /// The client released its lease.
    DhcpRelease = "dhcp.release", fields: "ip";
    /// The client declined an address (in use).
    DhcpDecline = "dhcp.decline", fields: "ip";
    /// An INFORM was answered.
    DhcpInform = "dhcp.inform", fields: "ciaddr; repeats, first_ms when folded";
    /// A DHCPv6 lease was confirmed to the client (durable before the REPLY left).
    Dhcp6Reply = "dhcp6.reply", fields: "ip, iaid, valid_secs, boot_url, relay; repeats, first_ms when folded";
    /// A DHCPv6 client released its address.
    Dhcp6Release = "dhcp6.release", fields: "ip";
    /// A DHCPv6 client declined an address (in use on its link).
    Dhcp6Decline = "dhcp6.decline", fields: "ip";
    /// proxyDHCP offered boot options.
    DhcpProxyOffer = "dhcp.proxy_offer", fields: "arch, boot_file; repeats, first_ms when folded";
    /// The PXE boot server (port 4011) acknowledged.
    DhcpProxyAck = "dhcp.proxy_ack", fields: "arch, boot_file; repeats, first_ms when folded";
    /// A TFTP transfer finished (or failed).
    TftpTransfer = "tftp.transfer", fields: "file, bytes, outcome";
    /// The machine fetched its iPXE script.
    BootScript = "boot.script", fields: "plan, profile, reason, loader, uefi, nonce (a nonce went with it), answer_token (an answer token did), from";
    /// The machine fetched a boot file over HTTP (kernel, initrd, image).
    BootAsset = "boot.asset", fields: "path, bytes, status, range, tls (it came over TLS: HTTPS boot)";
    /// An installer fetched its answer file.
    BootAnswer = "boot.answer", fields: "kind";
    /// The machine's agent enrolled.
    AgentEnrolled = "agent.enrolled", fields: "approved, agent_version, boot, addr";
    /// An enrollment was refused: the machine's agent holds a live credential and the caller
    /// presented neither it nor this boot's nonce (a neighbour trying to take the machine over,
    /// or a node that lost its credential: boot it again).
    AgentEnrollConflict = "agent.enroll_conflict", fields: "from, reason, boot_mac";
    /// The unclaimed-machine cap was reached and the oldest unclaimed machine was evicted
    /// (appliance-wide, machine 0; at most once a minute).
    CmdbUnclaimedCap = "cmdb.unclaimed_cap", fields: "cap, evicted_total, evicted, macs";
    /// A record that did not decode was moved to the quarantine at start (appliance-wide,
    /// machine 0); the rest of the appliance started. `GET /api/v1/quarantine` lists them.
    CmdbQuarantined = "cmdb.quarantined", fields: "table, key, bytes, error";
    /// An operator approved the machine's agent.
    AgentApproved = "agent.approved", fields: "(none)";
    /// The agent uploaded the hardware inventory.
    AgentInventory = "agent.inventory", fields: "vendor, model, serial, cpus, memory_bytes, disks, nics";
    /// The installed node's network came up as its spec says (first seen, or again after a
    /// mismatch).
    NetworkMatched = "network.matched", fields: "devices";
    /// The installed node's network differs from its spec (the machine's `network_problems`
    /// say how, until it matches).
    NetworkMismatch = "network.mismatch", fields: "problems";
    /// A job was queued for the machine.
    JobQueued = "job.queued", fields: "job, action";
    /// The agent started a job.
    JobStarted = "job.started", fields: "job, attempt";
    /// A job finished (succeeded, failed, timed out, cancelled).
    JobFinished = "job.finished", fields: "job, state, exit_code, attempt";
    /// A job's output reached its cap (16 MiB): what the agent sends after it is not stored.
    JobOutputCapped = "job.output_capped", fields: "job, stored_bytes";
    /// A job's agent was not heard from within its lease; the job was requeued or failed.
    JobLeaseExpired = "job.lease_expired", fields: "job, state, attempt";
    /// A provisioning run was queued for the machine.
    ProvisionQueued = "provision.queued", fields: "task, run";
    /// A provisioning run moved to a step or progressed within it.
    ProvisionStep = "provision.step", fields: "run, step, job, progress";
    /// The run powers the machine up into BootOS through its BMC (PXE once, then on or cycle).
    ProvisionPowerOn = "provision.power_on", fields: "task, run, attempt, uefi";
    /// A step was stuck past its timeout: the run power-cycled the machine through its BMC, once.
    ProvisionStuckCycle = "provision.stuck_cycle", fields: "task, run, step, uefi";
    /// The run rebooted an installed machine into BootOS to reinstall it.
    ProvisionReinstallReboot = "provision.reinstall_reboot", fields: "run, job";
    /// The installer reported back: the machine boots its disk from now on.
    ProvisionInstallerFinished = "provision.installer_finished", fields: "run";
    /// An installer reported back again (it lost the first answer); a new credential was made.
    ProvisionInstallerReportedAgain = "provision.installer_reported_again", fields: "run";
    /// The run finished: the machine is installed.
    ProvisionInstalled = "provision.installed", fields: "run, step, progress";
    /// A day-two run (release, rescue) ended as asked: released machines are ready, returned
    /// ones boot their disk.
    ProvisionDone = "provision.done", fields: "task, run, step, progress, state";
    /// An operator retired the machine or brought it back (a release, a rescue or a
    /// commissioning is a run: its events are `provision.*`).
    MachineLifecycle = "machine.lifecycle", fields: "action (retire, unretire)";
    /// The run failed.
    ProvisionFailed = "provision.failed", fields: "run, step, error";
    /// The run was cancelled by an operator.
    ProvisionCancelled = "provision.cancelled", fields: "run, task";
    /// The machine was placed in a rack's slot (named, its address reserved).
    RackPlaced = "rack.placed", fields: "rack, slot, by (option82, lldp, csv, serial, operator), port, hostname, ip, not_named";
    /// The machine left its slot: its evidence is gone or points nowhere it may go (it keeps
    /// its name and address).
    RackLeft = "rack.left", fields: "rack, slot, why";
    /// The agent's LLDP neighbour confirmed the slot option 82 placed the machine in.
    RackConfirmed = "rack.confirmed", fields: "rack, slot, port";
    /// Option 82 and LLDP put the machine in different places (mis-cabled or mis-mapped).
    RackMiscabled = "rack.miscabled", fields: "rack, slot, detail";
    /// Two or more machines claim one slot.
    RackSlotConflict = "rack.slot_conflict", fields: "rack, slot, detail, machines";
    /// A mapped slot stayed silent past the rack's `silent_after_minutes` (appliance-wide,
    /// machine 0).
    RackSlotSilent = "rack.slot_silent", fields: "rack, slot, detail";
    /// A placed machine is in the failed state.
    RackMachineFailed = "rack.machine_failed", fields: "rack, slot, detail";
    /// The machine's node says it is in a slot (its LLDP neighbour, its serial in the CSV) and
    /// nothing placed it: not named, addressed or provisioned until an operator confirms it.
    RackClaimed = "rack.claimed", fields: "rack, slot, detail";
    /// The machine came with option 82 that names no mapped port (of the rack whose switch it
    /// names, or of any rack): what it says, decoded.
    RackUnmatched = "rack.unmatched", fields: "rack, port, vlan, switch, form, detail";
    /// A vendor plugin job ended: what its check found and its apply did.
    PluginResult = "plugin.result", fields: "plugin, version, vendor, signer, sha256, job, result (unchanged, applied, applied_reboot, not_applicable, failed), check_exit, apply_exit, error";
    /// A hardware profile's plugin fits nothing on this machine (its [match]); it was not run.
    PluginUnmatched = "plugin.unmatched", fields: "plugin, version, profile, vendor, product";
    /// The machine's agent found a BMC in band (`ipmitool lan print`): its address and MAC, and
    /// the address of a DHCP lease that MAC holds on this appliance's VLAN, if any.
    BmcFound = "bmc.found", fields: "ip, mac, lease";
    /// An operator set the machine's BMC (never its password).
    BmcSet = "bmc.set", fields: "address, protocol, username, tls";
    /// The machine's agent set up the appliance's own BMC account in band (a new random
    /// password, sealed; never shown): the BMC is now that account at the address it reported.
    BmcInband = "bmc.inband", fields: "job, user_id, username, channel, address, mac, rotated";
    /// A boot ISO was inserted into the machine's virtual CD and the machine started from it
    /// once (its static address, a one-time enrollment nonce).
    VmediaInserted = "bmc.vmedia_inserted", fields: "url, bytes, address, uefi";
    /// Booting from virtual media failed (no virtual CD, the insert refused, the ISO not made).
    VmediaFailed = "bmc.vmedia_failed", fields: "error";
    /// The virtual CD was ejected: BootOS called in (`enrolled`) or it was there too long
    /// (`expired`); how often the BMC fetched the ISO.
    VmediaEjected = "bmc.vmedia_ejected", fields: "why, fetches, error";
    /// An operator removed the machine's BMC.
    BmcRemoved = "bmc.removed", fields: "(none)";
    /// The machine's firmware was read through its BMC (counts; the report is on the BMC).
    BmcFirmware = "bmc.firmware", fields: "bios_version, bios_attributes, pending, inventory";
    /// A firmware update of one component through the BMC began (the image the BMC fetches,
    /// the inventory entries it flashes; `by`: operator or provision).
    FirmwareUpdating = "firmware.updating", fields: "component, version, image, targets, by";
    /// The BMC's update task moved (its state, percent and latest message).
    FirmwareProgress = "firmware.progress", fields: "component, state, percent, message";
    /// An update ended with every updated component at its baseline version, read back after
    /// the restart (`pending`: no restart was allowed, the versions are read after the next).
    FirmwareUpdated = "firmware.updated", fields: "components, standing, restarted, pending, by";
    /// A firmware update failed (the BMC's message); never retried by itself.
    FirmwareFailed = "firmware.failed", fields: "component, error, by";
    /// A power action through the BMC succeeded and was verified by reading the state back.
    PowerAction = "power.action", fields: "action, state, uefi, attempts, fallback, ms, by";
    /// A power action through the BMC failed.
    PowerFailed = "power.failed", fields: "action, error, kind, ms, by";
    /// A webhook subscription was stopped: its receiver failed for longer than
    /// `webhooks.disable_after_secs`; recorded on the machine whose event it could not take.
    WebhookDisabled = "webhook.disabled", fields: "webhook, seq, failing_since_ms, error";
    /// The machine's encrypted volumes were bound to the appliance's Tang key `key` (the
    /// identity step that laid them out was handed to the agent).
    DiskBound = "disk.bound", fields: "key, volumes, run";
    /// A re-bind job moved the machine's encrypted volumes to a newer Tang key.
    DiskRebound = "disk.rebound", fields: "from_key, to_key, job";
    /// A re-bind job failed: the volumes stay bound to the older key, which is kept.
    DiskRebindFailed = "disk.rebind_failed", fields: "key, job, error";
    /// The machine's binding was forgotten: it is back in the pool (released or commissioned),
    /// so its volumes no longer keep a Tang key alive.
    DiskForgotten = "disk.forgotten", fields: "key, state";
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(d)?;
        Ok(EventKind::from_name(&name))
    }
}

impl utoipa::PartialSchema for EventKind {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
        let mut doc = String::from("The kind of a timeline event. Each kind and the fields of its `detail`:\n\n");
        doc.push_str("| kind | meaning | detail fields |\n|---|---|---|\n");
        for (_, name, meaning, fields) in EventKind::ALL {
            doc.push_str(&format!("| `{name}` | {} | {fields} |\n", meaning.trim()));
        }
        ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::String))
            .enum_values(Some(EventKind::ALL.iter().map(|(_, name, _, _)| *name)))
            .description(Some(doc))
            .into()
    }
}

impl ToSchema for EventKind {}
