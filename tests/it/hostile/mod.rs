//! The hostile VLAN: every attack rackboot is known to face, one module a kind of attacker, so a
//! regression shows by name (`cargo test --test it hostile::takeover::`). The threat model in the
//! book (docs/threat-model.md) names the test behind each promise.
//!
//! - From the VLAN: [`takeover`] (a neighbour's own nonce, real dhclient and curl in
//!   namespaces), [`enroll_nonce`] (nonces bound to the leased address, forged TFTP requests),
//!   [`sightings`] (firmware floods against DHCP), [`dhcp_flood`], [`tftp_flood`],
//!   [`unclaimed_flood`], [`conn_limits`], [`http_bounds`], [`leaks`] (what a 503 tells),
//!   [`logins`] (a password guesser with many connections at once), [`job_output`] (a node
//!   filling the disk through its own job's output), [`mac_flood`] (a node naming MACs it does
//!   not own), [`claims`] (a node's LLDP neighbour or serial naming another rack's slot),
//!   [`seeds`] (a neighbour with a machine's address reading its answer file or user-data).
//! - Through the API: [`images`] (a qcow2 that names the appliance's files), [`operator`] (a
//!   BMC password pointed elsewhere), [`plugins`] (hostile bundles), [`revoked`] (an event
//!   stream held open by a revoked token), [`templates`] (a template that would render for ever),
//!   [`directory`] (LDAP filter and DN injection through the username at the login), [`pools`]
//!   (a viewer of one pool walking the API for another's machines).
//! - With the database: [`store`] (a takeover through the other appliance, stale credentials,
//!   swapped plugin bytes, a key added to the store).

mod claims;
mod conn_limits;
mod dhcp_flood;
mod directory;
mod enroll_nonce;
mod http_bounds;
mod images;
mod job_output;
mod leaks;
mod logins;
mod mac_flood;
mod oidc;
mod operator;
mod plugins;
mod pool_reads;
mod pools;
mod revoked;
mod seeds;
mod sightings;
mod store;
mod takeover;
mod templates;
mod tftp_flood;
mod unclaimed_flood;
