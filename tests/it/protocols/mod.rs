//! The protocol servers in-process: DHCP, DNS, TFTP, HTTP boot, TLS, Tang, the boot listener, the
//! boot storm; LLDP as lldpd sends it.

mod boot_http;
mod boot_nonce;
mod boot_sendfile;
mod boot_storm;
mod boot_tls;
mod dhcp;
mod dns;
mod lldp;
mod tang;
mod tftp;
mod tls;
