//! What the machine list filters and searches on, kept in memory with the index: the ids of all
//! machines, by state and by tag, and each machine's searchable fields, lowercased once. A
//! filtered or searched page is chosen here and only the machines on it are read from storage
//! (at 100,000 machines a listing used to decode every record: 0.1-0.4 s).

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use super::{Brief, Index};
use crate::machines::MachineFilter;
use crate::model::{Machine, MachineState};
use rackboot_model::mac::Mac;

/// A machine's filterable and searchable fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Facet {
    pub tags: Vec<String>,
    pub boot_profile: Option<String>,
    /// Lowercase.
    pub vendor: Option<String>,
    /// Lowercase: its MACs, hostname, serial, vendor, model and tags.
    pub text: Vec<String>,
    pub pool: String,
}

impl From<&Machine> for Facet {
    fn from(m: &Machine) -> Self {
        let mut text: Vec<String> = m.macs.iter().map(|mac| mac.to_string()).collect();
        text.extend(
            [&m.hostname, &m.serial, &m.vendor, &m.model].into_iter().flatten().map(|f| f.to_ascii_lowercase()),
        );
        text.extend(m.tags.iter().map(|t| t.to_ascii_lowercase()));
        Facet {
            tags: m.tags.clone(),
            boot_profile: m.boot_profile.clone(),
            vendor: m.vendor.as_ref().map(|v| v.to_ascii_lowercase()),
            text,
            pool: m.pool.clone(),
        }
    }
}

/// Id sets the listing starts from.
#[derive(Debug, Default)]
pub struct Sets {
    all: BTreeSet<u64>,
    by_state: HashMap<MachineState, BTreeSet<u64>>,
    by_tag: HashMap<String, BTreeSet<u64>>,
}

impl Sets {
    pub fn insert(&mut self, b: &Brief) {
        self.all.insert(b.id);
        self.by_state.entry(b.state).or_default().insert(b.id);
        for t in &b.facet.tags {
            self.by_tag.entry(t.clone()).or_default().insert(b.id);
        }
    }

    pub fn remove(&mut self, b: &Brief) {
        self.all.remove(&b.id);
        if let Some(s) = self.by_state.get_mut(&b.state) {
            s.remove(&b.id);
        }
        for t in &b.facet.tags {
            if let Some(s) = self.by_tag.get_mut(t) {
                s.remove(&b.id);
                if s.is_empty() {
                    self.by_tag.remove(t);
                }
            }
        }
    }
}

/// The ids on one page of a listing, how many match in all, and where the next page starts.
#[derive(Debug, PartialEq)]
pub struct Selection {
    pub ids: Vec<u64>,
    pub total: usize,
    pub next_after: Option<u64>,
}

impl Index {
    /// The machines `f` wants, in id order, paged by `f.after` and `f.limit`; addresses leased
    /// before `now` do not count for the search.
    pub fn select(&self, f: &MachineFilter, now: u64) -> Selection {
        let empty = BTreeSet::new();
        // The narrowest id set the filter names; the rest is checked per candidate.
        let start = match (&f.tag, f.state) {
            (Some(t), _) => self.sets.by_tag.get(t).unwrap_or(&empty),
            (None, Some(s)) => self.sets.by_state.get(&s).unwrap_or(&empty),
            (None, None) => &self.sets.all,
        };
        let q = f.q.as_ref().map(|q| (q.to_ascii_lowercase(), q.as_str()));
        let leased = if q.is_some() { self.leased_by_mac(now) } else { HashMap::new() };
        let vendor = f.vendor.as_ref().map(|v| v.to_ascii_lowercase());
        let limit = f.limit.unwrap_or(1000);
        let after = f.after.unwrap_or(0);
        let mut sel = Selection { ids: Vec::new(), total: 0, next_after: None };
        for id in start {
            let Some(b) = self.machines.get(id) else { continue };
            if !wanted(b, f, vendor.as_deref(), q.as_ref().map(|(l, raw)| (l.as_str(), *raw)), &leased) {
                continue;
            }
            sel.total += 1;
            if *id <= after {
                // On an earlier page.
            } else if sel.ids.len() < limit {
                sel.ids.push(*id);
            } else if sel.next_after.is_none() {
                sel.next_after = sel.ids.last().copied();
            }
        }
        sel
    }
}

