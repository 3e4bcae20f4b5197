//! What a person must look at in a rack, pure: mis-cabling (option 82 and LLDP disagree), two
//! machines claiming one slot, an expected slot silent too long, a placed machine that failed,
//! a node's own claim to a slot waiting for an operator, a port its switch sent that the rack
//! maps to no slot; and the rack's elevation (slot -> machines) the API and the web UI show.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::place::{Evidence, Placement};
use super::Rack;
use crate::events::EventKind;
use crate::mac::Mac;
use crate::records::{Machine, MachineState};

/// The kind of a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlagKind {
    /// Option 82 and LLDP put the machine in different places: mis-cabled or mis-mapped.
    Miscabled,
    /// Two or more machines claim one slot.
    SlotConflict,
    /// A mapped slot no machine has answered from since the rack was created.
    SlotSilent,
    /// A placed machine is in the failed state.
    MachineFailed,
    /// A machine's node says it is in a slot (its LLDP neighbour, its serial in the CSV) and
    /// nothing placed it: an operator confirms it (`PUT /machines/{id}/placement`).
    Claimed,
    /// A machine came through the rack's switch on a port the rack maps to no slot.
    Unmatched,
}

impl FlagKind {
    /// The timeline event recorded when the flag is raised.
    pub fn event(self) -> EventKind {
        match self {
            FlagKind::Miscabled => EventKind::RackMiscabled,
            FlagKind::SlotConflict => EventKind::RackSlotConflict,
            FlagKind::SlotSilent => EventKind::RackSlotSilent,
            FlagKind::MachineFailed => EventKind::RackMachineFailed,
            FlagKind::Claimed => EventKind::RackClaimed,
            FlagKind::Unmatched => EventKind::RackUnmatched,
        }
    }
}

/// Something in a rack a person must look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Flag {
    pub kind: FlagKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// The machines concerned (none for a silent slot).
    pub machines: Vec<u64>,
    /// What is wrong, in words.
    pub detail: String,
}

impl Flag {
    /// Identifies the flag while it lasts: its event is recorded once per key.
    pub fn key(&self) -> String {
        let ids: Vec<String> = self.machines.iter().map(u64::to_string).collect();
        format!("{:?}:{}:{}", self.kind, self.slot.unwrap_or(0), ids.join(","))
    }
}

/// The machines whose placement names `rack` by any evidence (their place, a disagreeing
/// LLDP or option 82 claim, a claim waiting for an operator).
pub fn concerns(rack: &str, m: &Machine) -> bool {
    m.rack.as_deref() == Some(rack)
        || m.placement.as_ref().is_some_and(|p| {
            [&p.option82, &p.lldp, &p.csv, &p.serial, &p.confirmed].into_iter().flatten().any(|c| c.rack == rack)
                || p.unmatched.as_ref().is_some_and(|u| u.rack.as_deref() == Some(rack))
        })
}

