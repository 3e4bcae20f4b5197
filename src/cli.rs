//! Command-line interface: `serve`, and admin subcommands that speak to the REST API.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::config::Config;
use serde_json::{json, Value};

#[derive(Parser)]
#[command(name = "rackboot", version, about = "Network-boot appliance: DHCP, TFTP, HTTP and DNS in one process")]
pub struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the appliance (with no --config: the embedded safe default, see rackboot.example.toml).
    Serve {
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Print the embedded default configuration (every key documented).
    DefaultConfig,
    /// Machines in the CMDB.
    Machines {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: MachinesCmd,
    },
    /// DHCP leases.
    Leases {
        #[command(flatten)]
        api: ApiArgs,
    },
}

#[derive(Args)]
struct ApiArgs {
    /// Base URL of the rackboot API.
    #[arg(long, env = "RACKBOOT_API", default_value = "http://127.0.0.1:80", global = true)]
    api: String,
    /// Bearer token; default: read from --token-file.
    #[arg(long, env = "RACKBOOT_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    #[arg(long, default_value = "/var/lib/rackboot/admin.token", global = true)]
    token_file: PathBuf,
}

impl ApiArgs {
    fn client(&self) -> anyhow::Result<ApiClient> {
        let token = match &self.token {
            Some(t) => t.clone(),
            None => std::fs::read_to_string(&self.token_file)
                .with_context(|| format!("no --token given and {} is not readable", self.token_file.display()))?
                .trim()
                .to_string(),
        };
        ApiClient::new(&self.api, token)
    }
}

#[derive(Subcommand)]
enum MachinesCmd {
    /// List machines (optionally searched and filtered).
    List {
        /// Substring of hostname, MAC, serial, IP, vendor, model or tag.
        #[arg(long, short)]
        q: Option<String>,
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        tag: Option<String>,
    },
    /// Register a machine by MAC.
    Add {
        #[arg(required = true)]
        macs: Vec<String>,
        #[arg(long)]
        hostname: Option<String>,
        #[arg(long)]
        ip: Option<String>,
        #[arg(long)]
        serial: Option<String>,
        #[arg(long = "tag")]
        tags: Vec<String>,
    },
    /// Show one machine (by id or MAC) as JSON.
    Show { id: String },
    /// Delete a machine (by id or MAC).
    Rm { id: String },
    /// Show a machine's timeline.
    Events { id: String },
}

/// Runs the chosen subcommand.
pub async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.cmd {
        Command::Serve { config } => {
            let cfg = Config::load(config.as_deref())?;
            init_tracing(cfg.log_json);
            rackboot::app::run(cfg, rackboot::app::shutdown_signal()).await
        }
        Command::DefaultConfig => {
            print!("{}", rackboot::config::EMBEDDED_DEFAULT);
            Ok(())
        }
        Command::Machines { api, cmd } => machines(api.client()?, cmd).await,
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

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn machines(c: ApiClient, cmd: MachinesCmd) -> anyhow::Result<()> {
    match cmd {
        MachinesCmd::List { q, state, tag } => {
            let mut query = Vec::new();
            for (k, v) in [("q", q), ("state", state), ("tag", tag)] {
                if let Some(v) = v {
                    query.push(format!("{k}={}", enc(&v)));
                }
            }
            let v = c.ok(Method::GET, &format!("/machines?{}", query.join("&")), None).await?;
            println!("{:<5} {:<18} {:<20} {:<16} {:<11} TAGS", "ID", "MAC", "HOSTNAME", "RESERVED_IP", "STATE");
            for m in v["machines"].as_array().into_iter().flatten() {
                let tags: Vec<String> = m["tags"].as_array().into_iter().flatten().map(s).collect();
                println!(
                    "{:<5} {:<18} {:<20} {:<16} {:<11} {}",
                    s(&m["id"]),
                    s(&m["macs"][0]),
                    s(&m["hostname"]),
                    s(&m["reserved_ip"]),
                    s(&m["state"]),
                    tags.join(",")
                );
            }
            println!("{} machine(s)", v["total"]);
        }
        MachinesCmd::Add { macs, hostname, ip, serial, tags } => {
            let body = json!({"macs": macs, "hostname": hostname, "reserved_ip": ip, "serial": serial, "tags": tags});
            let v = c.ok(Method::POST, "/machines", Some(body)).await?;
            println!("added machine {}", v["id"]);
        }
        MachinesCmd::Show { id } => {
            let v = c.ok(Method::GET, &format!("/machines/{}", enc(&id)), None).await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        MachinesCmd::Rm { id } => {
            c.ok(Method::DELETE, &format!("/machines/{}", enc(&id)), None).await?;
            println!("deleted machine {id}");
        }
        MachinesCmd::Events { id } => {
            let v = c.ok(Method::GET, &format!("/machines/{}/events", enc(&id)), None).await?;
            for e in v["events"].as_array().into_iter().flatten() {
                println!("{:>6} {} {:<18} {}", s(&e["seq"]), s(&e["at_ms"]), s(&e["kind"]), e["detail"]);
            }
        }
    }
    Ok(())
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
