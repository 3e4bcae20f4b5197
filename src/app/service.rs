//! The service contract: every long-running part is started the same way, by name, with its
//! already-bound sockets (or other dependencies), a [`Core`] and the shutdown token:
//! `services.start("dhcp", dhcp::serve(bound, core.clone(), shutdown.clone()))`.
//!
//! A service's future runs until the token is cancelled and then returns `Ok(())`; returning
//! before that, with or without an error, stops every other service and the appliance.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::Addresses;
use crate::cmdb::Cmdb;
use crate::config::Config;
use crate::controller::Hub;
use crate::metrics::Metrics;
use crate::provision::engine::Engine;
use crate::render::Renderer;

/// What every service shares: the validated config, the appliance's resolved addresses and the
/// core handles. Cheap to clone.
#[derive(Clone)]
pub struct Core {
    pub cfg: Arc<Config>,
    pub addrs: Arc<Addresses>,
    pub cmdb: Cmdb,
    pub metrics: Metrics,
    /// The agent controller (long-poll wake-ups, credentials, job followers).
    pub hub: Arc<Hub>,
    /// The provisioning engine.
    pub engine: Arc<Engine>,
    /// Seals and opens stored secrets with the data key in `data_dir/secret.key`.
    pub sealer: Arc<crate::secrets::Sealer>,
    /// The HTTPS listener's TLS and the CA nodes pin.
    pub tls: crate::tls::ServerTls,
    /// Vendor plugins: the blob directory and the upload pipeline.
    pub plugins: Arc<crate::plugins::Store>,
    /// Power through machines' BMCs.
    pub power: Arc<crate::bmc::Power>,
    /// The boot templates both web listeners render from (overrides loaded by [`crate::app`]).
    pub templates: crate::templates::Templates,
    /// Webhook subscriptions and their delivery.
    pub webhooks: Arc<crate::webhooks::Webhooks>,
    /// The Tang server encrypted file systems are bound to.
    pub tang: Arc<crate::tang::Tang>,
    /// BootOS from virtual media for machines whose BMC is set so.
    pub vmedia: Arc<crate::vmedia::VirtualMedia>,
    pub firmware: Arc<rackboot_control::firmware::Firmware>,
    /// Logins: the rate limiter, the hashing pool, the company's directory.
    pub auth: Arc<crate::api::auth::AuthState>,
}

