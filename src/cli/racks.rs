//! `rackboot racks`: bring up racks through the REST API (create from a port -> slot map or a
//! machine CSV, see the elevation and flags, delete).

use std::io::Read;

use super::*;

// Parsed once per process: the size of the `create` variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub(super) enum RacksCmd {
    /// List racks.
    List,
    /// Show a rack's elevation (slot, port, machine, state, last event) and its flags.
    Show {
        /// Rack name.
        name: String,
        /// Print the API's JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Create a rack: where its switch's ports are cabled, how its machines are named and
    /// addressed.
    #[command(after_help = "\
Examples:
  rackboot racks create r12 --location 'hall 2, row C' --remote-id leaf-r12 --lldp-name leaf-r12 \\
      --ports 'Ethernet1-42 -> U1-U42' --address-plan 198.18.12.1-198.18.12.42 \\
      --os-profile debian12 --auto-provision
  rackboot racks create r13 --address-plan 198.18.13.1-198.18.13.42 --machines-csv r13.csv
  rackboot racks create r14 --ports 'Ethernet1-42 -> U1-U42' --remote-id leaf-r14 \\
      --network bond-vlan10.json --network-plan prod=10.20.0.101-10.20.0.142")]
    Create {
        /// Rack name (lowercase DNS label, at most 32).
        name: String,
        #[arg(long)]
        location: Option<String>,
        /// The resource pool its machines join when they are placed in it (default: default).
        #[arg(long)]
        pool: Option<String>,
        /// The DHCP option 82 remote id the rack's relay adds (text or hex).
        #[arg(long)]
        remote_id: Option<String>,
        /// The switch's LLDP system name.
        #[arg(long)]
        lldp_name: Option<String>,
        /// The switch's LLDP chassis id (usually its MAC).
        #[arg(long)]
        lldp_chassis_id: Option<String>,
        /// A port -> slot line (repeatable): 'Ethernet1-42 -> U1-U42' or 'Ethernet43 -> U43'.
        #[arg(long = "ports")]
        ports: Vec<String>,
        /// A CSV file of port,slot rows.
        #[arg(long, value_name = "FILE")]
        ports_csv: Option<PathBuf>,
        /// Placeholders {rack}, {slot}, {slot:02}; default {rack}-u{slot:02}.
        #[arg(long)]
        hostname_pattern: Option<String>,
        /// FIRST-LAST: slot U<n> reserves FIRST + n - 1.
        #[arg(long)]
        address_plan: Option<String>,
        #[arg(long)]
        hardware_profile: Option<String>,
        /// An installer boot profile (with an answer file) or an image in the images directory.
        #[arg(long)]
        os_profile: Option<String>,
        /// Provision placed machines with --os-profile once inventoried.
        #[arg(long)]
        auto_provision: bool,
        /// Every host on this VLAN is ours: a machine's own LLDP neighbour or DMI serial places
        /// it (otherwise it is a claim an operator confirms).
        #[arg(long)]
        trust_lldp: bool,
        /// Minutes before a silent mapped slot is flagged (default 15).
        #[arg(long)]
        silent_after_minutes: Option<u32>,
        /// A CSV file of mac-or-serial,hostname,ip,slot rows (racks without managed switches).
        #[arg(long, value_name = "FILE")]
        machines_csv: Option<PathBuf>,
        /// What its UEFI machines boot first: ipxe, or shim (the signed chain, for Secure Boot).
        #[arg(long, value_name = "LOADER")]
        uefi_loader: Option<String>,
        /// The installed network of its machines, a JSON spec file ('-': stdin; ports by `port`
        /// or `match_name`, see `rackboot machines network --help`).
        #[arg(long, value_name = "FILE")]
        network: Option<PathBuf>,
        /// NETWORK=FIRST-LAST (repeatable): slot U<n> gets FIRST + n - 1 in that named network.
        #[arg(long = "network-plan", value_name = "NETWORK=FIRST-LAST")]
        network_plans: Vec<String>,
        /// A root-device hint for its machines' installs, KEY=VALUE (repeatable): name, serial,
        /// wwn, model, vendor, by_path, min_size_gib, max_size_gib, rotational.
        #[arg(long = "root-device", value_name = "KEY=VALUE")]
        root_device: Vec<String>,
        #[command(flatten)]
        layout: super::tasks::LayoutArgs,
    },
    /// Replace a rack's machine list from a CSV file of mac-or-serial,hostname,ip,slot rows
    /// ('-' reads standard input).
    ImportCsv {
        /// Rack name.
        name: String,
        /// The CSV file.
        file: PathBuf,
    },
    /// Show a rack's cloud-init user-data (what its machines get when neither they nor their
    /// task have any), or set it from a file, or remove it.
    UserData {
        /// Rack name.
        name: String,
        /// Set it from this file ('-': stdin).
        #[arg(long, conflicts_with = "clear")]
        set: Option<PathBuf>,
        /// Remove it.
        #[arg(long)]
        clear: bool,
    },
    /// Confirm that a machine is in a rack's slot (a claim its node made, shown as a flag, or
    /// any slot): it is named, addressed and provisioned as that slot. `--withdraw` takes the
    /// confirmation back (its own evidence places it again, or nothing does).
    Confirm {
        /// Machine id or MAC.
        machine: String,
        /// Rack name.
        #[arg(required_unless_present = "withdraw")]
        rack: Option<String>,
        /// Slot: U7 or 7.
        #[arg(required_unless_present = "withdraw")]
        slot: Option<String>,
        #[arg(long, conflicts_with_all = ["rack", "slot"])]
        withdraw: bool,
    },
    /// Delete a rack (its machines keep their names and addresses).
    Delete {
        /// Rack name.
        name: String,
    },
}

