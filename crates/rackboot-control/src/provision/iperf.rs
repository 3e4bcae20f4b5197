//! The appliance's side of the commissioning network test: Debian's iperf3 as a server on the
//! provisioning address, run by [`crate::child::supervise`] while a test profile tests the
//! network (`network_secs`). It serves one test at a time; the commissioning script waits its
//! turn when it finds it busy. iperf3 has no source filter of its own: it listens on the
//! provisioning address only, and only while some profile asks for it (docs/threat-model.md).

use std::net::Ipv4Addr;

use anyhow::Context;

use crate::config::{Config, IPERF3_PORT};

/// iperf3's server for `cfg`, if a test profile tests the network.
pub fn server(cfg: &Config, address: Option<Ipv4Addr>) -> anyhow::Result<Option<crate::child::Program>> {
    if !cfg.provision.tests_network() {
        return Ok(None);
    }
    let address = address.context(
        "a test profile with network_secs needs the provisioning address (server.address or server.interface)",
    )?;
    let iperf3 = cfg.provision.iperf3.clone();
    anyhow::ensure!(
        iperf3.is_file(),
        "a test profile tests the network, but {} is not there (apt-get install iperf3)",
        iperf3.display()
    );
    let args = [
        "--server".to_string(),
        "--bind".into(),
        address.to_string(),
        "--port".into(),
        IPERF3_PORT.to_string(),
        // A client that vanished mid-test must not hold the server: restarted after a minute idle.
        "--idle-timeout".into(),
        "60".into(),
        "--rcv-timeout".into(),
        "30000".into(),
    ];
    Ok(Some(crate::child::Program::new("iperf3", iperf3, args)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_runs_only_for_a_profile_that_tests_the_network_and_binds_the_provisioning_address() {
        let plain = Config::parse("[[provision.test_profiles]]\nname = \"cpu\"\ncpu_secs = 5\n").unwrap();
        assert!(server(&plain, None).unwrap().is_none());
        let net = Config::parse(
            "[provision]\niperf3 = \"/bin/sh\"\n[[provision.test_profiles]]\nname = \"net\"\nnetwork_secs = 5\nmin_network_mbps = 100\n",
        )
        .unwrap();
        assert!(server(&net, None).unwrap_err().to_string().contains("provisioning address"));
        let p = server(&net, Some(Ipv4Addr::new(198, 18, 0, 1))).unwrap().unwrap();
        let args: Vec<String> = p.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(&args[..5], ["--server", "--bind", "198.18.0.1", "--port", "5201"]);
    }
}
