//! One appliance on a fixed loopback port with real agents (the `rackboot-agent` library) for
//! the agent and provisioning tests.

use std::path::Path;
use std::time::{Duration, Instant};

use hyper::Method;
use rackboot::app::{self, Running};
use rackboot::client::ApiClient;
use rackboot::config::Config;
use rackboot_agent::run::{Agent, Options};
use rackboot_agent::tls::Trust;
use rackboot_agent::wire::AgentMode;
use serde_json::Value;

/// One appliance on loopback. Its first start binds port 0 for each listener and keeps the ports
/// it got, so a restart comes back on the same ones (an agent follows it across the restart)
/// and no test picks a port it binds later.
pub struct Appliance {
    pub dir: tempfile::TempDir,
    /// The plain-HTTP port (`/boot`).
    pub port: u16,
    /// The HTTPS port (API, agents).
    pub tls_port: u16,
    extra: String,
    /// Lines of `[https]` besides its listen address.
    https: String,
    pub app: Option<Running>,
    pub api: ApiClient,
}

impl Appliance {
    pub async fn start(extra: &str) -> Appliance {
        Self::start_with_https(extra, "").await
    }

    /// [`Appliance::start`] with lines of `[https]` besides its listen address (`boot_port`).
    pub async fn start_with_https(extra: &str, https: &str) -> Appliance {
        let dir = tempfile::tempdir().unwrap();
        let (app, api) = Self::launch(dir.path(), (0, 0), extra, https).await;
        let (port, tls_port) = (app.http_addr.port(), app.https_addr.port());
        Appliance { dir, port, tls_port, extra: extra.into(), https: https.into(), app: Some(app), api }
    }

    pub async fn boot(&mut self) {
        let (app, api) = Self::launch(self.dir.path(), (self.port, self.tls_port), &self.extra, &self.https).await;
        self.api = api;
        self.app = Some(app);
    }

    async fn launch(dir: &Path, (port, tls_port): (u16, u16), extra: &str, https: &str) -> (Running, ApiClient) {
        // Short agent timers unless `extra` sets its own (it starts inside [agent]).
        let timers =
            if extra.starts_with("poll_secs") { "" } else { "poll_secs = 2\nlease_secs = 3\nstats_secs = 1\n" };
        let text = format!(
            "[server]\ndata_dir = \"{}\"\naddress = \"127.0.0.1\"\n[http]\nlisten = \"127.0.0.1:{}\"\n[https]\nlisten = \"127.0.0.1:{tls_port}\"\n{https}\n[dhcp]\nmode = \"off\"\n[tftp]\nenabled = false\n[dns]\nenabled = false\n[agent]\n{timers}{}\n{}",
            dir.display(),
            port,
            extra,
            super::store_section(dir)
        );
        let running = app::start(Config::parse(&text).unwrap()).await.unwrap();
        let url = format!("https://{}", running.https_addr);
        let api = ApiClient::new(&url, running.admin_token.clone(), running.ca_pem.as_bytes()).unwrap();
        (running, api)
    }

    pub async fn stop(&mut self) {
        if let Some(app) = self.app.take() {
            app.wait(async {}).await.unwrap();
        }
    }