/// The flags of `rack` given the machines that concern it, at `now` (Unix seconds).
pub fn compute(rack: &Rack, machines: &[Machine], now: u64) -> Vec<Flag> {
    let mut out = Vec::new();
    for m in machines {
        let Some(p) = &m.placement else { continue };
        if let (Some(a), Some(b)) = (&p.option82, &p.lldp) {
            if (a.rack != b.rack || a.slot != b.slot) && (a.rack == rack.name || b.rack == rack.name) {
                out.push(Flag {
                    kind: FlagKind::Miscabled,
                    slot: m.slot,
                    machines: vec![m.id],
                    detail: format!(
                        "option 82 says {} U{} ({}), LLDP says {} U{} ({})",
                        a.rack,
                        a.slot,
                        a.port.as_deref().unwrap_or("?"),
                        b.rack,
                        b.slot,
                        b.port.as_deref().unwrap_or("?")
                    ),
                });
            }
        }
    }
    let placed: Vec<&Machine> = machines.iter().filter(|m| m.rack.as_deref() == Some(&rack.name)).collect();
    for slot in slots_of(&placed) {
        let here: Vec<u64> = placed.iter().filter(|m| m.slot == Some(slot)).map(|m| m.id).collect();
        if here.len() > 1 {
            let detail = format!("machines {here:?} all claim U{slot}");
            out.push(Flag { kind: FlagKind::SlotConflict, slot: Some(slot), machines: here, detail });
        }
    }
    let deadline = rack.created_at.saturating_add(u64::from(rack.silent_after_minutes) * 60);
    if now >= deadline {
        for slot in rack.expected_slots() {
            if !placed.iter().any(|m| m.slot == Some(slot)) {
                let detail = format!("nothing heard from U{slot} in {} minutes", rack.silent_after_minutes);
                out.push(Flag { kind: FlagKind::SlotSilent, slot: Some(slot), machines: vec![], detail });
            }
        }
    }
    for m in placed.iter().filter(|m| m.state == MachineState::Failed) {
        let detail = format!("machine {} ({}) failed", m.id, m.hostname.as_deref().unwrap_or("no name"));
        out.push(Flag { kind: FlagKind::MachineFailed, slot: m.slot, machines: vec![m.id], detail });
    }
    for m in machines {
        let Some(p) = &m.placement else { continue };
        for (c, by) in p.open_claims().into_iter().filter(|(c, _)| c.rack == rack.name) {
            let mac = m.macs.first().map(|m| m.to_string()).unwrap_or_default();
            let said = match by {
                Evidence::Serial => format!("its serial {:?} is the CSV's", m.serial.as_deref().unwrap_or("")),
                _ => format!("its LLDP neighbour is port {}", c.port.as_deref().unwrap_or("?")),
            };
            let held = placed.iter().find(|h| h.slot == Some(c.slot)).map(|h| h.id);
            let detail = match held {
                Some(h) => {
                    format!("machine {} ({mac}) says it is in U{} ({said}), which machine {h} holds", m.id, c.slot)
                }
                None => format!("machine {} ({mac}) says it is in U{} ({said}): an operator confirms it", m.id, c.slot),
            };
            out.push(Flag { kind: FlagKind::Claimed, slot: Some(c.slot), machines: vec![m.id], detail });
        }
    }
    for m in machines {
        let Some(u) = m.placement.as_ref().and_then(|p| p.unmatched.as_ref()) else { continue };
        if u.rack.as_deref() == Some(rack.name.as_str()) && m.rack.is_none() {
            let mac = m.macs.first().map(|m| m.to_string()).unwrap_or_default();
            let detail =
                format!("machine {} ({mac}) came in on {}, which the rack maps to no slot", m.id, u.describe());
            out.push(Flag { kind: FlagKind::Unmatched, slot: None, machines: vec![m.id], detail });
        }
    }
    out
}

fn slots_of(placed: &[&Machine]) -> Vec<u32> {
    let mut s: Vec<u32> = placed.iter().filter_map(|m| m.slot).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// A machine as the elevation shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MachineSummary {
    pub id: u64,
    pub mac: Option<Mac>,
    pub hostname: Option<String>,
    #[schema(value_type = Option<String>, format = Ipv4)]
    pub reserved_ip: Option<std::net::Ipv4Addr>,
    pub state: MachineState,
    pub by: Option<Evidence>,
    /// The newest event on its timeline: its kind and when (Unix milliseconds).
    pub last_event: Option<EventKind>,
    pub last_event_at_ms: Option<u64>,
}

impl MachineSummary {
    /// The summary of `m`, with its newest event.
    pub fn of(m: &Machine, last: Option<(EventKind, u64)>) -> MachineSummary {
        let (last_event, last_event_at_ms) = last.map_or((None, None), |(k, at)| (Some(k), Some(at)));
        MachineSummary {
            id: m.id,
            mac: m.macs.first().copied(),
            hostname: m.hostname.clone(),
            reserved_ip: m.reserved_ip,
            state: m.state,
            by: m.placement.as_ref().and_then(|p: &Placement| p.by),
            last_event,
            last_event_at_ms,
        }
    }
}

/// One slot of the elevation.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SlotView {
    pub slot: u32,
    /// The switch ports mapped to it.
    pub ports: Vec<String>,
    /// A port or CSV row maps it: a machine is expected here.
    pub expected: bool,
    pub machines: Vec<MachineSummary>,
}

/// A rack with its elevation and flags.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RackView {
    pub rack: Rack,
    /// Slots that are mapped or hold a machine, top (highest) first, as in a rack diagram.
    pub slots: Vec<SlotView>,
    pub flags: Vec<Flag>,
}

impl RackView {
    /// Leaves out the machines `keep` says no to (another pool's, for a pool-scoped reader),
    /// from the slots and from the flags; a flag that concerned only such machines goes too.
    pub fn keep_machines(&mut self, keep: impl Fn(u64) -> bool) {
        for slot in &mut self.slots {
            slot.machines.retain(|m| keep(m.id));
        }
        self.flags.retain_mut(|f| {
            let of_none = f.machines.is_empty();
            f.machines.retain(|id| keep(*id));
            of_none || !f.machines.is_empty()
        });
    }
}

