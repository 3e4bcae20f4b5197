//! `rackboot bmc` (a machine's BMC) and `rackboot power` (power actions through BMCs).

use super::*;

#[derive(Subcommand)]
pub(super) enum BmcCmd {
    /// Set a machine's BMC; the password is read from a file (never an argument) and sealed.
    #[command(
        after_help = "Examples:\n  rackboot bmc set 52:54:00:12:34:56 --address 198.18.9.7 --protocol redfish \\\n      --username admin --password-file pw.txt --fingerprint sha256:AB:CD:...\n  rackboot bmc set node07 --address 198.18.9.8 --protocol ipmi --username admin --password-file pw.txt"
    )]
    Set {
        /// Machine id or MAC.
        id: String,
        /// host or host:port of the BMC.
        #[arg(long)]
        address: String,
        /// redfish or ipmi.
        #[arg(long)]
        protocol: String,
        #[arg(long)]
        username: String,
        /// File whose first line is the password; left out, the stored one is kept.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        /// Redfish: the SHA-256 of the BMC's certificate (else the appliance CA must issue it).
        #[arg(long, conflicts_with = "insecure")]
        fingerprint: Option<String>,
        /// Redfish: accept any certificate (the password goes to whoever answers).
        #[arg(long)]
        insecure: bool,
        /// Redfish system id when the BMC has several.
        #[arg(long)]
        system_id: Option<String>,
        /// uefi or legacy: the mode a PXE boot override asks for (else the mode DHCP last saw,
        /// UEFI for a machine never seen).
        #[arg(long, value_parser = ["uefi", "legacy"])]
        boot_mode: Option<String>,
        /// pxe (the default) or virtual-media: how provisioning boots it into BootOS (Redfish;
        /// virtual media where no DHCP answers it).
        #[arg(long, value_parser = ["pxe", "virtual-media"])]
        boot_via: Option<String>,
    },
    /// Show a machine's BMC (never the password) and its last power state with its age.
    Show {
        /// Machine id or MAC.
        id: String,
    },
    /// Remove a machine's BMC.
    Rm {
        /// Machine id or MAC.
        id: String,
    },
    /// Set up (or give a new password to) the appliance's own account on the machine's BMC, in
    /// band through its agent; the password is made on the machine, sealed, never shown.
    #[command(
        after_help = "Example:\n  rackboot bmc inband 52:54:00:12:34:56\n  rackboot jobs show JOB   # its outcome"
    )]
    Inband {
        /// Machine id or MAC.
        id: String,
    },
}

pub(super) async fn bmc(c: ApiClient, cmd: BmcCmd) -> anyhow::Result<()> {
    match cmd {
        BmcCmd::Set {
            id,
            address,
            protocol,
            username,
            password_file,
            fingerprint,
            insecure,
            system_id,
            boot_mode,
            boot_via,
        } => {
            let mut body = json!({"address": address, "protocol": protocol, "username": username,
                "insecure": insecure});
            if let Some(f) = password_file {
                let text = std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
                body["password"] = json!(text.lines().next().unwrap_or_default());
            }
            if let Some(f) = fingerprint {
                body["fingerprint"] = json!(f);
            }
            if let Some(s) = system_id {
                body["system_id"] = json!(s);
            }
            if let Some(m) = boot_mode {
                body["boot_mode"] = json!(m);
            }
            if let Some(v) = boot_via {
                body["boot_via"] = json!(v);
            }
            let v = c.ok(Method::PUT, &format!("/machines/{}/bmc", enc(&id)), Some(body)).await?;
            print_bmc(&v);
        }
        BmcCmd::Show { id } => print_bmc(&c.ok(Method::GET, &format!("/machines/{}/bmc", enc(&id)), None).await?),
        BmcCmd::Rm { id } => {
            c.ok(Method::DELETE, &format!("/machines/{}/bmc", enc(&id)), None).await?;
        }
        BmcCmd::Inband { id } => {
            let job = c.ok(Method::POST, &format!("/machines/{}/bmc/inband", enc(&id)), None).await?;
            println!("queued job {} (bmc_account) on machine {}", s(&job["id"]), s(&job["machine_id"]));
        }
    }
    Ok(())
}

fn print_bmc(v: &Value) {
    println!("machine   {}", s(&v["machine_id"]));
    println!("address   {} ({})", s(&v["address"]), s(&v["protocol"]));
    println!(
        "username  {}  (password {})",
        s(&v["username"]),
        if v["password_set"] == true { "set" } else { "not set" }
    );
    if !v["tls"].is_null() {
        let pin = v["tls"]["sha256"].as_str().map(|p| format!(" sha256:{p}")).unwrap_or_default();
        println!("tls       {}{pin}", s(&v["tls"]["mode"]));
    }
    if let Some(w) = v["warning"].as_str() {
        println!("WARNING   {w}");
    }
    if let Some(m) = v["boot_mode"].as_str() {
        println!("boot      {m}");
    }
    if v["boot_via"] == "virtual-media" {
        println!("BootOS    from virtual media (a one-time ISO the BMC inserts)");
    }
    if !v["inband"].is_null() {
        let i = &v["inband"];
        println!("in band   user {} on channel {}, set by job {}", s(&i["user_id"]), s(&i["channel"]), s(&i["job"]));
    }
    match v["power"].is_null() {
        true => println!("power     not read yet"),
        false => {
            let err = v["power"]["error"].as_str().map(|e| format!(" (last read failed: {e})")).unwrap_or_default();
            println!("power     {} ({}s ago){err}", s(&v["power"]["state"]), s(&v["power_age_secs"]));
        }
    }
}

#[derive(Args)]
pub(super) struct PowerArgs {
    /// on, off (graceful, then forced), cycle, status or pxe-once.
    action: String,
    /// Machine ids or MACs.
    #[arg(required = true)]
    ids: Vec<String>,
    /// pxe-once: boot in UEFI mode (else legacy BIOS).
    #[arg(long)]
    uefi: bool,
}

/// Runs the action on every machine at once (the appliance caps what is in flight) and prints
/// one line per machine; fails if any failed.
pub(super) async fn power(c: ApiClient, a: PowerArgs) -> anyhow::Result<()> {
    let c = std::sync::Arc::new(c);
    let mut set = tokio::task::JoinSet::new();
    for (i, id) in a.ids.iter().enumerate() {
        let (c, id, body) = (c.clone(), id.clone(), json!({"action": a.action, "uefi": a.uefi}));
        set.spawn(async move {
            (i, id.clone(), c.ok(Method::POST, &format!("/machines/{}/power", enc(&id)), Some(body)).await)
        });
    }
    let mut results = Vec::new();
    while let Some(r) = set.join_next().await {
        results.push(r?);
    }
    results.sort_by_key(|r| r.0);
    let mut failed = 0;
    for (_, id, r) in results {
        match r {
            Ok(v) => {
                let fallback = v["fallback"].as_str().map(|f| format!("  ({f})")).unwrap_or_default();
                println!("{id:<20} {:<8} {}ms{fallback}", s(&v["state"]), s(&v["ms"]));
            }
            Err(e) => {
                failed += 1;
                println!("{id:<20} FAILED   {e:#}");
            }
        }
    }
    anyhow::ensure!(failed == 0, "{failed} of the machines failed");
    Ok(())
}
