//! Every subcommand and its arguments, with the help and examples `--help`, the book's CLI
//! page, the completions and the man pages show (`mod.rs` dispatches them).

use std::path::PathBuf;

use clap::Subcommand;

use super::api::{ApiArgs, ApiCall};
use super::assets::AssetsCmd;
use super::bmc::{BmcCmd, PowerArgs};
use super::ca::CaCmd;
use super::firmware::FirmwareCmd;
use super::inventory::InventoryArgs;
use super::jobs::JobsCmd;
use super::machines::MachinesCmd;
use super::plugins::PluginsCmd;
use super::racks::RacksCmd;
use super::reference;
use super::secureboot::SecureBootCmd;
use super::store::StoreCmd;
use super::tang::TangCmd;
use super::tasks::TasksCmd;
use super::templates::TemplatesCmd;
use super::users::{AuditArgs, TokensCmd, UsersCmd};
use super::windows::WindowsCmd;

#[derive(Subcommand)]
pub enum Command {
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
        /// Once every socket is bound, write the addresses they got to FILE as JSON (`http`,
        /// `https`, `dhcp`, `pxe`, `tftp`, `dns`; null for a service that does not run): for
        /// listeners configured on port 0, and for supervisors that wait until it is up.
        #[arg(long, value_name = "FILE")]
        listening_file: Option<PathBuf>,
    },
    /// Print a reference page of the book as Markdown (tools/book.sh writes docs/reference/).
    #[command(hide = true)]
    Reference {
        #[arg(value_parser = ["cli", "events"])]
        page: String,
    },
    /// Print a shell completion script for bash, zsh or fish (the Debian package installs them).
    #[command(after_help = "\
Examples:
  rackboot completions bash > /etc/bash_completion.d/rackboot
  rackboot completions zsh > \"${fpath[1]}/_rackboot\"
  rackboot completions fish > ~/.config/fish/completions/rackboot.fish")]
    Completions {
        #[arg(value_enum)]
        shell: reference::Shell,
    },
    /// Write the man pages (rackboot.1 and one per command, rackboot-machines-list.1, ...) into DIR.
    #[command(after_help = "Example:\n  rackboot man /usr/local/share/man/man1 && man rackboot-tasks-create")]
    Man {
        /// Directory to write the pages into (made if missing).
        dir: PathBuf,
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
    /// Windows media: import the operator's own install media for Windows profiles, list it.
    Windows {
        #[command(subcommand)]
        cmd: WindowsCmd,
    },
    /// The appliance's CA: `ca show` prints its file and SHA-256 fingerprint.
    Ca {
        #[command(subcommand)]
        cmd: CaCmd,
    },
    /// The Secure Boot key BootOS's image is signed with: `secureboot export-cert` gives its
    /// certificate to enrol in the machines' db.
    Secureboot {
        #[command(subcommand)]
        cmd: SecureBootCmd,
    },
    /// Machines in the CMDB: list, add, show, remove, timeline, approve.
    Machines {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: MachinesCmd,
    },
    /// Boot templates (iPXE scripts, answer files): list, show, set an override, reset.
    Templates {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: TemplatesCmd,
    },
    /// A machine's BMC (Redfish or IPMI): set, show, remove.
    Bmc {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: BmcCmd,
    },
    /// Firmware baselines: upload images, show machines' and racks' drift, update them through
    /// their BMCs.
    Firmware {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: FirmwareCmd,
    },
    /// Power machines on, off (graceful, then forced), cycle them, read their state, or boot
    /// them from the network once, through their BMCs; each result is read back.
    #[command(
        after_help = "Examples:\n  rackboot power on 52:54:00:12:34:56 52:54:00:12:34:57\n  rackboot power pxe-once --uefi node07\n  rackboot power status 7"
    )]
    Power {
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        args: PowerArgs,
    },
    /// Racks: bring one up (switch ports -> slots, names, addresses), see its elevation and flags.
    #[command(after_help = "\
Examples:
  rackboot racks create r12 --remote-id leaf-r12 --lldp-name leaf-r12 --ports 'Ethernet1-42 -> U1-U42' \\
      --address-plan 198.18.12.1-198.18.12.42
  rackboot racks show r12
  rackboot racks import-csv r13 r13.csv")]
    Racks {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: Box<RacksCmd>,
    },
    /// Signed vendor hardware plugins: trust vendor keys, upload, import packs, activate.
    #[command(after_help = "\
