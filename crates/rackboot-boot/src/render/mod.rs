//! Pure rendering of boot scripts from templates (minijinja, strict: a missing variable is an
//! error, never an empty string). Golden-tested against `tests/golden/`.

use std::path::Path;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::netcfg::installer::InstallerNetwork;

mod boot;
mod bounds;
mod layout;
mod unattend;

pub use boot::{grub_words, Loader};
pub use bounds::{FUEL, MAX_OUTPUT};
pub use layout::{CommissionVars, LayoutFs, LayoutVars};
pub use unattend::UnattendVars;

const PROFILE_IPXE: &str = include_str!("../../../../templates/ipxe/profile.ipxe");
const LOCALBOOT_IPXE: &str = include_str!("../../../../templates/ipxe/localboot.ipxe");
const PROFILE_GRUB: &str = include_str!("../../../../templates/grub/profile.cfg");
const LOCALBOOT_GRUB: &str = include_str!("../../../../templates/grub/localboot.cfg");
const IDENTITY_SH: &str = include_str!("../../../../templates/provision/identity.sh");
const LAYOUT_SH: &str = include_str!("../../../../templates/provision/layout.sh");
const RESCUE_SH: &str = include_str!("../../../../templates/provision/rescue.sh");
const COMMISSION_SH: &str = include_str!("../../../../templates/provision/commission.sh");
const AGENT_UNIT: &str = include_str!("../../../../bootos/rackboot-agent.service");
const KICKSTART: &str = include_str!("../../../../templates/installer/kickstart.cfg");
const PRESEED: &str = include_str!("../../../../templates/installer/preseed.cfg");
const AUTOINSTALL: &str = include_str!("../../../../templates/installer/autoinstall.yaml");
const UNATTEND: &str = include_str!("../../../../templates/windows/unattend.xml");

/// Every template by file name, with its embedded text.
const EMBEDDED: [(&str, &str); 12] = [
    ("ipxe/profile.ipxe", PROFILE_IPXE),
    ("ipxe/localboot.ipxe", LOCALBOOT_IPXE),
    ("grub/profile.cfg", PROFILE_GRUB),
    ("grub/localboot.cfg", LOCALBOOT_GRUB),
    ("provision/identity.sh", IDENTITY_SH),
    ("provision/layout.sh", LAYOUT_SH),
    ("provision/rescue.sh", RESCUE_SH),
    ("provision/commission.sh", COMMISSION_SH),
    ("installer/kickstart.cfg", KICKSTART),
    ("installer/preseed.cfg", PRESEED),
    ("installer/autoinstall.yaml", AUTOINSTALL),
    ("windows/unattend.xml", UNATTEND),
];

/// The default text of template `name` (e.g. `ipxe/profile.ipxe`): the file of that name under
/// `dir` (`boot.templates`) if there is one, else the embedded one; `NotFound` for no such template.
pub fn default_text(dir: Option<&Path>, name: &str) -> std::io::Result<String> {
    let embedded = EMBEDDED.iter().find(|(n, _)| *n == name).map(|(_, t)| *t);
    let embedded = embedded.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such template"))?;
    match dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
        Some(p) => std::fs::read_to_string(p),
        None => Ok(embedded.to_string()),
    }
}

pub use rackboot_model::boot::ANSWER_KINDS;

/// What an installer answer file needs.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerVars {
    pub mac: String,
    pub hostname: String,
    pub domain: String,
    /// e.g. /dev/vda; `disk_name` is its last component (vda).
    pub disk: String,
    pub disk_name: String,
    pub ssh_keys: Vec<String>,
    pub appliance_url: String,
    /// The distribution mirror or repository, e.g. http://deb.debian.org/debian; `repo_host`
    /// and `repo_path` are its parts (preseed wants them apart).
    pub repo_url: String,
    pub repo_host: String,
    pub repo_path: String,
    /// HTTP proxy to the repository (empty: none).
    pub proxy: String,
    /// Where the installer's post-install step fetches the finishing script (agent, credential,
    /// identity) and so reports back: `/boot/installed?mac=..`.
    pub finish_url: String,
    /// The installer token the report-back sends as `Authorization: Bearer`; empty when this
    /// answer went to an address rackboot cannot tie to the machine.
    pub finish_token: String,
    /// The machine's network spec in this installer's terms (`network_lines`, `netcfg_lines`,
    /// `network_v2`); empty: DHCP on any interface.
    #[serde(flatten)]
    pub network: InstallerNetwork,
}

/// Whether `v` can stand inside double quotes in a shell script as it is: nothing `sh` would
/// expand or end the quoting with.
pub fn shell_safe(v: &str) -> bool {
    !v.chars().any(|c| matches!(c, '$' | '`' | '\\' | '"') || c.is_control())
}

