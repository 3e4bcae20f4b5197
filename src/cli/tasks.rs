//! `rackboot tasks`: provisioning tasks and their runs.

use super::*;

#[derive(Args)]
pub(super) struct CreateTask {
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
    /// A [[provision.test_profiles]] entry each machine passes in BootOS before it is
    /// configured and installed (a failed test fails its run).
    #[arg(long)]
    commission: Option<String>,
    /// Hostname pattern: the run's number in braces (n, or n:02 for two digits) and {mac}, e.g.
    /// node-{n:02}.
    #[arg(long)]
    hostname: Option<String>,
    /// Addresses to reserve for the machines, FIRST-LAST, e.g. 198.18.0.60-198.18.0.69.
    #[arg(long)]
    ip_pool: Option<String>,
    /// The resource pool the task acts in (its machines must all be of it; --next takes its
    /// ready machines); default: the pool the machines share.
    #[arg(long)]
    pool: Option<String>,
    /// Target disk, e.g. /dev/sda; auto: the largest, or the one --root-device picks.
    #[arg(long, default_value = "auto")]
    disk: String,
    /// A root-device hint, KEY=VALUE (repeatable; every one must match, exactly one disk may):
    /// name, serial, wwn, model, vendor, by_path, min_size_gib, max_size_gib, rotational.
    #[arg(long = "root-device", value_name = "KEY=VALUE")]
    root_device: Vec<String>,
    #[command(flatten)]
    layout: LayoutArgs,
    /// An SSH public key for root on the installed system (repeatable).
    #[arg(long = "ssh-key")]
    ssh_keys: Vec<String>,
    /// cloud-init user-data for the installed systems, from this file ('-': stdin); a machine's
    /// own wins over it.
    #[arg(long, value_name = "FILE")]
    user_data: Option<PathBuf>,
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
/// A disk layout for image deploys (tasks and racks).
#[derive(clap::Args)]
pub(super) struct LayoutArgs {
    /// Mirror the root (software RAID 1) onto the disk these hints pick, KEY=VALUE (repeatable,
    /// as --root-device). Image deploys only.
    #[arg(long = "mirror", value_name = "KEY=VALUE")]
    mirror: Vec<String>,
    /// Root on LVM (volume group rackboot), growing to the space the file systems leave.
    #[arg(long)]
    lvm: bool,
    /// An extra file system on LVM, MOUNT:FSTYPE:SIZE_MIB, e.g. /srv/data:xfs:512 (repeatable);
    /// with :encrypted at the end, on LUKS2 bound to the appliance's Tang server.
    #[arg(long = "fs", value_name = "MOUNT:FSTYPE:SIZE_MIB[:encrypted]")]
    filesystems: Vec<String>,
}

impl LayoutArgs {
    /// The API's `layout`, checked; None when no flag was given.
    pub(super) fn to_json(&self) -> anyhow::Result<Option<serde_json::Value>> {
        let (mirror, filesystems) =
            (self.mirror.iter().map(String::as_str), self.filesystems.iter().map(String::as_str));
        let layout = rackboot::provision::Layout::from_words(mirror, self.lvm, filesystems)
            .map_err(|e| anyhow::anyhow!("the layout: {e}"))?;
        Ok(layout.map(serde_json::to_value).transpose()?)
    }
}

#[derive(Subcommand)]
pub(super) enum TasksCmd {
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
pub(super) async fn tasks(c: ApiClient, cmd: TasksCmd) -> anyhow::Result<()> {
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
                commission,
                hostname,
                ip_pool,
                pool,
                disk,
                root_device,
                layout,
                ssh_keys,
                user_data,
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
                ("commission", commission),
                ("hostname_pattern", hostname),
                ("ip_pool", ip_pool),
                ("pool", pool),
            ] {
                if let Some(v) = v {
                    body[k] = json!(v);
                }
            }
            if let Some(n) = concurrency {
                body["concurrency"] = json!(n);
            }
            if !root_device.is_empty() {
                let hints = rackboot::provision::RootDeviceHints::from_pairs(root_device.iter().map(String::as_str))
                    .map_err(|e| anyhow::anyhow!("--{e}"))?;
                body["root_device"] = serde_json::to_value(hints)?;
            }
            if let Some(layout) = layout.to_json()? {
                body["layout"] = layout;
            }
            if let Some(f) = user_data {
                body["user_data"] = json!(super::racks::read_input(&f)?);
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