Examples:
  rackboot plugins trust add --vendor acme acme.pub
  rackboot plugins upload acme-raid-1.2.0.tar.gz --sig acme-raid-1.2.0.tar.gz.minisig
  rackboot plugins show acme-raid 1.2.0
  rackboot plugins rollback acme-raid
  rackboot plugins import /media/usb/pack")]
    Plugins {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: PluginsCmd,
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
    /// Log in as a user (local, or from the company's directory) and keep the session's token
    /// in a file of your own (mode 0600) to use as --token-file; the password is prompted for,
    /// or read as one line from stdin. With --sso, through the company's OpenID provider.
    #[command(
        after_help = "Examples:\n  rackboot login alice --out ~/.rackboot.token\n  rackboot login --sso --out ~/.rackboot.token\n  rackboot machines list --token-file ~/.rackboot.token"
    )]
    Login {
        #[command(flatten)]
        api: ApiArgs,
        /// The username (a local or LDAP user's login: the password is read from stdin or
        /// prompted for).
        #[arg(required_unless_present = "sso", conflicts_with = "sso")]
        user: Option<String>,
        /// Log in through the company's OpenID provider instead ([auth.oidc]): open the URL
        /// shown, enter the code there and log in; this waits until you have.
        #[arg(long)]
        sso: bool,
        /// Where the session's token goes (created with mode 0600; replaced if it is there).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The session's lifetime in seconds (default: the appliance's auth.session_ttl_secs).
        #[arg(long, value_name = "SECS")]
        ttl: Option<u64>,
    },
    /// Users and their roles (admin): list, add, set, delete.
    Users {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: UsersCmd,
    },
    /// API tokens: yours (an admin: everyone's); create prints the new token once.
    Tokens {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: TokensCmd,
    },
    /// The Tang server encrypted file systems are bound to (admin): keys, bindings, rotate.
    #[command(after_help = "Examples:\n  rackboot tang keys\n  rackboot tang rotate")]
    Tang {
        #[command(flatten)]
        api: ApiArgs,
        #[command(subcommand)]
        cmd: TangCmd,
    },
    /// The audit log (admin): every change through the API, refused changes and failed logins.
    #[command(
        after_help = "Examples:\n  rackboot audit --limit 20\n  rackboot audit --user alice --outcome denied\n  rackboot audit --pool team-a"
    )]
    Audit {
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        filter: AuditArgs,
    },
    /// Download a consistent snapshot of the CMDB (admin) while the appliance serves.
    ///
    /// The file holds every machine, lease, job, run, event and user (with password and token
    /// hashes): keep it as safe as the data directory. It is written 0600, never over an existing
    /// file, and checked to open as a CMDB before it is kept.
    #[command(after_help = "Example:\n  rackboot backup /root/rackboot-$(date -u +%Y%m%dT%H%M%SZ).redb")]
    Backup {
        #[command(flatten)]
        api: ApiArgs,
        /// Where to write the snapshot (must not exist).
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Restore a backup into a stopped appliance's data dir (an older schema is migrated).
    ///
    /// Refused while rackboot runs on that data dir. The backup is checked on a copy first; the
    /// replaced CMDB file is kept beside it as rackboot.redb.before-restore-<unix seconds>.
    #[command(after_help = "\
Example:
  systemctl stop rackboot
  rackboot restore --config /etc/rackboot/rackboot.toml /root/rackboot-20261123T150000Z.redb
  systemctl start rackboot")]
    Restore {
        /// TOML config file (its data_dir). Default: the embedded one.
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The backup (from `rackboot backup`, GET /api/v1/backup or data_dir/backups/).
        #[arg(value_name = "BACKUP")]
        file: PathBuf,
    },
    /// The CMDB's store: `store migrate` copies it into another store, verified.
    Store {
        #[command(subcommand)]
        cmd: StoreCmd,
    },
    /// Call any REST API path with the CLI's token and CA; prints the answer (JSON, or a stream as
    /// it comes) and fails on an error status.
    #[command(after_help = "\
Examples:
  rackboot api GET '/machines?state=installed&limit=10'
  rackboot api PATCH /machines/node07 --data '{\"tags\": [\"web\"]}'
  rackboot api PUT /machines/node07/bmc --data @bmc.json   # a secret: from a file, not the command line
  rackboot api GET /events/stream")]
    Api {
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        call: ApiCall,
    },
    /// The machines as an Ansible dynamic inventory: use it as the inventory script.
    #[command(after_help = "\
The inventory script, /etc/ansible/rackboot.sh (chmod +x; a viewer's token will do):
  #!/bin/sh
  exec rackboot inventory --ansible --token-file /etc/ansible/rackboot.token \"$@\"
Then:
  ansible-inventory -i /etc/ansible/rackboot.sh --graph
  ansible -i /etc/ansible/rackboot.sh state_installed -m ping")]
    Inventory {
        #[command(flatten)]
        api: ApiArgs,
        #[command(flatten)]
        args: InventoryArgs,
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