/// Reads a CSV or JSON file (or standard input for `-`), at most 1 MiB (the API's body limit).
pub(super) fn read_input(path: &std::path::Path) -> anyhow::Result<String> {
    let mut text = String::new();
    let limit = rackboot::api::MAX_BODY as u64;
    let n = if path.as_os_str() == "-" {
        std::io::stdin().take(limit + 1).read_to_string(&mut text)?
    } else {
        let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        f.take(limit + 1).read_to_string(&mut text).with_context(|| format!("reading {}", path.display()))?
    };
    anyhow::ensure!(n as u64 <= limit, "{} is larger than {limit} bytes", path.display());
    Ok(text)
}

pub(super) async fn racks(c: ApiClient, cmd: RacksCmd) -> anyhow::Result<()> {
    match cmd {
        RacksCmd::List => {
            let v = c.ok(Method::GET, "/racks", None).await?;
            println!("{:<16} {:<6} {:<20} {:<16} {:<6} LOCATION", "NAME", "PORTS", "SWITCH", "OS", "AUTO");
            for r in v["racks"].as_array().into_iter().flatten() {
                let sw = &r["switch"];
                let switch = [&sw["remote_id"], &sw["lldp_chassis_name"], &sw["lldp_chassis_id"]]
                    .into_iter()
                    .find(|x| !x.is_null())
                    .map_or("-".into(), s);
                println!(
                    "{:<16} {:<6} {:<20} {:<16} {:<6} {}",
                    s(&r["name"]),
                    r["ports"].as_array().map_or(0, Vec::len),
                    switch,
                    s(&r["os_profile"]),
                    r["auto_provision"],
                    s(&r["location"])
                );
            }
        }
        RacksCmd::Show { name, json } => {
            let v = c.ok(Method::GET, &format!("/racks/{}", enc(&name)), None).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&v)?);
                return Ok(());
            }
            print_elevation(&v);
        }
        RacksCmd::Create {
            name,
            location,
            pool,
            remote_id,
            lldp_name,
            lldp_chassis_id,
            ports,
            ports_csv,
            hostname_pattern,
            address_plan,
            hardware_profile,
            os_profile,
            auto_provision,
            trust_lldp,
            silent_after_minutes,
            machines_csv,
            uefi_loader,
            network,
            network_plans,
            root_device,
            layout,
        } => {
            let mut body = json!({
                "name": name, "location": location, "ports": ports,
                "switch": {"remote_id": remote_id, "lldp_chassis_name": lldp_name, "lldp_chassis_id": lldp_chassis_id},
                "address_plan": address_plan, "hardware_profile": hardware_profile, "os_profile": os_profile,
                "auto_provision": auto_provision, "trust_lldp": trust_lldp, "uefi_loader": uefi_loader,
            });
            if let Some(p) = hostname_pattern {
                body["hostname_pattern"] = json!(p);
            }
            if let Some(p) = pool {
                body["pool"] = json!(p);
            }
            if let Some(m) = silent_after_minutes {
                body["silent_after_minutes"] = json!(m);
            }
            if let Some(f) = ports_csv {
                body["ports_csv"] = json!(read_input(&f)?);
            }
            if let Some(f) = machines_csv {
                body["machines_csv"] = json!(read_input(&f)?);
            }
            if let Some(f) = network {
                let spec: Value =
                    serde_json::from_str(&read_input(&f)?).with_context(|| format!("{}: not JSON", f.display()))?;
                body["network"] = spec;
            }
            let mut plans = serde_json::Map::new();
            for p in network_plans {
                let (n, range) =
                    p.split_once('=').with_context(|| format!("--network-plan {p:?} is not NETWORK=FIRST-LAST"))?;
                plans.insert(n.trim().to_string(), json!(range.trim()));
            }
            body["network_plans"] = Value::Object(plans);
            if !root_device.is_empty() {
                let hints = rackboot::provision::RootDeviceHints::from_pairs(root_device.iter().map(String::as_str))
                    .map_err(|e| anyhow::anyhow!("--{e}"))?;
                body["root_device"] = serde_json::to_value(hints)?;
            }
            if let Some(layout) = layout.to_json()? {
                body["layout"] = layout;
            }
            let v = c.ok(Method::POST, "/racks", Some(body)).await?;
            println!("created rack {}", s(&v["rack"]["name"]));
            print_elevation(&v);
        }
        RacksCmd::ImportCsv { name, file } => {
            let body = json!({"csv": read_input(&file)?});
            let v = c.ok(Method::POST, &format!("/racks/{}/csv", enc(&name)), Some(body)).await?;
            println!("imported {} machine(s) into rack {name}", v["rack"]["machines"].as_array().map_or(0, Vec::len));
            print_elevation(&v);
        }
        RacksCmd::UserData { name, set, clear } => {
            super::user_data(&c, &format!("/racks/{}/user-data", enc(&name)), set, clear).await?;
        }
        RacksCmd::Confirm { machine, rack, slot, withdraw } => {
            let path = format!("/machines/{}/placement", enc(&machine));
            let m = match (rack, slot, withdraw) {
                (Some(rack), Some(slot), false) => {
                    let n = slot.trim_start_matches(['U', 'u']).parse::<u32>();
                    let slot = n.map_err(|_| anyhow::anyhow!("slot {slot:?} is not U<n> or <n>"))?;
                    c.ok(Method::PUT, &path, Some(json!({"rack": rack, "slot": slot}))).await?
                }
                _ => c.ok(Method::DELETE, &path, None).await?,
            };
            match (m["rack"].as_str(), m["slot"].as_u64()) {
                (Some(r), Some(s)) => println!(
                    "machine {} is in {r} U{s} (by {}), named {}",
                    m["id"],
                    m["placement"]["by"].as_str().unwrap_or("?"),
                    m["hostname"].as_str().unwrap_or("-")
                ),
                _ => println!("machine {} is in no rack", m["id"]),
            }
        }
        RacksCmd::Delete { name } => {
            c.ok(Method::DELETE, &format!("/racks/{}", enc(&name)), None).await?;
            println!("deleted rack {name}");
        }
    }
    Ok(())
}