/// What the identity script of a provisioning run needs.
#[derive(Debug, Clone, Serialize)]
pub struct IdentityVars {
    pub disk: String,
    pub hostname: String,
    pub domain: String,
    pub appliance_url: String,
    /// The HTTPS base URL the installed agent calls.
    pub agent_url: String,
    /// The CA certificate (PEM) the installed agent trusts.
    pub ca_pem: String,
    /// SHA-256 (hex) of the agent binary an installer downloads; checked before it is installed.
    pub agent_sha256: String,
    pub ssh_keys: Vec<String>,
    /// The agent's session (JSON with its credential) to write into the installed system;
    /// `None`: the BootOS agent running the script hands over its own (`$RACKBOOT_SESSION_FILE`).
    pub session: Option<String>,
    /// systemd-networkd files for the machine's network spec (`netcfg::networkd`); empty: DHCP
    /// on every Ethernet port.
    pub network_files: Vec<NetFile>,
    /// The MAC the machine provisions through (its first), which the catch-all DHCP network
    /// (no spec) makes the one port `network-online.target` waits for; empty: every port.
    pub boot_mac: String,
    /// The machine's NoCloud seed (`<appliance>/boot/cloud-init/<mac>/<seed token>/`), which an installed
    /// system with cloud-init is pointed at; empty: none.
    pub cloud_init_url: String,
}

/// One file for `/etc/systemd/network/`.
#[derive(Debug, Clone, Serialize)]
pub struct NetFile {
    pub name: String,
    pub text: String,
}

/// Everything a script template may use.
#[derive(Debug, Clone, Serialize)]
pub struct ScriptVars {
    pub mac: String,
    pub hostname: Option<String>,
    /// UEFI firmware (iPXE's EFI loader needs `initrd=<name>` on the kernel command line).
    pub uefi: bool,
    pub http_base: String,
    /// This boot's enrollment nonce, appended to an agent profile's command line as
    /// `rackboot.nonce=` (only for a request from the machine's own address).
    #[serde(skip)]
    pub boot_nonce: Option<String>,
    /// The HTTPS base URL agents use.
    pub agent_url: String,
    /// `sha256:<hex>` of the CA certificate BootOS's agent pins.
    pub ca_pin: String,
}

#[derive(Serialize)]
struct ProfileVars {
    name: String,
    kernel_url: String,
    initrd_url: String,
    kernel_path: Option<String>,
    initrd_path: Option<String>,
    initrd_name: String,
    cmdline: String,
}

impl ScriptVars {
    /// A made-up machine for checks and previews.
    pub fn sample(http_base: &str, agent_url: &str) -> ScriptVars {
        ScriptVars {
            mac: "52:54:00:00:00:00".into(),
            hostname: Some("sample".into()),
            uefi: false,
            http_base: http_base.into(),
            boot_nonce: None,
            agent_url: agent_url.into(),
            ca_pin: format!("sha256:{}", "0".repeat(64)),
        }
    }
}

/// Why a script could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("boot profile {0:?} does not exist")]
    UnknownProfile(String),
    #[error("template: {0:#}")]
    Template(#[from] minijinja::Error),
    #[error("reading a template: {0}")]
    Io(String),
    #[error("{0:?} cannot go into a shell script (quotes, $, backquotes, backslashes or control characters)")]
    Unsafe(String),
    #[error("{0:?} cannot be a path in a GRUB config (letters, digits and ._-/+ only)")]
    UnsafePath(String),
    #[error("the template takes more than {0} steps to render (a loop too many?)")]
    OutOfFuel(u64),
    #[error("the template's output would be over {0} bytes")]
    TooLarge(usize),
}

fn val<T: Serialize>(v: T) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(v))
}

/// The template environment, built once.
pub struct Renderer {
    env: Environment<'static>,
}

impl Renderer {
    /// Embedded templates, each overridable by a file of the same name under `dir/ipxe/`.
    pub fn new(dir: Option<&Path>) -> anyhow::Result<Self> {
        Ok(Self::with_overrides(dir, &std::collections::BTreeMap::new())?)
    }

