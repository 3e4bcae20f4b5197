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
    /// Provisioning tasks: install machines from an image or an installer, see their progress.
    Tasks {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: TasksCmd,
    },
    /// DHCP leases.
    Leases {
        #[command(flatten)]
        api: ApiArgs,
    },
    /// Print timeline events live as they happen (DHCP, TFTP, boot, agent, jobs, provisioning,
    /// state changes); reconnects without losing or repeating an event.
    #[command(
        after_help = "Examples:\n  rackboot watch --all\n  rackboot watch 52:54:00:12:34:56\n  rackboot watch --all --kind dhcp.ack,provision.step\n  rackboot watch --all --after 1200     # replay what came after event 1200, then go on live"
    )]
    Watch {
        #[command(flatten)]
        api: ApiArgs,
        /// A machine id or MAC.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        machine: Option<String>,
        /// Every machine.
        #[arg(long)]
        all: bool,
        /// Only these event kinds (comma-separated, e.g. dhcp.ack,machine.state).
        #[arg(long)]
        kind: Option<String>,
        /// Only events of machines in this state (e.g. installing).
        #[arg(long)]
        state: Option<String>,
        /// Replay stored events after this sequence number first.
        #[arg(long)]
        after: Option<u64>,
        /// Exit after this many events.
        #[arg(long)]
        count: Option<usize>,
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

#[derive(Args)]
struct CreateTask {
    #[arg(long = "mac")]
    macs: Vec<String>,
    #[arg(long = "serial")]
    serials: Vec<String>,
    #[arg(long)]
    tag: Option<String>,
    /// The next N machines whose BootOS agent calls in.
    #[arg(long)]
    next: Option<u32>,
    /// Image file name in the images directory.
    #[arg(long, required_unless_present = "installer", conflicts_with = "installer")]
    image: Option<String>,
    /// Or: a boot profile with an answer file (kickstart, preseed, autoinstall) to install with.
    #[arg(long)]
    installer: Option<String>,
    #[arg(long)]
    hardware_profile: Option<String>,
    /// e.g. node-{n:02}
    #[arg(long)]
    hostname: Option<String>,
    /// FIRST-LAST
    #[arg(long)]
    ip_pool: Option<String>,
    #[arg(long, default_value = "auto")]
    disk: String,
    #[arg(long = "ssh-key")]
    ssh_keys: Vec<String>,
    #[arg(long = "post-install")]
    post_install: Vec<String>,
    #[arg(long)]
    concurrency: Option<u32>,
    #[arg(long)]
    reinstall: bool,
}

#[derive(Subcommand)]
enum TasksCmd {
    /// Provision machines (by --mac, --serial, --tag, or --next N) from an image or an installer.
    Create(Box<CreateTask>),
    /// List tasks.
    List,
    /// Show a task and its runs (step, progress, error).
    Show { id: u64 },
    /// Cancel a task's unfinished runs.
    Cancel { id: u64 },
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
        Command::Tasks { api, cmd } => tasks(api.client()?, cmd).await,
        Command::Watch { api, machine, all: _, kind, state, after, count } => {
            let w = rackboot::watch::Watch { machine, kind, state, after, count };
            rackboot::watch::run(&api.client()?, w, &mut std::io::stdout()).await
        }
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
            let mut v = c.ok(Method::GET, &format!("/machines?{}", query.join("&")), None).await?;
            let mut all: Vec<Value> = v["machines"].as_array().cloned().unwrap_or_default();
            while let Some(cursor) = v["next_cursor"].as_str().map(str::to_string) {
                v = c.ok(Method::GET, &format!("/machines?{}&cursor={cursor}", query.join("&")), None).await?;
                all.extend(v["machines"].as_array().cloned().unwrap_or_default());
            }
            println!("{:<5} {:<18} {:<20} {:<16} {:<11} TAGS", "ID", "MAC", "HOSTNAME", "RESERVED_IP", "STATE");
            for m in &all {
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

async fn tasks(c: ApiClient, cmd: TasksCmd) -> anyhow::Result<()> {
    let print_runs = |v: &Value| {
        println!(
            "{:<5} {:<8} {:<14} {:<16} {:<12} {:<18} {:>4}%  ERROR",
            "RUN", "MACHINE", "HOSTNAME", "IP", "STATE", "STEP", ""
        );
        for r in v["runs"].as_array().into_iter().flatten() {
            let step = match (r["step"]["step"].as_str(), r["step"]["index"].as_u64()) {
                (Some(s), Some(i)) => format!("{s}[{i}]"),
                (Some(s), None) => s.to_string(),
                _ => "-".into(),
            };
            println!(
                "{:<5} {:<8} {:<14} {:<16} {:<12} {:<18} {:>4}%  {}",
                s(&r["id"]),
                s(&r["machine_id"]),
                s(&r["hostname"]),
                s(&r["ip"]),
                s(&r["state"]),
                step,
                s(&r["progress"]),
                s(&r["error"])
            );
        }
    };
    let os_of = |spec: &Value| match spec["installer"].as_str() {
        Some(p) => format!("installer {p}"),
        None => format!("image {}", s(&spec["image"])),
    };
    match cmd {
        TasksCmd::Create(args) => {
            let CreateTask {
                macs,
                serials,
                tag,
                next,
                image,
                installer,
                hardware_profile,
                hostname,
                ip_pool,
                disk,
                ssh_keys,
                post_install,
                concurrency,
                reinstall,
            } = *args;
            let select = match (macs.is_empty(), serials.is_empty(), tag, next) {
                (false, true, None, None) => json!({"macs": macs}),
                (true, false, None, None) => json!({"serials": serials}),
                (true, true, Some(t), None) => json!({"tag": t}),
                (true, true, None, Some(n)) => json!({"next": n}),
                _ => anyhow::bail!("choose the machines with one of --mac, --serial, --tag or --next"),
            };
            let mut body = json!({"select": select, "disk": disk, "ssh_keys": ssh_keys,
                "post_install": post_install, "reinstall": reinstall});
            for (k, v) in [
                ("image", image),
                ("installer", installer),
                ("hardware_profile", hardware_profile),
                ("hostname_pattern", hostname),
                ("ip_pool", ip_pool),
            ] {
                if let Some(v) = v {
                    body[k] = json!(v);
                }
            }
            if let Some(n) = concurrency {
                body["concurrency"] = json!(n);
            }
            let v = c.ok(Method::POST, "/tasks", Some(body)).await?;
            println!("task {} created with {} run(s)", v["task"]["id"], v["runs"].as_array().map_or(0, Vec::len));
            print_runs(&v);
        }
        TasksCmd::List => {
            let v = c.ok(Method::GET, "/tasks", None).await?;
            println!("{:<5} {:<10} {:<5} OS", "ID", "STATE", "RUNS");
            for t in v["tasks"].as_array().into_iter().flatten() {
                let runs = t["runs"].as_array().map_or(0, Vec::len);
                println!("{:<5} {:<10} {:<5} {}", s(&t["id"]), s(&t["state"]), runs, os_of(&t["spec"]));
            }
        }
        TasksCmd::Show { id } => {
            let v = c.ok(Method::GET, &format!("/tasks/{id}"), None).await?;
            println!("task {id}: {} ({})", s(&v["task"]["state"]), os_of(&v["task"]["spec"]));
            print_runs(&v);
        }
        TasksCmd::Cancel { id } => {
            let v = c.ok(Method::POST, &format!("/tasks/{id}/cancel"), None).await?;
            println!("task {id} cancelled");
            print_runs(&v);
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
