//! Pure rendering of boot scripts from templates (minijinja, strict: a missing variable is an
//! error, never an empty string). Golden-tested against `tests/golden/`.

use std::path::Path;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::planner::BootPlan;

const PROFILE_IPXE: &str = include_str!("../templates/ipxe/profile.ipxe");
const LOCALBOOT_IPXE: &str = include_str!("../templates/ipxe/localboot.ipxe");
const PROFILE_GRUB: &str = include_str!("../templates/grub/profile.cfg");
const LOCALBOOT_GRUB: &str = include_str!("../templates/grub/localboot.cfg");
const IDENTITY_SH: &str = include_str!("../templates/provision/identity.sh");
const AGENT_UNIT: &str = include_str!("../bootos/rackboot-agent.service");
const KICKSTART: &str = include_str!("../templates/installer/kickstart.cfg");
const PRESEED: &str = include_str!("../templates/installer/preseed.cfg");
const AUTOINSTALL: &str = include_str!("../templates/installer/autoinstall.yaml");

/// Every template by file name, with its embedded text.
const EMBEDDED: [(&str, &str); 8] = [
    ("ipxe/profile.ipxe", PROFILE_IPXE),
    ("ipxe/localboot.ipxe", LOCALBOOT_IPXE),
    ("grub/profile.cfg", PROFILE_GRUB),
    ("grub/localboot.cfg", LOCALBOOT_GRUB),
    ("provision/identity.sh", IDENTITY_SH),
    ("installer/kickstart.cfg", KICKSTART),
    ("installer/preseed.cfg", PRESEED),
    ("installer/autoinstall.yaml", AUTOINSTALL),
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

/// The installer answer files rackboot renders.
pub const ANSWER_KINDS: [&str; 3] = ["kickstart", "preseed", "autoinstall"];

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

/// Which boot loader a script is for: the same plan renders for either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Loader {
    /// An iPXE script (`ipxe/*.ipxe`), fetched over HTTP.
    Ipxe,
    /// A GRUB config (`grub/*.cfg`) for Debian's signed network GRUB, fetched over TFTP.
    Grub,
}

impl Loader {
    fn templates(self) -> (&'static str, &'static str) {
        match self {
            Loader::Ipxe => ("ipxe/profile.ipxe", "ipxe/localboot.ipxe"),
            Loader::Grub => ("grub/profile.cfg", "grub/localboot.cfg"),
        }
    }
}

/// `cmdline` as GRUB words: each word GRUB would read differently (`$`, quotes, `;`, braces,
/// backslashes...) goes in single quotes, so the kernel gets exactly the rendered text.
fn grub_words(cmdline: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-:/=,+@%".contains(c);
    let word = |w: &str| match w.chars().all(plain) {
        true => w.to_string(),
        false => format!("'{}'", w.replace('\'', r"'\''")),
    };
    cmdline.split_whitespace().map(word).collect::<Vec<_>>().join(" ")
}