impl Core {
    /// Builds the core handles; `shutdown` ends the controller's long-polls.
    pub fn new(
        cfg: Config,
        addrs: Addresses,
        cmdb: Cmdb,
        tls: crate::tls::ServerTls,
        shutdown: CancellationToken,
    ) -> anyhow::Result<Core> {
        let hub = Hub::new(cmdb.clone(), cfg.agent.clone(), addrs.agent_networks.clone(), shutdown)
            .with_networks6(cfg.dhcp6.subnets.iter().map(|s| s.prefix).collect());
        let hub = Arc::new(hub);
        let renderer = Arc::new(Renderer::new(cfg.templates.as_deref()).context("loading templates")?);
        let six = addrs.server_ip6.map(|ip| (with_host(&addrs.http_base, ip), with_host(&addrs.https_base, ip)));
        let engine = Arc::new(
            Engine::new(
                hub.clone(),
                cfg.provision.clone(),
                renderer,
                addrs.http_base.clone(),
                cfg.dns.domain.clone(),
                (addrs.https_base.clone(), tls.ca_pem.clone()),
            )
            .with_ipv6(six)
            .with_data_dir(cfg.data_dir.clone()),
        );
        let sealer = Arc::new(crate::secrets::Sealer::load_or_create(&cfg.data_dir)?);
        let plugins = Arc::new(
            crate::plugins::Store::open(&cfg.data_dir, cmdb.clone(), cfg.plugins.clone())
                .context("opening the plugin store")?,
        );
        let metrics = Metrics {
            unclaimed_evicted: cmdb.growth().evicted.clone(),
            cmdb_writer: cmdb.writer_stats().clone(),
            cmdb_storage_ok: cmdb.storage_ok().clone(),
            ..Metrics::default()
        };
        let power = Arc::new(crate::bmc::Power::new(cfg.bmc.clone(), cmdb.clone(), sealer.clone(), tls.ca_pem.clone()));
        engine.use_power(power.clone());
        let templates = crate::templates::Templates::new(cfg.templates.as_deref()).context("loading templates")?;
        crate::assets::image::at_start(&cfg, &templates.current(), (&addrs.https_base, &tls.ca_pin), &sealer);
        let webhooks = Arc::new(crate::webhooks::Webhooks::new(
            cfg.webhooks.clone(),
            cmdb.clone(),
            sealer.clone(),
            metrics.clone(),
        ));
        let tang = Arc::new(crate::tang::Tang::new(cmdb.clone(), sealer.clone(), &addrs.http_base));
        engine.use_tang(tang.clone());
        let vmedia = crate::vmedia::Settings {
            dir: cfg.data_dir.join("vmedia"),
            boot_root: cfg.tftp.root.clone(),
            tool: cfg.bmc.vmedia_tool.clone(),
            ttl: cfg.bmc.vmedia_ttl,
            http_base: addrs.http_base.clone(),
            agent_url: addrs.https_base.clone(),
            ca_pin: tls.ca_pin.clone(),
            discovery_profile: cfg.boot.discovery_profile.clone(),
            profiles: cfg.boot.profiles.clone(),
            templates: templates.clone(),
            networks: cfg.provision.networks.clone(),
            subnets: cfg.dhcp.subnets.clone(),
            nonce_ttl_secs: cfg.agent.nonce_ttl.as_secs(),
        };
        let vmedia = Arc::new(
            crate::vmedia::VirtualMedia::new(vmedia, cmdb.clone(), power.clone())
                .context("the virtual-media directory")?,
        );
        engine.use_vmedia(vmedia.clone());
        let firmware = Arc::new(rackboot_control::firmware::Firmware::new(
            cmdb.clone(),
            power.clone(),
            cfg.firmware.clone(),
            cfg.provision.hardware_profiles.clone(),
            format!("{}/boot/files/firmware", addrs.http_base.trim_end_matches('/')),
        ));
        engine.use_firmware(firmware.clone());
        let auth = Arc::new(crate::api::auth::AuthState::new(cfg.auth.clone()).context("[auth]")?);
        Ok(Core {
            cfg: Arc::new(cfg),
            addrs: Arc::new(addrs),
            cmdb,
            metrics,
            hub,
            engine,
            sealer,
            tls,
            plugins,
            power,
            templates,
            webhooks,
            tang,
            vmedia,
            firmware,
            auth,
        })
    }
}

/// The proxy installers are pointed at: `provision.installer_proxy`, else the appliance's own
/// package proxy when it runs one.
fn installer_proxy(cfg: &Config, addrs: &Addresses) -> String {
    match addrs.server_ip {
        Some(ip) if cfg.provision.installer_proxy.is_empty() && cfg.proxy.enable => {
            crate::proxy::url(ip, cfg.proxy.port)
        }
        _ => cfg.provision.installer_proxy.clone(),
    }
}