    /// Like [`Renderer::new`], with some templates' text (by file name, e.g. `ipxe/profile.ipxe`)
    /// replaced by `overrides` (the CMDB's, see [`crate::templates`]).
    pub fn with_overrides(
        dir: Option<&Path>,
        overrides: &std::collections::BTreeMap<String, String>,
    ) -> Result<Self, RenderError> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_fuel(Some(FUEL));
        env.set_syntax(minijinja::syntax::SyntaxConfig::builder().keep_trailing_newline(true).build()?);
        for (name, _) in EMBEDDED {
            let source = match overrides.get(name) {
                Some(text) => text.clone(),
                None => default_text(dir, name).map_err(|e| RenderError::Io(format!("{name}: {e}")))?,
            };
            env.add_template_owned(name.to_string(), source)?;
        }
        Ok(Renderer { env })
    }

    /// Checks that a profile command line renders (strict: unknown names are errors);
    /// `{{ answer_url }}` exists only for a profile with an answer file.
    pub fn check_cmdline(&self, cmdline: &str, answer: bool) -> Result<(), RenderError> {
        let sample = ScriptVars::sample("http://198.18.0.1", "https://198.18.0.1");
        if answer {
            let ctx = minijinja::context! { answer_url => "http://198.18.0.1/boot/answer/preseed", ..val(&sample) };
            self.render_text(cmdline, ctx)?;
        } else {
            self.render_text(cmdline, val(&sample))?;
        }
        Ok(())
    }

    /// The iPXE script a sample machine (52:54:00:00:00:00, BIOS, named `sample`) would get
    /// from `profile`, for an operator to look at before saving it.
    pub fn preview(
        &self,
        profile: &rackboot_config::Profile,
        http_base: &str,
        agent_url: &str,
    ) -> Result<String, RenderError> {
        let profiles = std::collections::BTreeMap::from([(profile.name.clone(), profile.clone())]);
        let ctx = crate::planner::PlanContext { http_base, discovery_profile: &profile.name, profiles: &profiles };
        let mac: rackboot_model::mac::Mac = "52:54:00:00:00:00".parse().expect("a MAC");
        let plan = crate::planner::plan_boot(mac, None, &ctx).map_err(|e| RenderError::UnknownProfile(e.0))?;
        self.ipxe(&plan, &ScriptVars::sample(http_base, agent_url))
    }

    /// Renders an installer answer file (`kind` one of [`ANSWER_KINDS`]). Values end up inside
    /// quotes in shell commands and YAML, so quotes, `$`, backquotes and backslashes are refused.
    pub fn answer(&self, kind: &str, vars: &AnswerVars) -> Result<String, RenderError> {
        let file = match kind {
            "kickstart" => "installer/kickstart.cfg",
            "preseed" => "installer/preseed.cfg",
            "autoinstall" => "installer/autoinstall.yaml",
            other => return Err(RenderError::UnknownProfile(format!("answer file {other}"))),
        };
        let values = [
            &vars.mac,
            &vars.hostname,
            &vars.domain,
            &vars.disk,
            &vars.appliance_url,
            &vars.repo_url,
            &vars.finish_url,
            &vars.finish_token,
            &vars.proxy,
        ];
        for v in values.into_iter().chain(&vars.ssh_keys) {
            if !shell_safe(v) || v.contains('\'') {
                return Err(RenderError::Unsafe(v.clone()));
            }
        }
        // The network's lines are netcfg's, from checked names; still, none may start another.
        let net = &vars.network;
        for l in net.network_lines.iter().chain(&net.netcfg_lines) {
            if l.chars().any(|c| c.is_control() || matches!(c, '`' | '\\' | '"')) {
                return Err(RenderError::Unsafe(l.clone()));
            }
        }
        if net.network_v2.chars().any(|c| c.is_control() && c != '\n') {
            return Err(RenderError::Unsafe("network_v2".into()));
        }
        self.render(file, val(vars))
    }

    /// Renders the identity script of a provisioning run. Values go into double quotes, so
    /// anything `sh` would expand inside them is refused. The session goes into a quoted here
    /// document, so it only must not hold a line of its own that ends it.
    pub fn identity(&self, vars: &IdentityVars) -> Result<String, RenderError> {
        let values = [
            &vars.disk,
            &vars.hostname,
            &vars.domain,
            &vars.appliance_url,
            &vars.agent_url,
            &vars.agent_sha256,
            &vars.cloud_init_url,
            &vars.boot_mac,
        ];
        for v in values.into_iter().chain(&vars.ssh_keys) {
            if !shell_safe(v) {
                return Err(RenderError::Unsafe(v.clone()));
            }
        }
        if vars.session.as_deref().is_some_and(|s| s.lines().any(|l| l == "SESSION")) {
            return Err(RenderError::Unsafe("session".into()));
        }
        for f in &vars.network_files {
            if !shell_safe(&f.name) || f.name.contains('/') || f.text.lines().any(|l| l == "NETWORK") {
                return Err(RenderError::Unsafe(f.name.clone()));
            }
        }
        if vars.ca_pem.lines().any(|l| l == "CA") {
            return Err(RenderError::Unsafe("ca_pem".into()));
        }
        let ctx = minijinja::context! { unit => AGENT_UNIT, ..val(vars) };
        self.render("provision/identity.sh", ctx)
    }
}

#[cfg(test)]
mod tests;
