//! The zones rackboot is authoritative for, as an immutable snapshot built from the CMDB's
//! hostnames and addresses: the forward zone (`dns.domain`) and one reverse zone per /8, /16 or
//! /24 of the configured networks, and one `ip6.arpa` zone per DHCPv6 prefix (on a nibble
//! boundary). Pure data: building and lookups do no I/O.
//!
//! A snapshot that only adds names to the last one ([`Zones::with_added`]) shares that one's
//! names and keeps the new ones beside them, so a change that adds a machine costs its own
//! records, not a rebuild of every name. [`Zones::build`] folds them all together again.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use hickory_server::proto::rr::rdata::{A, AAAA, NS, PTR, SOA};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType};

use rackboot_config::Ipv4Net;

/// What a snapshot is built from, besides the hosts.
#[derive(Debug, Clone)]
pub struct ZoneSettings {
    /// Forward zone, e.g. "rack.internal".
    pub domain: String,
    /// The appliance's address: `rackboot.<domain>`, the zones' name server.
    pub server_ip: Ipv4Addr,
    pub ttl: u32,
    /// Networks whose reverse zones we serve.
    pub reverse: Vec<Ipv4Net>,
    /// IPv6 prefixes whose `ip6.arpa` zones we serve (the DHCPv6 subnets).
    pub reverse6: Vec<ipnet::Ipv6Net>,
    /// The appliance's IPv6 address: `rackboot.<domain>` gets an AAAA too.
    pub server_ip6: Option<Ipv6Addr>,
}

/// The name the appliance itself has in the forward zone (and the zones' NS target).
pub const SELF_LABEL: &str = "rackboot";

/// One zone: its apex SOA and every name in it with its records. Names with no records of their
/// own that lie between the apex and a real name (empty non-terminals) are present with none,
/// so they answer NODATA rather than NXDOMAIN.
#[derive(Debug)]
struct Authority {
    origin: LowerName,
    /// The SOA as sent with negative answers: TTL = min(TTL, MINIMUM) (RFC 2308 3).
    negative_soa: Record,
    soa: Record,
    /// The names of the last full build, shared with the snapshots made from it since.
    nodes: Arc<HashMap<LowerName, Vec<Record>>>,
    /// Names added or given more records since, each with all its records: read first.
    added: HashMap<LowerName, Vec<Record>>,
}

impl Authority {
    fn get(&self, name: &LowerName) -> Option<&Vec<Record>> {
        self.added.get(name).or_else(|| self.nodes.get(name))
    }

    /// Adds `record` to `name`, and the empty non-terminals between it and the apex.
    fn add(&mut self, name: LowerName, record: Record) {
        if !self.get(&name).is_some_and(|rrs| rrs.iter().any(|r| r.data == record.data)) {
            if !self.added.contains_key(&name) {
                let had = self.nodes.get(&name).cloned().unwrap_or_default();
                self.added.insert(name.clone(), had);
            }
            self.added.get_mut(&name).expect("just put there").push(record);
        }
        let mut parent = name.base_name();
        while self.origin.zone_of(&parent) && parent != self.origin {
            if self.get(&parent).is_none() {
                self.added.insert(parent.clone(), Vec::new());
            }
            parent = parent.base_name();
        }
    }

    /// This zone at `serial`, with the same names.
    fn at_serial(&self, serial: u32) -> Authority {
        let reserial = |r: &Record| {
            let mut r = r.clone();
            if let RData::SOA(soa) = &mut r.data {
                soa.serial = serial;
            }
            r
        };
        let mut a = Authority {
            origin: self.origin.clone(),
            negative_soa: reserial(&self.negative_soa),
            soa: reserial(&self.soa),
            nodes: self.nodes.clone(),
            added: self.added.clone(),
        };
        // The apex's own records hold the SOA too.
        if let Some(apex) = a.get(&a.origin).cloned() {
            a.added.insert(a.origin.clone(), apex.iter().map(reserial).collect());
        }
        a
    }

    /// Folds the added names into the shared ones.
    fn fold(&mut self) {
        if self.added.is_empty() {
            return;
        }
        let mut nodes = Arc::try_unwrap(std::mem::take(&mut self.nodes)).unwrap_or_else(|shared| (*shared).clone());
        nodes.extend(self.added.drain());
        self.nodes = Arc::new(nodes);
    }
}

/// All zones at one serial.
#[derive(Debug)]
pub struct Zones {
    authorities: Vec<Authority>,
    /// Additional-section data for NS answers: the name server's address.
    ns_glue: Vec<Record>,
    serial: u32,
}

