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
    /// Agent jobs: run scripts or actions on machines, follow their output.
    Jobs {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: JobsCmd,
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
    /// Approve a machine held by agent.enroll = "approve".
    Approve { id: String },
}

#[derive(Subcommand)]
enum JobsCmd {
    /// Run a command on one machine (--machine) or on every machine with a tag (--tag), wait for
    /// it and print its output; exits with the job's exit code (one machine).
    Run {
        #[arg(long, conflicts_with = "tag", required_unless_present = "tag")]
        machine: Option<String>,
        #[arg(long)]
        tag: Option<String>,
        /// Interpreter for the script body.
        #[arg(long, default_value = "/bin/sh")]
        interpreter: String,
        #[arg(long)]
        timeout: Option<u64>,
        /// Queue it and return at once.
        #[arg(long)]
        no_wait: bool,
        /// The script body (joined with spaces), e.g. `-- uname -a`.
        #[arg(required = true, last = true)]
        script: Vec<String>,
    },
    /// A built-in action: refresh-inventory, reboot or power-off.
    Action {
        #[arg(long, conflicts_with = "tag", required_unless_present = "tag")]
        machine: Option<String>,
        #[arg(long)]
        tag: Option<String>,
        action: String,
    },
    /// List jobs (newest first).
    List {
        #[arg(long)]
        machine: Option<String>,
        #[arg(long)]
        state: Option<String>,
    },
    /// Show one job as JSON.
    Show { id: u64 },
    /// Print a job's output (--follow: as it arrives, until the job ends).
    Output {
        id: u64,
        #[arg(long, short)]
        follow: bool,
    },
    /// Cancel a queued or running job.
    Cancel { id: u64 },
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
        Command::Jobs { api, cmd } => jobs(api.client()?, cmd).await,
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
        MachinesCmd::Approve { id } => {
            c.ok(Method::POST, &format!("/machines/{}/approve", enc(&id)), None).await?;
            println!("approved machine {id}");
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

async fn jobs(c: ApiClient, cmd: JobsCmd) -> anyhow::Result<()> {
    let target = |machine: Option<String>, tag: Option<String>| match (machine, tag) {
        (Some(m), _) => json!({"machine": m}),
        (None, t) => json!({"tag": t}),
    };
    match cmd {
        JobsCmd::Run { machine, tag, interpreter, timeout, no_wait, script } => {
            let mut body = target(machine, tag);
            body["action"] = json!({"kind": "script", "interpreter": interpreter, "body": script.join(" ")});
            if let Some(t) = timeout {
                body["timeout_secs"] = json!(t);
            }
            let v = c.ok(Method::POST, "/jobs", Some(body)).await?;
            let ids: Vec<u64> = v["jobs"].as_array().into_iter().flatten().filter_map(|j| j["id"].as_u64()).collect();
            if no_wait || ids.len() != 1 {
                for j in v["jobs"].as_array().into_iter().flatten() {
                    println!("queued job {} on machine {}", j["id"], j["machine_id"]);
                }
                return Ok(());
            }
            let job = wait_job(&c, ids[0]).await?;
            let out = c.ok(Method::GET, &format!("/jobs/{}/output", ids[0]), None).await?;
            print!("{}", out["text"].as_str().unwrap_or_default());
            eprintln!(
                "job {}: {} (exit code {}, {} ms)",
                ids[0],
                s(&job["state"]),
                s(&job["exit_code"]),
                s(&job["duration_ms"])
            );
            if job["state"] != "succeeded" {
                std::process::exit(job["exit_code"].as_i64().map_or(1, |c| c.clamp(1, 255) as i32));
            }
        }
        JobsCmd::Action { machine, tag, action } => {
            let kind = action.replace('-', "_");
            let mut body = target(machine, tag);
            body["action"] = json!({"kind": kind});
            let v = c.ok(Method::POST, "/jobs", Some(body)).await?;
            for j in v["jobs"].as_array().into_iter().flatten() {
                println!("queued job {} on machine {}", j["id"], j["machine_id"]);
            }
        }
        JobsCmd::List { machine, state } => {
            let mut query = Vec::new();
            for (k, v) in [("machine", machine), ("state", state)] {
                if let Some(v) = v {
                    query.push(format!("{k}={}", enc(&v)));
                }
            }
            let v = c.ok(Method::GET, &format!("/jobs?{}", query.join("&")), None).await?;
            println!("{:<6} {:<8} {:<10} {:<8} {:<5} {:<10} ACTION", "ID", "MACHINE", "STATE", "ATTEMPT", "EXIT", "MS");
            for j in v["jobs"].as_array().into_iter().flatten() {
                let action = match j["action"]["kind"].as_str() {
                    Some("script") => j["action"]["body"].as_str().unwrap_or_default().chars().take(50).collect(),
                    other => other.unwrap_or_default().to_string(),
                };
                println!(
                    "{:<6} {:<8} {:<10} {:<8} {:<5} {:<10} {}",
                    s(&j["id"]),
                    s(&j["machine_id"]),
                    s(&j["state"]),
                    s(&j["attempt"]),
                    s(&j["exit_code"]),
                    s(&j["duration_ms"]),
                    action.replace('\n', "; ")
                );
            }
        }
        JobsCmd::Show { id } => {
            let v = c.ok(Method::GET, &format!("/jobs/{id}"), None).await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        JobsCmd::Output { id, follow } => {
            if follow {
                // Poll the stored output: simple and enough for a terminal (the API also
                // offers server-sent events for UIs).
                let mut printed = 0usize;
                loop {
                    let out = c.ok(Method::GET, &format!("/jobs/{id}/output"), None).await?;
                    let chunks = out["chunks"].as_array().cloned().unwrap_or_default();
                    for ch in chunks.iter().skip(printed) {
                        print!("{}", ch["data"].as_str().unwrap_or_default());
                    }
                    printed = chunks.len();
                    let state = out["job"]["state"].as_str().unwrap_or_default().to_string();
                    if state != "queued" && state != "running" {
                        eprintln!("job {id}: {state} (exit code {})", s(&out["job"]["exit_code"]));
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
            } else {
                let out = c.ok(Method::GET, &format!("/jobs/{id}/output"), None).await?;
                print!("{}", out["text"].as_str().unwrap_or_default());
            }
        }
        JobsCmd::Cancel { id } => {
            c.ok(Method::POST, &format!("/jobs/{id}/cancel"), None).await?;
            println!("cancelled job {id}");
        }
    }
    Ok(())
}

async fn wait_job(c: &ApiClient, id: u64) -> anyhow::Result<Value> {
    loop {
        let j = c.ok(Method::GET, &format!("/jobs/{id}"), None).await?;
        if !matches!(j["state"].as_str(), Some("queued" | "running")) {
            return Ok(j);
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
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