/// Builds the elevation from the placed machines' summaries (slot, summary).
pub fn elevation(rack: Rack, placed: Vec<(u32, MachineSummary)>, flags: Vec<Flag>) -> RackView {
    let mut numbers = rack.expected_slots();
    numbers.extend(placed.iter().map(|(s, _)| *s));
    numbers.sort_unstable_by(|a, b| b.cmp(a));
    numbers.dedup();
    let expected = rack.expected_slots();
    let mut placed = placed;
    let slots = numbers
        .into_iter()
        .map(|slot| SlotView {
            slot,
            ports: rack.ports.iter().filter(|p| p.slot == slot).map(|p| p.port.clone()).collect(),
            expected: expected.contains(&slot),
            machines: {
                let (here, rest): (Vec<_>, Vec<_>) = placed.drain(..).partition(|(s, _)| *s == slot);
                placed = rest;
                here.into_iter().map(|(_, m)| m).collect()
            },
        })
        .collect();
    RackView { rack: rack.shown(), slots, flags }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::racks::place::Claim;
    use crate::racks::{validate, Catalog, RackSpec};

    fn rack() -> Rack {
        let spec: RackSpec = serde_json::from_value(serde_json::json!({
            "name": "r1", "switch": {"remote_id": "leaf"}, "ports": ["Ethernet1-3 -> U1-U3"], "silent_after_minutes": 10
        }))
        .unwrap();
        validate(spec, &Catalog::default(), 1000).unwrap()
    }

    fn claim(slot: u32) -> Option<Claim> {
        Some(Claim { rack: "r1".into(), slot, port: Some(format!("Ethernet{slot}")) })
    }

    fn placed(id: u64, slot: u32, lldp: Option<u32>) -> Machine {
        let mut m = Machine::new(id, vec![crate::mac::Mac::from_u64(id)], 0);
        (m.rack, m.slot) = (Some("r1".into()), Some(slot));
        m.placement = Some(Placement {
            by: Some(Evidence::Option82),
            option82: claim(slot),
            lldp: lldp.and_then(claim),
            csv: None,
            serial: None,
            confirmed: None,
            placed_at: 0,
            provision_task: None,
            unmatched: None,
        });
        m
    }

    #[test]
    fn each_kind_of_flag_and_only_when_it_holds() {
        let r = rack();
        let fine = [placed(1, 1, Some(1)), placed(2, 2, None)];
        assert_eq!(compute(&r, &fine, 1000 + 599), vec![], "U3 is not silent before 10 minutes");
        let silent = compute(&r, &fine, 1000 + 600);
        assert_eq!((silent.len(), silent[0].kind, silent[0].slot), (1, FlagKind::SlotSilent, Some(3)));

        let mut failed = placed(3, 3, Some(2));
        failed.state = MachineState::Failed;
        let bad = [placed(1, 1, None), placed(2, 1, None), failed];
        let kinds: Vec<(FlagKind, Option<u32>, Vec<u64>)> =
            compute(&r, &bad, 0).into_iter().map(|f| (f.kind, f.slot, f.machines)).collect();
        assert_eq!(
            kinds,
            vec![
                (FlagKind::Miscabled, Some(3), vec![3]),
                (FlagKind::SlotConflict, Some(1), vec![1, 2]),
                (FlagKind::MachineFailed, Some(3), vec![3]),
            ]
        );
        let keys: std::collections::HashSet<String> = compute(&r, &bad, 0).iter().map(Flag::key).collect();
        assert_eq!(keys.len(), 3, "each flag has its own key");

        // A port the rack's switch sent that the rack maps to nothing; another rack's is not here.
        let sent = |rack: &str| {
            let mut m = Machine::new(9, vec![crate::mac::Mac::from_u64(9)], 0);
            let sent = super::super::relay::decode("0004000a0107", Some("0006001b54aabbcc"));
            let mut p = placed(9, 1, None).placement.unwrap();
            (p.by, p.option82, p.unmatched) =
                (None, None, Some(super::super::relay::unmatched(&sent, Some(rack.into()))));
            m.placement = Some(p);
            m
        };
        assert!(concerns("r1", &sent("r1")) && !concerns("r1", &sent("r2")));
        let flags = compute(&r, &[sent("r1")], 0);
        assert_eq!((flags.len(), flags[0].kind), (1, FlagKind::Unmatched));
        assert!(
            flags[0].detail.contains("port module 1 port 7 (VLAN 10) of switch 00:1b:54:aa:bb:cc"),
            "{}",
            flags[0].detail
        );
    }

    #[test]
    fn the_elevation_is_top_first_with_ports_and_empty_slots() {
        let m = placed(1, 2, None);
        let v = elevation(rack(), vec![(2, MachineSummary::of(&m, None))], vec![]);
        let slots: Vec<(u32, usize, bool)> = v.slots.iter().map(|s| (s.slot, s.machines.len(), s.expected)).collect();
        assert_eq!(slots, vec![(3, 0, true), (2, 1, true), (1, 0, true)]);
        assert_eq!(v.slots[1].ports, vec!["Ethernet2".to_string()]);
    }
}