/// The outcome of looking a name up in our zones.
#[derive(Debug, PartialEq)]
pub enum Lookup<'z> {
    /// The name has records of the asked type.
    Answer { answers: Vec<&'z Record>, additionals: &'z [Record] },
    /// The name exists but has no records of that type; the SOA goes in the authority section.
    NoData(&'z Record),
    /// No such name in a zone of ours.
    NxDomain(&'z Record),
    /// The name is outside every zone of ours.
    NotOurs,
}

impl Zones {
    /// Builds every zone at `serial`. Hosts are (hostname label, address); a host whose address
    /// falls outside the reverse networks gets no PTR, and one named like the appliance is
    /// skipped (the name belongs to the name server).
    pub fn build(s: &ZoneSettings, hosts: &[(String, Ipv4Addr)], serial: u32) -> Zones {
        let domain = Name::from_ascii(format!("{}.", s.domain)).expect("dns.domain is validated at load");
        let ns_name = Name::from_ascii(SELF_LABEL).expect("a valid label").append_domain(&domain).expect("short name");
        let hostmaster = Name::from_ascii("hostmaster").expect("a valid label").append_domain(&domain).expect("fits");
        let ttl = s.ttl;
        let new_authority = |origin: Name| {
            // The negative-caching TTL is kept short: a name that does not exist yet usually will
            // within seconds (a machine being named, a lease being taken).
            let minimum = ttl.min(5);
            let soa = SOA::new(ns_name.clone(), hostmaster.clone(), serial, 3600, 600, 86_400, minimum);
            let soa = Record::from_rdata(origin.clone(), ttl, RData::SOA(soa));
            let mut negative_soa = soa.clone();
            negative_soa.ttl = minimum;
            let ns = Record::from_rdata(origin.clone(), ttl, RData::NS(NS(ns_name.clone())));
            let mut added = HashMap::new();
            added.insert(LowerName::from(&origin), vec![soa.clone(), ns]);
            Authority { origin: LowerName::from(&origin), negative_soa, soa, nodes: Arc::default(), added }
        };

        let mut authorities = vec![new_authority(domain.clone())];
        for origin in reverse_origins(&s.reverse).into_iter().chain(reverse_origins6(&s.reverse6)) {
            authorities.push(new_authority(origin));
        }
        let glue = Record::from_rdata(ns_name.clone(), ttl, RData::A(A(s.server_ip)));
        let mut zones = Zones { authorities, ns_glue: vec![glue.clone()], serial };
        zones.insert(glue);
        zones.insert(Record::from_rdata(reverse_name(s.server_ip), ttl, RData::PTR(PTR(ns_name.clone()))));
        if let Some(ip6) = s.server_ip6 {
            let glue6 = Record::from_rdata(ns_name.clone(), ttl, RData::AAAA(AAAA(ip6)));
            zones.ns_glue.push(glue6.clone());
            zones.insert(glue6);
            zones.insert(Record::from_rdata(reverse_name6(ip6), ttl, RData::PTR(PTR(ns_name.clone()))));
        }
        zones.add_hosts(s, hosts);
        zones.fold();
        zones
    }

    /// This snapshot at `serial` with `hosts` and `hosts6` added (see the module): the names it
    /// has stay shared, the new ones are kept beside them.
    pub fn with_added(
        &self,
        s: &ZoneSettings,
        hosts: &[(String, Ipv4Addr)],
        hosts6: &[(String, Ipv6Addr)],
        serial: u32,
    ) -> Zones {
        let authorities = self.authorities.iter().map(|a| a.at_serial(serial)).collect();
        let mut zones = Zones { authorities, ns_glue: self.ns_glue.clone(), serial };
        zones.add_hosts(s, hosts);
        zones.add_hosts6(s, hosts6);
        zones
    }

    /// Names added since the last full build (see [`Zones::with_added`]).
    pub fn added_len(&self) -> usize {
        self.authorities.iter().map(|a| a.added.len()).sum()
    }

    /// Folds the names added since the last full build into the shared ones.
    pub fn fold(&mut self) {
        self.authorities.iter_mut().for_each(Authority::fold);
    }

    /// Adds each host's A record and its PTR (where a reverse zone of ours holds it).
    fn add_hosts(&mut self, s: &ZoneSettings, hosts: &[(String, Ipv4Addr)]) {
        let Ok(domain) = Name::from_ascii(format!("{}.", s.domain)) else { return };
        for (host, ip) in hosts {
            if host.eq_ignore_ascii_case(SELF_LABEL) {
                continue;
            }
            let Ok(name) = Name::from_ascii(host).and_then(|n| n.append_domain(&domain)) else { continue };
            self.insert(Record::from_rdata(name.clone(), s.ttl, RData::A(A(*ip))));
            self.insert(Record::from_rdata(reverse_name(*ip), s.ttl, RData::PTR(PTR(name))));
        }
    }

    /// Adds each host's AAAA record and its `ip6.arpa` PTR (where a zone of ours holds it), as
    /// [`Zones::build`] does for IPv4.
    pub fn add_hosts6(&mut self, s: &ZoneSettings, hosts: &[(String, Ipv6Addr)]) {
        let Ok(domain) = Name::from_ascii(format!("{}.", s.domain)) else { return };
        for (host, ip) in hosts {
            if host.eq_ignore_ascii_case(SELF_LABEL) {
                continue;
            }
            let Ok(name) = Name::from_ascii(host).and_then(|n| n.append_domain(&domain)) else { continue };
            self.insert(Record::from_rdata(name.clone(), s.ttl, RData::AAAA(AAAA(*ip))));
            self.insert(Record::from_rdata(reverse_name6(*ip), s.ttl, RData::PTR(PTR(name))));
        }
    }

    /// Adds a record to the zone that holds its name, creating the empty non-terminals above
    /// it; a record outside every zone is ignored.
    fn insert(&mut self, record: Record) {
        let name = LowerName::from(&record.name);
        if let Some(auth) = self.authority_mut(&name) {
            auth.add(name, record);
        }
    }

    fn authority_mut(&mut self, name: &LowerName) -> Option<&mut Authority> {
        let i = self.authority_index(name)?;
        Some(&mut self.authorities[i])
    }

    /// The most specific zone of ours that contains `name`.
    fn authority_index(&self, name: &LowerName) -> Option<usize> {
        self.authorities
            .iter()
            .enumerate()
            .filter(|(_, a)| a.origin.zone_of(name))
            .max_by_key(|(_, a)| a.origin.num_labels())
            .map(|(i, _)| i)
    }

    /// The serial every SOA of this snapshot carries.
    pub fn serial(&self) -> u32 {
        self.serial
    }

    /// Answers `qtype` for `name` (ANY returns every record of the name).
    pub fn lookup(&self, name: &LowerName, qtype: RecordType) -> Lookup<'_> {
        let Some(auth) = self.authority_index(name).map(|i| &self.authorities[i]) else { return Lookup::NotOurs };
        let Some(rrs) = auth.get(name) else { return Lookup::NxDomain(&auth.negative_soa) };
        let answers: Vec<&Record> =
            rrs.iter().filter(|r| qtype == RecordType::ANY || r.record_type() == qtype).collect();
        if answers.is_empty() {
            return Lookup::NoData(&auth.negative_soa);
        }
        let additionals = if qtype == RecordType::NS { &self.ns_glue[..] } else { &[] };
        Lookup::Answer { answers, additionals }
    }

    /// A full transfer of the zone whose apex is `origin`: SOA, every other record, SOA
    /// (RFC 5936). `None` when `origin` is not the apex of a zone of ours.
    pub fn transfer(&self, origin: &LowerName) -> Option<Vec<&Record>> {
        let auth = self.authorities.iter().find(|a| &a.origin == origin)?;
        let mut names: Vec<&LowerName> =
            auth.nodes.keys().filter(|n| !auth.added.contains_key(*n)).chain(auth.added.keys()).collect();
        names.sort();
        let mut out = vec![&auth.soa];
        for n in names {
            out.extend(auth.get(n).into_iter().flatten().filter(|r| r.record_type() != RecordType::SOA));
        }
        out.push(&auth.soa);
        Some(out)
    }
}

