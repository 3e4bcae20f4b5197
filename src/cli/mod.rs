//! Command-line interface: `serve`, and admin subcommands that speak to the REST API.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::config::Config;
use serde_json::{json, Value};

mod api;
mod assets;
mod backup;
mod bmc;
mod ca;
mod commands;
mod firmware;
mod inventory;
mod jobs;
mod machines;
mod plugins;
mod racks;
mod reference;
mod secureboot;
mod store;
mod tang;
mod tasks;
mod templates;
mod text;
mod userdata;
mod users;
mod windows;

use api::api;
use assets::assets;
use bmc::{bmc, power};
use ca::ca;
use commands::Command;
use firmware::firmware;
use inventory::inventory;
use jobs::jobs;
use machines::machines;
use plugins::plugins;
use racks::racks;
use tang::tang;
use tasks::tasks;
use templates::templates;
use text::{enc, s};
use userdata::user_data;
use users::{audit, tokens, users};
use windows::windows;

const ABOUT: &str = "Network-boot appliance: DHCP, TFTP, HTTP and DNS in one process";

const LONG_ABOUT: &str = "\
Network-boot appliance: DHCP, TFTP, HTTP and DNS in one process.

`rackboot serve` runs the appliance: it answers PXE clients (proxy DHCP by default, beside your
DHCP server), serves iPXE and BootOS, keeps every machine it hears from in its CMDB and
provisions them. The other subcommands are its admin client: they speak to the REST API
(--api, default https://127.0.0.1) over TLS, trusting the appliance's CA (--ca, default
/var/lib/rackboot/tls/ca.pem), with an API token, by default the admin's from
/var/lib/rackboot/admin.token; the first admin's password is in /var/lib/rackboot/admin.password.";

const EXAMPLES: &str = "\
Getting started (as root):
  rackboot default-config > /etc/rackboot/rackboot.toml   # every key, documented, with its default
  rackboot assets install --config /etc/rackboot/rackboot.toml   # iPXE + BootOS into the boot dir
  rackboot serve --config /etc/rackboot/rackboot.toml
  curl http://127.0.0.1/healthz                            # ok, or what is missing and the fix
  rackboot ca show                                        # the CA fingerprint nodes pin
  rackboot machines list

`rackboot <command> --help` explains each command.";

#[derive(Parser)]
#[command(name = "rackboot", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

/// Runs the chosen subcommand.
pub async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Command::Serve { config, listening_file } => {
            let cfg = Config::load(config.as_deref())?;
            init_tracing(cfg.log_json);
            let running = rackboot::app::start(cfg).await?;
            if let Some(file) = listening_file {
                running.write_listening(&file)?;
            }
            running.wait(rackboot::app::shutdown_signal()).await
        }
        Command::Reference { page } => {
            print!("{}", if page == "cli" { reference::cli() } else { reference::events() });
            Ok(())
        }
        Command::Completions { shell } => {
            print!("{}", reference::completions(shell));
            Ok(())
        }
        Command::Man { dir } => {
            let pages = reference::man_pages(&dir)?;
            eprintln!("rackboot: {pages} man pages written to {}", dir.display());
            Ok(())
        }
        Command::DefaultConfig => {
            print!("{}", rackboot::config::EMBEDDED_DEFAULT);
            Ok(())
        }
        Command::Assets { cmd } => assets(cmd),
        Command::Windows { cmd } => windows(cmd),
        Command::Ca { cmd } => ca(cmd),
        Command::Secureboot { cmd } => secureboot::secureboot(cmd),
        Command::Machines { api, cmd } => machines(api.client()?, cmd).await,
        Command::Racks { api, cmd } => racks(api.client()?, *cmd).await,
        Command::Templates { api, cmd } => templates(api.client()?, cmd).await,
        Command::Plugins { api, cmd } => plugins(api.client()?, cmd).await,
        Command::Bmc { api, cmd } => bmc(api.client()?, cmd).await,
        Command::Firmware { api, cmd } => firmware(api.client()?, cmd).await,
        Command::Power { api, args } => power(api.client()?, args).await,
        Command::Jobs { api, cmd } => jobs(api.client()?, cmd).await,
        Command::Tasks { api, cmd } => tasks(api.client()?, cmd).await,
        Command::Login { api, user: Some(user), out, ttl, sso: false } => {
            users::login(api.anonymous()?, &user, &out, ttl).await
        }
        Command::Login { api, out, .. } => users::login_sso(api.anonymous()?, &out).await,
        Command::Users { api, cmd } => users(api.client()?, cmd).await,
        Command::Tokens { api, cmd } => tokens(api.client()?, cmd).await,
        Command::Audit { api, filter } => audit(api.client()?, filter).await,
        Command::Tang { api, cmd } => tang(api.client()?, cmd).await,
        Command::Backup { api, file } => backup::backup(api.client()?, &file).await,
        Command::Restore { config, file } => backup::restore(config.as_deref(), &file),
        Command::Store { cmd } => store::store(cmd).await,
        Command::Watch { api, machine, all: _, kind, state, after, count } => {
            let w = rackboot::watch::Watch { machine, kind, state, after, count };
            rackboot::watch::run(&api.client()?, w, &mut std::io::stdout()).await
        }
        Command::Api { api: a, call } => api(a.client()?, call).await,
        Command::Inventory { api, args } => inventory(api.client()?, args).await,
        Command::Leases { api } => {
            let v = api.client()?.ok(Method::GET, "/leases", None).await?;
            for l in v["leases"].as_array().into_iter().flatten() {
                println!(
                    "{:<16} {}  {:<8} active={} expires_at={}",
                    s(&l["ip"]),
                    s(&l["mac"]),
                    s(&l["state"]),
                    l["active"],
                    l["expires_at"]
                );
            }
            Ok(())
        }
    }
}

fn init_tracing(json: bool) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}