/// The elevation top first, one line per machine (or empty slot), then the flags.
fn print_elevation(v: &Value) {
    println!(
        "{:<5} {:<14} {:<6} {:<20} {:<18} {:<11} {:<16} LAST EVENT",
        "SLOT", "PORT", "ID", "HOSTNAME", "MAC", "STATE", "ADDRESS"
    );
    for slot in v["slots"].as_array().into_iter().flatten() {
        let ports: Vec<String> = slot["ports"].as_array().into_iter().flatten().map(s).collect();
        let port = if ports.is_empty() { "-".into() } else { ports.join(",") };
        let unit = format!("U{}", s(&slot["slot"]));
        let machines = slot["machines"].as_array().cloned().unwrap_or_default();
        if machines.is_empty() {
            println!("{unit:<5} {port:<14} {:<6} (empty)", "-");
        }
        for m in machines {
            println!(
                "{unit:<5} {port:<14} {:<6} {:<20} {:<18} {:<11} {:<16} {}",
                s(&m["id"]),
                s(&m["hostname"]),
                s(&m["mac"]),
                s(&m["state"]),
                s(&m["reserved_ip"]),
                s(&m["last_event"])
            );
        }
    }
    let flags = v["flags"].as_array().cloned().unwrap_or_default();
    if flags.is_empty() {
        println!("no flags");
    }
    for f in flags {
        println!("FLAG {:<14} {}", s(&f["kind"]), s(&f["detail"]));
    }
}