/// Whether a boot-directory path can stand in a GRUB config as it is.
fn grub_path_safe(path: &str) -> bool {
    !path.is_empty() && path.chars().all(|c| c.is_ascii_alphanumeric() || "._-/+".contains(c))
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
            self.env.render_str(cmdline, ctx)?;
        } else {
            self.env.render_str(cmdline, val(&sample))?;
        }
        Ok(())
    }

    /// The iPXE script a sample machine (52:54:00:00:00:00, BIOS, named `sample`) would get
    /// from `profile`, for an operator to look at before saving it.
    pub fn preview(
        &self,
        profile: &crate::config::Profile,
        http_base: &str,
        agent_url: &str,
    ) -> Result<String, RenderError> {
        let profiles = std::collections::BTreeMap::from([(profile.name.clone(), profile.clone())]);
        let ctx = crate::planner::PlanContext { http_base, discovery_profile: &profile.name, profiles: &profiles };
        let mac: crate::mac::Mac = "52:54:00:00:00:00".parse().expect("a MAC");
        let plan = crate::planner::plan_boot(mac, None, &ctx).map_err(|e| RenderError::UnknownProfile(e.0))?;
        self.ipxe(&plan, &ScriptVars::sample(http_base, agent_url))
    }

    /// The iPXE script of a plan: the profile's command line rendered with the machine's values
    /// (and its answer-file URL), in `ipxe/profile.ipxe`; or `ipxe/localboot.ipxe`.
    pub fn ipxe(&self, plan: &BootPlan, vars: &ScriptVars) -> Result<String, RenderError> {
        self.script(Loader::Ipxe, plan, vars)
    }

    /// The same plan as a config for the signed GRUB (`grub/profile.cfg`, `grub/localboot.cfg`):
    /// kernel and initrd by their boot-directory paths (GRUB fetches them over TFTP), the command
    /// line quoted for GRUB.
    pub fn grub(&self, plan: &BootPlan, vars: &ScriptVars) -> Result<String, RenderError> {
        self.script(Loader::Grub, plan, vars)
    }

    /// A plan rendered for `loader`.
    pub fn script(&self, loader: Loader, plan: &BootPlan, vars: &ScriptVars) -> Result<String, RenderError> {
        let (profile_template, localboot) = loader.templates();
        match plan {
            BootPlan::LocalDisk => Ok(self.env.get_template(localboot)?.render(val(vars))?),
            BootPlan::Profile(p) => {
                let mut cmdline = match &p.answer_url {
                    Some(answer_url) => {
                        self.env.render_str(&p.cmdline, minijinja::context! { answer_url, ..val(vars) })?
                    }
                    None => self.env.render_str(&p.cmdline, val(vars))?,
                };
                if let Some(nonce) = vars.boot_nonce.as_deref().filter(|_| p.agent) {
                    cmdline.push_str(" rackboot.nonce=");
                    cmdline.push_str(nonce);
                }
                if loader == Loader::Grub {
                    cmdline = grub_words(&cmdline);
                    for path in p.kernel_path.iter().chain(&p.initrd_path) {
                        if !grub_path_safe(path) {
                            return Err(RenderError::UnsafePath(path.clone()));
                        }
                    }
                }
                let profile = ProfileVars {
                    name: p.name.clone(),
                    kernel_url: p.kernel_url.clone(),
                    initrd_url: p.initrd_url.clone(),
                    kernel_path: p.kernel_path.clone(),
                    initrd_path: p.initrd_path.clone(),
                    initrd_name: p.initrd_name.clone(),
                    cmdline,
                };
                let ctx = minijinja::context! { profile => val(&profile), ..val(vars) };
                Ok(self.env.get_template(profile_template)?.render(ctx)?)
            }
        }
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
        Ok(self.env.get_template(file)?.render(val(vars))?)
    }

    /// Renders the identity script of a provisioning run. Values go into double quotes, so
    /// anything `sh` would expand inside them is refused. The session goes into a quoted here
    /// document, so it only must not hold a line of its own that ends it.
    pub fn identity(&self, vars: &IdentityVars) -> Result<String, RenderError> {
        let values =
            [&vars.disk, &vars.hostname, &vars.domain, &vars.appliance_url, &vars.agent_url, &vars.agent_sha256];
        for v in values.into_iter().chain(&vars.ssh_keys) {
            if !shell_safe(v) {
                return Err(RenderError::Unsafe(v.clone()));
            }
        }
        if vars.session.as_deref().is_some_and(|s| s.lines().any(|l| l == "SESSION")) {
            return Err(RenderError::Unsafe("session".into()));
        }
        if vars.ca_pem.lines().any(|l| l == "CA") {
            return Err(RenderError::Unsafe("ca_pem".into()));
        }
        let ctx = minijinja::context! { unit => AGENT_UNIT, ..val(vars) };
        Ok(self.env.get_template("provision/identity.sh")?.render(ctx)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Profile;

    fn vars(uefi: bool) -> ScriptVars {
        ScriptVars {
            mac: "52:54:00:12:34:56".into(),
            hostname: Some("node01".into()),
            uefi,
            http_base: "http://198.18.0.1".into(),
            boot_nonce: None,
            agent_url: "https://198.18.0.1".into(),
            ca_pin: format!("sha256:{}", "5f1e".repeat(16)),
        }
    }

    fn profiles() -> std::collections::BTreeMap<String, Profile> {
        crate::config::Config::load(None).unwrap().boot.profiles
    }

    /// The discovery plan for the test machine, as the planner makes it.
    fn discovery(profiles: &std::collections::BTreeMap<String, Profile>) -> BootPlan {
        let ctx =
            crate::planner::PlanContext { http_base: "http://198.18.0.1", discovery_profile: "discovery", profiles };
        crate::planner::plan_boot("52:54:00:12:34:56".parse().unwrap(), None, &ctx).unwrap()
    }

    #[test]
    fn golden_scripts() {
        let r = Renderer::new(None).unwrap();
        let d = discovery(&profiles());
        assert_eq!(r.ipxe(&d, &vars(false)).unwrap(), include_str!("../tests/golden/bios-discovery.ipxe"));
        assert_eq!(r.ipxe(&d, &vars(true)).unwrap(), include_str!("../tests/golden/uefi-discovery.ipxe"));
        let l = BootPlan::LocalDisk;
        assert_eq!(r.ipxe(&l, &vars(false)).unwrap(), include_str!("../tests/golden/bios-localboot.ipxe"));
        assert_eq!(r.ipxe(&l, &vars(true)).unwrap(), include_str!("../tests/golden/uefi-localboot.ipxe"));
    }

    #[test]
    fn golden_grub_configs_render_the_same_plans() {
        let r = Renderer::new(None).unwrap();
        let d = discovery(&profiles());
        let with_nonce = ScriptVars { boot_nonce: Some("00ff".into()), ..vars(true) };
        assert_eq!(r.grub(&d, &with_nonce).unwrap(), include_str!("../tests/golden/grub-discovery.cfg"));
        let l = BootPlan::LocalDisk;
        assert_eq!(r.grub(&l, &vars(true)).unwrap(), include_str!("../tests/golden/grub-localboot.cfg"));
    }

    #[test]
    fn grub_configs_quote_what_grub_would_expand_and_refuse_odd_paths() {
        let r = Renderer::new(None).unwrap();
        let BootPlan::Profile(mut p) = discovery(&profiles()) else { panic!() };
        p.cmdline = "console=ttyS0 x=$root y='a;b' z={x} ok=1".into();
        let cfg = r.grub(&BootPlan::Profile(p.clone()), &vars(true)).unwrap();
        let linux = cfg.lines().find(|l| l.starts_with("linux ")).unwrap();
        assert_eq!(linux, r#"linux /bootos/vmlinuz console=ttyS0 'x=$root' 'y='\''a;b'\''' 'z={x}' ok=1"#);
        // A kernel over HTTP cannot be had: the config says so on the console and gives up.
        let remote = crate::planner::ProfileBoot { kernel_path: None, ..p.clone() };
        let cfg = r.grub(&BootPlan::Profile(remote), &vars(true)).unwrap();
        assert!(cfg.contains("signed GRUB cannot") && cfg.contains("exit 1") && !cfg.contains("\nlinux"), "{cfg}");
        let odd = crate::planner::ProfileBoot { initrd_path: Some("a b/$x".into()), ..p };
        assert!(matches!(r.grub(&BootPlan::Profile(odd), &vars(true)), Err(RenderError::UnsafePath(_))));
    }

    #[test]
    fn a_boot_nonce_goes_only_onto_an_agent_profiles_command_line() {
        let r = Renderer::new(None).unwrap();
        let with_nonce = ScriptVars { boot_nonce: Some("00ff".into()), ..vars(false) };
        let d = discovery(&profiles());
        let script = r.ipxe(&d, &with_nonce).unwrap();
        let kernel = script.lines().find(|l| l.starts_with("kernel ")).unwrap();
        assert!(kernel.ends_with(" rackboot.mac=52:54:00:12:34:56 rackboot.nonce=00ff"), "{kernel}");
        let BootPlan::Profile(mut other) = d else { panic!() };
        other.agent = false;
        let script = r.ipxe(&BootPlan::Profile(other), &with_nonce).unwrap();
        assert!(!script.contains("nonce"), "{script}");
        assert!(!r.ipxe(&BootPlan::LocalDisk, &with_nonce).unwrap().contains("nonce"));
    }

    #[test]
    fn golden_identity_script() {
        let r = Renderer::new(None).unwrap();
        let v = IdentityVars {
            disk: "/dev/vda".into(),
            hostname: "node-01".into(),
            domain: "lab.rackboot.test".into(),
            appliance_url: "http://198.18.0.1:8080".into(),
            agent_url: "https://198.18.0.1:8443".into(),
            ca_pem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".into(),
            agent_sha256: "ab".repeat(32),
            ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake ops@example".into()],
            session: None,
        };
        let got = r.identity(&v).unwrap();
        if std::env::var_os("RACKBOOT_BLESS").is_some() {
            std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/identity.sh"), &got).unwrap();
        }
        assert_eq!(got, include_str!("../tests/golden/identity.sh"), "RACKBOOT_BLESS=1 rewrites the golden file");
        let mut bad = v.clone();
        bad.ssh_keys.push("ssh-rsa AAAA $(reboot)".into());
        assert!(matches!(r.identity(&bad), Err(RenderError::Unsafe(_))));
        // An installer's copy carries the session in a quoted here document, verbatim.
        let session = r#"{"machine_id":7,"credential":"7.abc$x`y`"}"#;
        let with = r.identity(&IdentityVars { session: Some(session.into()), ..v.clone() }).unwrap();
        assert!(with.contains(&format!("<<'SESSION'\n{session}\nSESSION\n")), "{with}");
        assert!(!with.contains("RACKBOOT_SESSION_FILE"));
        let end = IdentityVars { session: Some("x\nSESSION\nreboot".into()), ..v };
        assert!(matches!(r.identity(&end), Err(RenderError::Unsafe(_))));
    }

    #[test]
    fn golden_answer_files() {
        let r = Renderer::new(None).unwrap();
        let v = AnswerVars {
            mac: "52:54:00:12:34:56".into(),
            hostname: "node-01".into(),
            domain: "lab.rackboot.test".into(),
            disk: "/dev/vda".into(),
            disk_name: "vda".into(),
            ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake ops@example".into()],
            appliance_url: "http://198.18.0.1:8080".into(),
            repo_url: "http://deb.debian.org/debian".into(),
            repo_host: "deb.debian.org".into(),
            repo_path: "/debian".into(),
            proxy: "http://198.18.0.1:3142/".into(),
            finish_url: "http://198.18.0.1:8080/boot/installed?mac=52:54:00:12:34:56".into(),
            finish_token: "0f1e2d".into(),
        };
        // Each kind with its distribution's repository, as the defaults in [provision] have it.
        let config = crate::config::Config::load(None).unwrap();
        for (kind, golden) in [
            ("kickstart", include_str!("../tests/golden/kickstart.cfg")),
            ("preseed", include_str!("../tests/golden/preseed.cfg")),
            ("autoinstall", include_str!("../tests/golden/autoinstall.yaml")),
        ] {
            let mut v = v.clone();
            v.repo_url = config.provision.answer_repos[kind].clone();
            let got = r.answer(kind, &v).unwrap();
            if std::env::var_os("RACKBOOT_BLESS").is_some() {
                let path = format!(
                    "{}/tests/golden/{}",
                    env!("CARGO_MANIFEST_DIR"),
                    match kind {
                        "kickstart" => "kickstart.cfg",
                        "preseed" => "preseed.cfg",
                        _ => "autoinstall.yaml",
                    }
                );
                std::fs::write(path, &got).unwrap();
                continue;
            }
            assert_eq!(got, golden, "{kind}: RACKBOOT_BLESS=1 rewrites the golden file");
        }
        let mut bad = v.clone();
        bad.ssh_keys = vec!["ssh-rsa AAAA' ; reboot '".into()];
        assert!(matches!(r.answer("preseed", &bad), Err(RenderError::Unsafe(_))));
        assert!(r.answer("jumpstart", &v).is_err());
    }

    #[test]
    fn strict_templates_refuse_unknown_names() {
        let r = Renderer::new(None).unwrap();
        let mut p = profiles();
        p.get_mut("discovery").unwrap().cmdline = "root={{ no_such_var }}".into();
        let err = r.ipxe(&discovery(&p), &vars(false)).unwrap_err();
        assert!(err.to_string().contains("undefined"), "{err}");
    }
}