    /// The HTTPS base URL agents and the API use.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.tls_port)
    }

    /// The plain-HTTP base URL firmware and installers use (`/boot`).
    pub fn http_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whom agents trust: the appliance's CA (the same across restarts on one data dir).
    pub fn trust(&self) -> Trust {
        Trust::CaPem(std::fs::read(self.dir.path().join("tls/ca.pem")).unwrap())
    }

    /// Starts a BootOS agent for a machine with `mac`; it runs until the handle is aborted.
    pub fn agent(&self, mac: &str, workdir: &Path) -> tokio::task::JoinHandle<()> {
        self.agent_with(mac, workdir, AgentMode::Bootos, None)
    }

    /// Starts an agent in `mode`, keeping its session in `state_dir` (installed nodes). A BootOS
    /// agent carries a boot nonce, as if its boot script had come from the appliance.
    pub fn agent_with(
        &self,
        mac: &str,
        workdir: &Path,
        mode: AgentMode,
        state_dir: Option<&Path>,
    ) -> tokio::task::JoinHandle<()> {
        let mut opts = self.agent_options(mac, workdir, mode, state_dir);
        let cmdb = (mode == AgentMode::Bootos).then(|| self.app.as_ref().unwrap().cmdb.clone());
        let boot_mac = mac.parse().unwrap();
        tokio::spawn(async move {
            // The handle is dropped before the agent runs: a restart must be able to reopen the file.
            if let Some(cmdb) = cmdb {
                opts.nonce = Some(cmdb.issue_boot_nonce(boot_mac, "127.0.0.1".into(), 1800).await.unwrap());
            }
            let _ = Agent::new(opts).unwrap().run().await;
        })
    }

    /// Starts a BootOS agent booted as from the HTTPS-boot image: no boot MAC and no nonce on
    /// its command line (`rackboot.nonce=tls`), so it asks the appliance for its nonce.
    pub fn agent_over_tls(&self, mac: &str, workdir: &Path) -> tokio::task::JoinHandle<()> {
        let mut opts = self.agent_options(mac, workdir, AgentMode::Bootos, None);
        opts.boot_mac = None;
        opts.nonce = Some(rackboot_agent::wire::NONCE_OVER_TLS.into());
        tokio::spawn(async move {
            let _ = Agent::new(opts).unwrap().run().await;
        })
    }

    /// Starts a BootOS agent and returns, beside its handle, what its LLDP listener would hand
    /// a heard neighbour to.
    pub async fn agent_with_lldp(
        &self,
        mac: &str,
        workdir: &Path,
    ) -> (tokio::task::JoinHandle<()>, impl Fn(rackboot_agent::wire::LldpNeighbor)) {
        let mut opts = self.agent_options(mac, workdir, AgentMode::Bootos, None);
        let cmdb = self.app.as_ref().unwrap().cmdb.clone();
        opts.nonce = Some(cmdb.issue_boot_nonce(mac.parse().unwrap(), "127.0.0.1".into(), 1800).await.unwrap());
        let mut agent = Agent::new(opts).unwrap();
        let feed = agent.lldp_feed();
        (
            tokio::spawn(async move {
                let _ = agent.run().await;
            }),
            feed,
        )
    }

    fn agent_options(&self, mac: &str, workdir: &Path, mode: AgentMode, state_dir: Option<&Path>) -> Options {
        Options {
            url: self.url(),
            trust: self.trust(),
            mode,
            state_dir: state_dir.map(Path::to_path_buf),
            boot_mac: Some(mac.into()),
            nonce: None,
            root: "/".into(),
            workdir: workdir.into(),
            macs: Some(vec![mac.into()]),
            lldp: false,
            machine_actions: false,
            ipmitool: "ipmitool".into(),
        }
    }

    /// A boot nonce for `mac`, as its boot script from the appliance would carry it.
    pub async fn boot_nonce(&self, mac: &str) -> String {
        let cmdb = &self.app.as_ref().unwrap().cmdb;
        cmdb.issue_boot_nonce(mac.parse().unwrap(), "127.0.0.1".into(), 1800).await.unwrap()
    }

    pub async fn get(&self, path: &str) -> Value {
        self.api.ok(Method::GET, path, None).await.unwrap()
    }

    pub async fn submit(&self, body: Value) -> Vec<Value> {
        let r = self.api.ok(Method::POST, "/jobs", Some(body)).await.unwrap();
        r["jobs"].as_array().unwrap().clone()
    }

    /// Waits (up to `secs`) until job `id` is in `state`; returns it.
    pub async fn job_in(&self, id: u64, state: &str, secs: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let j = self.get(&format!("/jobs/{id}")).await;
            if j["state"] == state {
                return j;
            }
            assert!(Instant::now() < deadline, "job {id} not {state} after {secs} s: {j}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}
