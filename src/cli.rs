//! Command-line interface: `serve`, and admin subcommands that speak to the REST API.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use hyper::Method;
use rackboot::client::ApiClient;
use rackboot::config::Config;
use serde_json::{json, Value};

const ABOUT: &str = "Network-boot appliance: DHCP, TFTP, HTTP and DNS in one process";

const LONG_ABOUT: &str = "\
Network-boot appliance: DHCP, TFTP, HTTP and DNS in one process.

`rackboot serve` runs the appliance: it answers PXE clients (proxy DHCP by default, beside your
DHCP server), serves iPXE and BootOS, keeps every machine it hears from in its CMDB and
provisions them. The other subcommands are its admin client: they speak to the REST API
(--api, default http://127.0.0.1:80) with the admin token from /var/lib/rackboot/admin.token.";

const EXAMPLES: &str = "\
Getting started (as root):
  rackboot default-config > /etc/rackboot/rackboot.toml   # every key, documented, with its default
  rackboot assets install --config /etc/rackboot/rackboot.toml   # iPXE + BootOS into the boot dir
  rackboot serve --config /etc/rackboot/rackboot.toml
  curl http://127.0.0.1/healthz                            # ok, or what is missing and the fix
  rackboot machines list

`rackboot <command> --help` explains each command.";

#[derive(Parser)]
#[command(name = "rackboot", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the appliance: DHCP, TFTP, HTTP (API, /boot, /healthz, /metrics), DNS, provisioning.
    ///
    /// With no --config it runs the embedded default (`rackboot default-config` prints it): DHCP in
    /// proxy mode, which only answers PXE clients and never hands out an address, so it is safe to
    /// start on any network. It needs root or CAP_NET_BIND_SERVICE, CAP_NET_RAW and CAP_NET_ADMIN
    /// (ports 67, 69, 80 and 53, SO_BINDTODEVICE, IPv6 router advertisements). Logs go to stderr;
    /// SIGINT or SIGTERM stop it cleanly. Boot assets missing from the boot directory are logged at
    /// start and reported by /healthz (see `rackboot assets`).
    #[command(after_help = "\
Examples:
  rackboot serve                                          # embedded default: proxy DHCP
  rackboot serve --config /etc/rackboot/rackboot.toml
  RUST_LOG=rackboot=debug rackboot serve -c lab.toml      # also log dropped packets")]
    Serve {
        /// TOML config file (every key optional; unknown keys are refused). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Print the embedded default configuration (every key documented, with its default).
    #[command(after_help = "Example:\n  rackboot default-config > /etc/rackboot/rackboot.toml")]
    DefaultConfig,
    /// Boot assets: check or install the iPXE binaries and BootOS the config needs.
    ///
    /// PXE clients are handed iPXE (undionly.kpxe for BIOS, ipxe.efi or snponly.efi for UEFI) and
    /// then the discovery profile's kernel and initrd (BootOS, by default bootos/vmlinuz and
    /// bootos/initrd.img). All of them must be in the boot directory (tftp.root, default
    /// <data_dir>/boot); `rackboot serve` warns about missing ones and /healthz answers 503
    /// naming them until they are there.
    Assets {
        #[command(subcommand)]
        cmd: AssetsCmd,
    },
    /// Machines in the CMDB: list, add, show, remove, timeline, approve.
    Machines {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: MachinesCmd,
    },
    /// Agent jobs: run scripts or actions on machines, follow their output.
    #[command(after_help = "\
Examples:
  rackboot jobs run --machine 52:54:00:12:34:56 -- uname -a
  rackboot jobs run --tag rack1 --no-wait -- 'mdadm --examine --scan'
  rackboot jobs action --machine node01 reboot
  rackboot jobs output 7 --follow")]
    Jobs {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: JobsCmd,
    },
    /// Provisioning tasks: install machines from an image or an installer, see their progress.
    #[command(after_help = "\
Examples:
  rackboot tasks create --mac 52:54:00:12:34:56 --image lab.img --hostname 'node-{n:02}' \\
      --ip-pool 198.18.0.60-198.18.0.69 --ssh-key \"$(cat ~/.ssh/id_ed25519.pub)\"
  rackboot tasks create --next 10 --installer debian12 --hostname 'r7-{n:02}'
  rackboot tasks show 1")]
    Tasks {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: TasksCmd,
    },
    /// DHCP leases (address, MAC, state, expiry).
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

#[derive(Subcommand)]
enum AssetsCmd {
    /// List the boot assets the config needs and whether each is present; exits 1 if any is missing.
    Check {
        /// The config `rackboot serve` runs with. Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Copy the iPXE binaries and a BootOS build into the config's boot directory.
    ///
    /// iPXE comes from Debian's ipxe package (--ipxe-dir, /usr/lib/ipxe), BootOS from a build
    /// directory with vmlinuz and initrd.img (--bootos; the rackboot .deb installs one in
    /// /usr/share/rackboot/bootos when it was built with BootOS; from the source tree:
    /// bootos/build.sh --kernel generic DIR). Every source is checked first: if one is missing
    /// nothing is copied and the message names the package or command that provides it. Each file
    /// is written to a temporary name, synced, read back and compared (SHA-256) and then renamed
    /// into place, so a running appliance never serves a half-written file. Files already
    /// identical are left alone; running it again is safe.
    #[command(after_help = "\
Examples:
  apt-get install ipxe
  rackboot assets install --config /etc/rackboot/rackboot.toml
  bootos/build.sh --kernel generic /tmp/bootos && rackboot assets install --bootos /tmp/bootos")]
    Install {
        /// The config `rackboot serve` runs with (its boot directory and file names). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// A BootOS build: vmlinuz, initrd.img (and rackboot-agent, rackboot-agent.service if present).
        #[arg(long, value_name = "DIR", default_value = rackboot::assets::BOOTOS_DIR)]
        bootos: PathBuf,
        /// Where the iPXE binaries are (undionly.kpxe, ipxe.efi, snponly.efi).
        #[arg(long, value_name = "DIR", default_value = rackboot::assets::IPXE_DIR)]
        ipxe_dir: PathBuf,
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
    /// File holding the admin token (`rackboot serve` writes it into its data_dir on first start).
    #[arg(long, value_name = "FILE", default_value = "/var/lib/rackboot/admin.token", global = true)]
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
        /// Only machines in this state: discovered, ready, queued, configuring, installing,
        /// installed, failed, ...
        #[arg(long)]
        state: Option<String>,
        /// Only machines with this tag.
        #[arg(long)]
        tag: Option<String>,
    },
    /// Register a machine by MAC (one machine with several NICs: several MACs).
    #[command(
        after_help = "Example:\n  rackboot machines add 52:54:00:12:34:56 --hostname node01 --ip 198.18.0.50 --tag rack1"
    )]
    Add {
        /// Its MAC address(es), e.g. 52:54:00:12:34:56.
        #[arg(required = true)]
        macs: Vec<String>,
        /// Hostname (published in DNS as <hostname>.<dns.domain>).
        #[arg(long)]
        hostname: Option<String>,
        /// Reserved IPv4 address (full DHCP mode hands it to this machine only).
        #[arg(long)]
        ip: Option<String>,
        /// Serial number (tasks can select machines by it).
        #[arg(long)]
        serial: Option<String>,
        /// A tag (repeatable), e.g. rack1.
        #[arg(long = "tag")]
        tags: Vec<String>,
    },
    /// Show one machine (by id or MAC) as JSON, inventory included.
    Show {
        /// Machine id or MAC.
        id: String,
    },
    /// Delete a machine (by id or MAC).
    Rm {
        /// Machine id or MAC.
        id: String,
    },
    /// Show a machine's timeline: DHCP, TFTP, HTTP, agent and provisioning events.
    Events {
        /// Machine id or MAC.
        id: String,
    },
    /// Approve a machine held by agent.enroll = "approve".
    Approve {
        /// Machine id or MAC.
        id: String,
    },
}

#[derive(Args)]
struct CreateTask {
    /// A machine by MAC (repeatable); unknown MACs are registered and wait until they power on.
    #[arg(long = "mac")]
    macs: Vec<String>,
    /// A machine by serial number (repeatable).
    #[arg(long = "serial")]
    serials: Vec<String>,
    /// Every machine with this tag.
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
    /// A [[provision.hardware_profiles]] entry: check vendor/model, run its configure scripts.
    #[arg(long)]
    hardware_profile: Option<String>,
    /// Hostname pattern: {n}, {n:02} (the run's number) and {mac}, e.g. node-{n:02}.
    #[arg(long)]
    hostname: Option<String>,
    /// Addresses to reserve for the machines, FIRST-LAST, e.g. 198.18.0.60-198.18.0.69.
    #[arg(long)]
    ip_pool: Option<String>,
    /// Target disk, e.g. /dev/sda; auto: the largest.
    #[arg(long, default_value = "auto")]
    disk: String,
    /// An SSH public key for root on the installed system (repeatable).
    #[arg(long = "ssh-key")]
    ssh_keys: Vec<String>,
    /// A script from provision.postinstall_dir to run on the installed system (repeatable).
    #[arg(long = "post-install")]
    post_install: Vec<String>,
    /// Machines installed at once (default: all).
    #[arg(long)]
    concurrency: Option<u32>,
    /// Also take machines that are installed already (their agent reboots them into BootOS).
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
    Show {
        /// Task id.
        id: u64,
    },
    /// Cancel a task's unfinished runs.
    Cancel {
        /// Task id.
        id: u64,
    },
}

#[derive(Subcommand)]
enum JobsCmd {
    /// Run a command on one machine (--machine) or on every machine with a tag (--tag), wait for
    /// it and print its output; exits with the job's exit code (one machine).
    Run {
        /// Machine id or MAC.
        #[arg(long, conflicts_with = "tag", required_unless_present = "tag")]
        machine: Option<String>,
        /// Every machine with this tag (one job each).
        #[arg(long)]
        tag: Option<String>,
        /// Interpreter for the script body.
        #[arg(long, default_value = "/bin/sh")]
        interpreter: String,
        /// Seconds before the job is killed and marked timed_out (default: agent.job_timeout_secs).
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
        /// Machine id or MAC.
        #[arg(long, conflicts_with = "tag", required_unless_present = "tag")]
        machine: Option<String>,
        /// Every machine with this tag.
        #[arg(long)]
        tag: Option<String>,
        /// refresh-inventory, reboot or power-off.
        action: String,
    },
    /// List jobs (newest first).
    List {
        /// Only this machine's jobs (id or MAC).
        #[arg(long)]
        machine: Option<String>,
        /// Only jobs in this state: queued, running, succeeded, failed, timed_out, cancelled, error.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show one job as JSON.
    Show {
        /// Job id.
        id: u64,
    },
    /// Print a job's output (--follow: as it arrives, until the job ends).
    Output {
        /// Job id.
        id: u64,
        /// Keep printing until the job ends.
        #[arg(long, short)]
        follow: bool,
    },
    /// Cancel a queued or running job.
    Cancel {
        /// Job id.
        id: u64,
    },
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
        Command::Assets { cmd } => assets(cmd),
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

fn assets(cmd: AssetsCmd) -> anyhow::Result<()> {
    use rackboot::assets;
    match cmd {
        AssetsCmd::Check { config } => {
            let cfg = Config::load(config.as_deref())?;
            let needed = assets::needed(&cfg);
            let gaps = assets::missing(&cfg.tftp.root, &needed);
            println!("boot directory {}", cfg.tftp.root.display());
            for a in &needed {
                let state = if gaps.iter().any(|m| m.asset == *a) { "MISSING" } else { "ok" };
                println!("  {state:<8}{:<24}{}", a.name, a.purpose);
            }
            if !gaps.is_empty() {
                print!("{}", assets::report(&gaps));
                std::process::exit(1);
            }
        }
        AssetsCmd::Install { config, bootos, ipxe_dir } => {
            let cfg = Config::load(config.as_deref())?;
            let src = assets::install::Sources { ipxe_dir, bootos_dir: bootos };
            println!("installing boot assets into {}", cfg.tftp.root.display());
            for i in assets::install::install(&cfg, &src)? {
                let what = if i.unchanged { "unchanged" } else { "installed" };
                println!(
                    "  {what:<10}{} ({} bytes, sha256 {}) from {}",
                    i.to.display(),
                    i.bytes,
                    &i.sha256[..16],
                    i.from.display()
                );
            }
        }
    }
    Ok(())
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
