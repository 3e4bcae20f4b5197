//! BMCs: the power service against fake Redfish BMCs, IPMI, sushy-tools and VirtualBMC, BIOS
//! settings and firmware certificates, in-band accounts, virtual media.

mod api;
mod bench;
mod bios;
mod certs;
mod dialects;
mod faults;
mod firmware;
mod firmware_push;
mod inband;
mod ipmi;
mod provision;
mod sushy;
mod vmedia;