/// Whether `b` passes every part of `f`; `q` is (lowercase, as typed).
fn wanted(
    b: &Brief,
    f: &MachineFilter,
    vendor: Option<&str>,
    q: Option<(&str, &str)>,
    leased: &HashMap<Mac, Vec<Ipv4Addr>>,
) -> bool {
    let facet = &b.facet;
    if f.state.is_some_and(|s| s != b.state)
        || f.tag.as_ref().is_some_and(|t| !facet.tags.contains(t))
        || f.profile.as_ref().is_some_and(|p| facet.boot_profile.as_ref() != Some(p))
        || vendor.is_some_and(|v| !facet.vendor.as_deref().is_some_and(|x| x.contains(v)))
        || f.pool.as_ref().is_some_and(|p| *p != facet.pool)
        || f.pools.as_ref().is_some_and(|ps| !ps.contains(&facet.pool))
    {
        return false;
    }
    let Some((lower, raw)) = q else { return true };
    facet.text.iter().any(|t| t.contains(lower))
        || b.reserved_ip.is_some_and(|ip| ip.to_string().contains(raw))
        || b.macs.iter().flat_map(|mac| leased.get(mac)).flatten().any(|ip| ip.to_string().contains(raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Delta;

    fn machine(id: u64, state: MachineState, tags: &[&str], serial: &str) -> Brief {
        let mut m = Machine::new(id, vec![Mac([0x52, 0x54, 0, 0, 0, id as u8])], 0);
        m.state = state;
        m.tags = tags.iter().map(|t| t.to_string()).collect();
        m.serial = Some(serial.into());
        Brief::from(&m)
    }

    fn filter(f: impl FnOnce(&mut MachineFilter)) -> MachineFilter {
        let mut m = MachineFilter::default();
        f(&mut m);
        m
    }

    #[test]
    fn pages_follow_state_tag_and_search_and_moves_between_sets() {
        let mut ix = Index::default();
        ix.apply(
            (1..=9)
                .map(|i| {
                    let state = if i % 3 == 0 { MachineState::Installed } else { MachineState::Discovered };
                    Delta::Upsert(machine(i, state, &[if i <= 5 { "rack1" } else { "rack2" }], &format!("SN-{i:03}")))
                })
                .collect(),
        );
        let installed = ix.select(&filter(|f| f.state = Some(MachineState::Installed)), 0);
        assert_eq!(installed, Selection { ids: vec![3, 6, 9], total: 3, next_after: None });
        let rack1 = ix.select(&filter(|f| f.tag = Some("rack1".into())), 0);
        assert_eq!(rack1.ids, [1, 2, 3, 4, 5]);
        let both = ix.select(&filter(|f| (f.tag, f.state) = (Some("rack1".into()), Some(MachineState::Installed))), 0);
        assert_eq!(both.ids, [3]);
        // A search is case-insensitive over the fields; paging keeps the total of all pages.
        let page = ix.select(&filter(|f| (f.q, f.limit) = (Some("sn-00".into()), Some(4))), 0);
        assert_eq!(page, Selection { ids: vec![1, 2, 3, 4], total: 9, next_after: Some(4) });
        let next = ix.select(&filter(|f| (f.q, f.limit, f.after) = (Some("sn-00".into()), Some(4), Some(4))), 0);
        assert_eq!(next, Selection { ids: vec![5, 6, 7, 8], total: 9, next_after: Some(8) });
        assert_eq!(ix.select(&filter(|f| f.q = Some("52:54:00:00:00:07".into())), 0).ids, [7]);
        // A machine that changes state and tags leaves its old sets; a removed one leaves all.
        ix.apply(vec![Delta::Upsert(machine(3, MachineState::Ready, &["rack2"], "SN-003")), Delta::Remove(6)]);
        assert_eq!(ix.select(&filter(|f| f.state = Some(MachineState::Installed)), 0).ids, [9]);
        assert_eq!(ix.select(&filter(|f| f.tag = Some("rack1".into())), 0).ids, [1, 2, 4, 5]);
        assert_eq!(ix.select(&filter(|f| f.tag = Some("rack2".into())), 0).ids, [3, 7, 8, 9]);
        assert_eq!(ix.select(&MachineFilter::default(), 0).total, 8);
        assert_eq!(ix.select(&filter(|f| f.tag = Some("nowhere".into())), 0).total, 0);
    }
}