impl Core {
    /// What the web listeners serve from, with the API's state over this core's handles.
    pub fn site(&self) -> crate::app::web::Site {
        let Core {
            cfg,
            addrs,
            cmdb,
            metrics,
            hub,
            engine,
            tls,
            sealer: _,
            plugins,
            power,
            templates,
            webhooks,
            tang,
            vmedia,
            firmware,
            auth,
        } = self.clone();
        let boot = crate::api::boot::BootState {
            renderer: templates,
            profiles: cfg.boot.profiles.clone(),
            discovery_profile: cfg.boot.discovery_profile.clone(),
            http_base: addrs.http_base.clone(),
            agent_url: addrs.https_base.clone(),
            http_base6: addrs.server_ip6.map(|ip| with_host(&addrs.http_base, ip)),
            agent_url6: addrs.server_ip6.map(|ip| with_host(&addrs.https_base, ip)),
            ca_pin: tls.ca_pin.clone(),
            ca_pem: tls.ca_pem.clone(),
            root: cfg.tftp.root.clone(),
            domain: cfg.dns.domain.clone(),
            answer_repos: cfg.provision.answer_repos.clone(),
            installer_proxy: installer_proxy(&cfg, &addrs),
            nonce_ttl_secs: cfg.agent.nonce_ttl.as_secs(),
        };
        let state = crate::api::ApiState::new(crate::api::ApiParts {
            cmdb,
            metrics,
            auth,
            boot: Some(Arc::new(boot)),
            hub,
            engine: Some(engine),
            power: Some(power),
            streams: Arc::new(tokio::sync::Semaphore::new(crate::api::MAX_STREAMS)),
            plugins: Some(plugins),
            webhooks: Some(webhooks),
            tang: Some(tang),
            vmedia: Some(vmedia),
            firmware: Some(firmware),
        });
        crate::app::web::Site { cfg, addrs, tls, state }
    }

    /// What the DHCP service takes.
    pub fn dhcp_handle(&self) -> crate::dhcp::Handle {
        let Core { cfg, addrs, cmdb, metrics, .. } = self.clone();
        crate::dhcp::Handle { cfg, addrs, cmdb, metrics }
    }

    /// What the DNS service takes.
    pub fn dns_handle(&self) -> crate::dns::Handle {
        let Core { cfg, addrs, cmdb, metrics, .. } = self.clone();
        crate::dns::Handle { cfg, addrs, cmdb, metrics }
    }

    /// What the TFTP service takes, with the names the layers above generate (GRUB's
    /// per-machine configs, Windows media paths).
    pub fn tftp_handle(&self) -> anyhow::Result<crate::tftp::Handle> {
        let windows = crate::windows::tftp::files(
            self.cmdb.clone(),
            self.cfg.clone(),
            self.templates.clone(),
            self.addrs.server_ip,
        );
        let generate = vec![crate::api::boot::grub::tftp_files(&self.site().state), windows];
        let Core { cfg, addrs, cmdb, metrics, .. } = self.clone();
        Ok(crate::tftp::Handle { cfg, addrs, cmdb, metrics, generate })
    }
}

/// The running services: one `JoinSet` under one token; the first to stop stops the rest.
pub struct Services {
    shutdown: CancellationToken,
    set: JoinSet<(&'static str, anyhow::Result<()>)>,
    /// The names of the services not yet stopped, so a slow shutdown can say which hold it.
    running: Vec<&'static str>,
}

/// How long a shutdown waits before it names the services still running (then again as often).
const SLOW_STOP: std::time::Duration = std::time::Duration::from_secs(1);

impl Services {
    /// An empty set whose services stop when `shutdown` is cancelled.
    pub fn new(shutdown: CancellationToken) -> Services {
        Services { shutdown, set: JoinSet::new(), running: Vec::new() }
    }

    /// Starts the service `name`.
    pub fn start(&mut self, name: &'static str, fut: impl Future<Output = anyhow::Result<()>> + Send + 'static) {
        info!(service = name, "starting");
        self.running.push(name);
        self.set.spawn(async move { (name, fut.await) });
    }

