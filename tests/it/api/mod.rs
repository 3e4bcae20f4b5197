//! The API and CLI: calls, the OpenAPI contract (and schemathesis against it), users, audit,
//! templates, racks, webhooks, assets, logins from a directory (slapd), resource pools.

mod assets;
mod audit;
mod basics;
mod contract;
pub(crate) mod directory;
mod pools;
mod racks;
// One of the longest tests outside the VM runs (a minute, three thousand requests): named to
// sort early, as the harness starts tests in name order, so it runs beside the others.
mod schemathesis;
mod switches;
mod templates;
mod users;
mod webhooks;