/// `d.c.b.a.in-addr.arpa.` for a.b.c.d.
pub fn reverse_name(ip: Ipv4Addr) -> Name {
    let [a, b, c, d] = ip.octets();
    Name::from_ascii(format!("{d}.{c}.{b}.{a}.in-addr.arpa.")).expect("a valid name")
}

/// The `ip6.arpa` name of `ip`: its 32 nibbles, last first (RFC 3596 2.5).
pub fn reverse_name6(ip: Ipv6Addr) -> Name {
    let n = u128::from(ip);
    let nibbles: Vec<String> = (0..32).map(|i| format!("{:x}", (n >> (4 * i)) & 0xf)).collect();
    Name::from_ascii(format!("{}.ip6.arpa.", nibbles.join("."))).expect("a valid name")
}

/// The `ip6.arpa` zone apexes covering `nets`: a prefix is split on nibble boundaries (a /62
/// is four /64 zones); a prefix longer than /124 is served as its /124.
pub fn reverse_origins6(nets: &[ipnet::Ipv6Net]) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    for n in nets {
        let len = n.prefix_len();
        let zone_len = (len.div_ceil(4) * 4).clamp(4, 124);
        let count = 1u128 << zone_len.saturating_sub(len);
        let base = u128::from(n.network()) & (u128::MAX << (128 - u32::from(zone_len)));
        for i in 0..count {
            let start = base + (i << (128 - u32::from(zone_len)));
            let labels: Vec<String> =
                (0..usize::from(zone_len / 4)).map(|k| format!("{:x}", (start >> (124 - 4 * k)) & 0xf)).rev().collect();
            let name = Name::from_ascii(format!("{}.ip6.arpa.", labels.join("."))).expect("a valid name");
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

/// The reverse zone apexes covering `nets`: a network is split on octet boundaries (a /23 is
/// two /24 zones, a /20 sixteen); one longer than /24 is served as its whole /24.
pub fn reverse_origins(nets: &[Ipv4Net]) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    for n in nets {
        let (net, len) = (n.network(), n.prefix_len());
        let zone_len = len.div_ceil(8).clamp(1, 3) * 8;
        let count = 1u32 << zone_len.saturating_sub(len);
        let base = u32::from(net) & (u32::MAX << (32 - zone_len));
        for i in 0..count {
            let octets = Ipv4Addr::from(base + (i << (32 - zone_len))).octets();
            let labels: Vec<String> = octets[..usize::from(zone_len / 8)].iter().rev().map(|o| o.to_string()).collect();
            let name = Name::from_ascii(format!("{}.in-addr.arpa.", labels.join("."))).expect("a valid name");
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