    /// Runs until `stop` resolves or a service stops; then cancels the token and waits for every
    /// service. Returns the error of the first service that stopped on its own.
    pub async fn wait(mut self, stop: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut first_err = None;
        tokio::select! {
            _ = stop => info!("shutting down"),
            Some(done) = self.set.join_next() => {
                first_err = Some(match done {
                    Ok((name, result)) => {
                        self.running.retain(|n| *n != name);
                        let err = result.err().unwrap_or_else(|| anyhow::anyhow!("stopped unexpectedly"));
                        err.context(format!("{name} service failed"))
                    }
                    Err(join) => anyhow::anyhow!("a service task panicked: {join}"),
                });
            }
        }
        self.shutdown.cancel();
        let started = std::time::Instant::now();
        loop {
            match tokio::time::timeout(SLOW_STOP, self.set.join_next()).await {
                Ok(None) => break,
                Ok(Some(Ok((name, result)))) => {
                    self.running.retain(|n| *n != name);
                    if let Err(error) = result {
                        warn!(service = name, %error, "service stopped with an error");
                    }
                }
                Ok(Some(Err(join))) => warn!(%join, "a service task panicked while stopping"),
                Err(_) => warn!(
                    still_running = ?self.running,
                    waited_ms = started.elapsed().as_millis() as u64,
                    "services slow to stop"
                ),
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

pub use rackboot_base::periodic::every;

/// `base` (`scheme://host[:port]`) with `ip` as its host.
fn with_host(base: &str, ip: std::net::Ipv6Addr) -> String {
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let host_port = rest.split('/').next().unwrap_or(rest);
    let port = host_port.rsplit_once(':').map(|(_, p)| p).filter(|p| p.chars().all(|c| c.is_ascii_digit()));
    match port {
        Some(p) => format!("{scheme}://[{ip}]:{p}"),
        None => format!("{scheme}://[{ip}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_failure_stops_the_rest() {
        let token = CancellationToken::new();
        let mut services = Services::new(token.clone());
        let t = token.clone();
        services.start("patient", async move {
            t.cancelled().await;
            Ok(())
        });
        services.start("broken", async { anyhow::bail!("socket gone") });
        let err = services.wait(std::future::pending()).await.unwrap_err();
        assert_eq!(format!("{err:#}"), "broken service failed: socket gone");
        assert!(token.is_cancelled());
    }

    #[tokio::test]
    async fn a_service_that_returns_early_is_a_failure_and_shutdown_is_not() {
        let mut services = Services::new(CancellationToken::new());
        services.start("quitter", async { Ok(()) });
        let err = services.wait(std::future::pending()).await.unwrap_err();
        assert!(format!("{err:#}").contains("quitter service failed: stopped unexpectedly"));

        let token = CancellationToken::new();
        let mut services = Services::new(token.clone());
        services.start("patient", async move {
            token.cancelled().await;
            Ok(())
        });
        services.wait(async {}).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_stop_names_the_services_still_running() {
        #[derive(Clone, Default)]
        struct Log(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Log {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let log = Log::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt().with_ansi(false).with_writer(move || writer.clone()).finish();
        let _guard = tracing::subscriber::set_default(subscriber);

        let token = CancellationToken::new();
        let mut services = Services::new(token.clone());
        let t = token.clone();
        services.start("quick", async move {
            t.cancelled().await;
            Ok(())
        });
        services.start("slow", async move {
            token.cancelled().await;
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            Ok(())
        });
        services.wait(async {}).await.unwrap();
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        let slow: Vec<&str> = text.lines().filter(|l| l.contains("services slow to stop")).collect();
        assert_eq!(slow.len(), 1, "one warning after the first second: {text}");
        assert!(slow[0].contains(r#"still_running=["slow"]"#), "{}", slow[0]);
    }

    #[tokio::test(start_paused = true)]
    async fn every_ticks_once_per_period_until_stopped() {
        let stop = CancellationToken::new();
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let (t, s) = (ticks.clone(), stop.clone());
        let run = tokio::spawn(every(std::time::Duration::from_secs(30), s, move || {
            let t = t.clone();
            async move {
                t.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }));
        tokio::time::sleep(std::time::Duration::from_secs(95)).await;
        assert_eq!(ticks.load(std::sync::atomic::Ordering::SeqCst), 3);
        stop.cancel();
        run.await.unwrap().unwrap();
    }
}
