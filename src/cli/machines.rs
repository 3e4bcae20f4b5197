//! `rackboot machines`: the CMDB's machines through the REST API.

use super::*;

#[derive(Subcommand)]
pub(super) enum MachinesCmd {
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
        /// Only machines in this resource pool.
        #[arg(long)]
        pool: Option<String>,
    },
    /// Move a machine (by id or MAC) to another resource pool (admin); placing it in a rack
    /// later moves it to the rack's.
    #[command(after_help = "Example:\n  rackboot machines pool 52:54:00:12:34:56 team-a")]
    Pool {
        /// Machine id or MAC.
        id: String,
        /// The pool (a lowercase DNS label).
        pool: String,
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
    /// Release a machine: it boots BootOS, its disks are erased as asked, and it goes back to
    /// the pool (ready). Erasing asks you to type the machine's id or MAC unless --yes is given.
    #[command(after_help = "Example:\n  rackboot machines release 7 --erase quick")]
    Release {
        /// Machine id or MAC.
        id: String,
        /// none, quick (partition tables and signatures), zero (every byte) or secure (the
        /// device's own erase: NVMe format or ATA security erase).
        #[arg(long)]
        erase: rackboot_agent::wire::EraseMode,
        /// Keep its address reservation.
        #[arg(long)]
        keep_reservation: bool,
        /// Do not ask before erasing.
        #[arg(long)]
        yes: bool,
    },
    /// Boot an installed machine into BootOS without touching its disks, for jobs.
    Rescue {
        /// Machine id or MAC.
        id: String,
        /// Mount its file systems read-only under /mnt/rescue/<device>.
        #[arg(long)]
        mount: bool,
    },
    /// Run a test profile's tests on a machine in BootOS (ready, discovered or failed); it is
    /// ready after, or failed with the test named.
    #[command(
        after_help = "Example:\n  rackboot machines commission 7 --profile burn-in && rackboot machines tests 7"
    )]
    Commission {
        /// Machine id or MAC.
        id: String,
        /// A test profile of the config ([[provision.test_profiles]]).
        #[arg(long)]
        profile: String,
    },
    /// Show a machine's commissioning runs and their results.
    Tests {
        /// Machine id or MAC.
        id: String,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Return a rescued machine to its disk.
    Return {
        /// Machine id or MAC.
        id: String,
    },
    /// Take a released machine out of every pool.
    Retire {
        /// Machine id or MAC.
        id: String,
    },
    /// Bring a retired machine back (ready).
    Unretire {
        /// Machine id or MAC.
        id: String,
    },
    /// Show a machine's cloud-init user-data, or set it from a file, or remove it (its task's,
    /// else its rack's applies).
    UserData {
        /// Machine id or MAC.
        id: String,
        /// Set it from this file ('-': stdin).
        #[arg(long, conflicts_with = "clear")]
        set: Option<std::path::PathBuf>,
        /// Remove it.
        #[arg(long)]
        clear: bool,
    },
    /// Show a machine's installed network (ports, bonds, VLANs, addresses, where the spec comes
    /// from), or set it from a JSON spec, or clear it back to its rack's default.
    #[command(
        after_help = "Example spec (docs/network.md):\n  {\"ethernets\": [{\"name\": \"nic0\", \"port\": 0}, {\"name\": \"nic1\", \"port\": 1}],\n   \"bonds\": [{\"name\": \"bond0\", \"members\": [\"nic0\", \"nic1\"], \"mode\": \"active-backup\", \"dhcp\": true}],\n   \"vlans\": [{\"id\": 10, \"link\": \"bond0\", \"network\": \"prod\", \"address\": \"10.20.0.120\"}]}"
    )]
    Network {
        /// Machine id or MAC.
        id: String,
        /// Set the spec from this JSON file ('-': stdin).
        #[arg(long, conflicts_with = "clear")]
        set: Option<std::path::PathBuf>,
        /// Remove the machine's own spec (its rack's default, else DHCP, applies).
        #[arg(long)]
        clear: bool,
        /// Print the answer as JSON.
        #[arg(long)]
        json: bool,
    },
}
pub(super) async fn machines(c: ApiClient, cmd: MachinesCmd) -> anyhow::Result<()> {
    match cmd {
        MachinesCmd::List { q, state, tag, pool } => {
            let mut query = Vec::new();
            for (k, v) in [("q", q), ("state", state), ("tag", tag), ("pool", pool)] {
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
        MachinesCmd::Pool { id, pool } => {
            let v = c.ok(Method::PUT, &format!("/machines/{}/pool", enc(&id)), Some(json!({"pool": pool}))).await?;
            println!("machine {} is in pool {}", s(&v["id"]), s(&v["pool"]));
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
        MachinesCmd::Release { id, erase, keep_reservation, yes } => {
            if erase != rackboot_agent::wire::EraseMode::None && !yes {
                confirm_erase(&id, erase.as_str())?;
            }
            let body = json!({"erase": erase, "keep_reservation": keep_reservation});
            let v = c.ok(Method::POST, &format!("/machines/{}/release", enc(&id)), Some(body)).await?;
            println!("releasing machine {id} (erase: {}): task {}", erase.as_str(), v["id"]);
        }
        MachinesCmd::Rescue { id, mount } => {
            let v =
                c.ok(Method::POST, &format!("/machines/{}/rescue", enc(&id)), Some(json!({"mount": mount}))).await?;
            println!("rescuing machine {id}: task {}", v["id"]);
        }
        MachinesCmd::Commission { id, profile } => {
            let body = json!({"profile": profile});
            let v = c.ok(Method::POST, &format!("/machines/{}/commission", enc(&id)), Some(body)).await?;
            println!("commissioning machine {id} with {profile}: task {}", v["id"]);
        }
        MachinesCmd::Tests { id, json } => {
            let v = c.ok(Method::GET, &format!("/machines/{}/tests", enc(&id)), None).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            for r in v["runs"].as_array().into_iter().flatten() {
                println!(
                    "run {} ({}): {}{}",
                    s(&r["run"]),
                    s(&r["profile"]),
                    s(&r["state"]),
                    r["error"].as_str().map(|e| format!(": {e}")).unwrap_or_default()
                );
                println!("  {:<20} {:<6} {:>12} {:<11} {:>10} NOTE", "TEST", "PASSED", "FIGURE", "UNIT", "FLOOR");
                for t in r["tests"].as_array().into_iter().flatten() {
                    println!(
                        "  {:<20} {:<6} {:>12} {:<11} {:>10} {}",
                        s(&t["name"]),
                        s(&t["passed"]),
                        s(&t["figure"]),
                        s(&t["unit"]),
                        s(&t["floor"]),
                        s(&t["note"])
                    );
                }
            }
        }
        MachinesCmd::Return { id } => {
            let v = c.ok(Method::POST, &format!("/machines/{}/return", enc(&id)), None).await?;
            println!("machine {id} returns to its disk (run {}, step {})", v["id"], s(&v["step"]["step"]));
        }
        MachinesCmd::Retire { id } => {
            c.ok(Method::POST, &format!("/machines/{}/retire", enc(&id)), None).await?;
            println!("retired machine {id}");
        }
        MachinesCmd::Unretire { id } => {
            c.ok(Method::POST, &format!("/machines/{}/unretire", enc(&id)), None).await?;
            println!("machine {id} is ready again");
        }
        MachinesCmd::UserData { id, set, clear } => {
            super::user_data(&c, &format!("/machines/{}/user-data", enc(&id)), set, clear).await?;
        }
        MachinesCmd::Network { id, set, clear, json } => {
            let path = format!("/machines/{}/network", enc(&id));
            let v = match (set, clear) {
                (Some(file), _) => {
                    let text = super::racks::read_input(&file)?;
                    let spec: Value =
                        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", file.display()))?;
                    c.ok(Method::PUT, &path, Some(spec)).await?
                }
                (None, true) => c.ok(Method::DELETE, &path, None).await?,
                (None, false) => c.ok(Method::GET, &path, None).await?,
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            println!("machine {}: network from {}", s(&v["machine_id"]), s(&v["source"]));
            if let Some(p) = v["problem"].as_str() {
                println!("problem: {p}");
            }
            println!("{:<16} {:<9} {:<18} {:<5} {:<20} MTU", "DEVICE", "KIND", "MAC", "DHCP", "ADDRESS");
            for d in v["devices"].as_array().into_iter().flatten() {
                println!(
                    "{:<16} {:<9} {:<18} {:<5} {:<20} {}",
                    s(&d["name"]),
                    s(&d["kind"]),
                    s(&d["mac"]),
                    s(&d["dhcp"]),
                    s(&d["address"]),
                    s(&d["mtu"])
                );
            }
            if let Some(g) = v["gateway"].as_str() {
                println!("default route: {g}");
            }
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

/// Asks the operator to type the machine's key before its disks are erased; refuses without a
/// terminal to ask on.
fn confirm_erase(id: &str, mode: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("releasing with erase {mode} destroys machine {id}'s data: pass --yes to confirm");
    }
    print!("This erases every disk of machine {id} ({mode}). Type {id} to go on: ");
    std::io::stdout().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != id {
        anyhow::bail!("not confirmed: nothing was done");
    }
    Ok(())
}
