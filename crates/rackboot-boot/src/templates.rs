//! The boot templates operators edit at run time: their fixed names, the checks a new text must
//! pass, and the shared, swappable renderer built from the defaults plus the CMDB's overrides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::planner::{BootPlan, PlanContext};
use crate::render::{AnswerVars, RenderError, Renderer, ScriptVars};
use rackboot_store::{Cmdb, CmdbError};

/// Largest template text accepted.
pub const MAX_TEMPLATE: usize = 64 << 10;

/// The editable templates: the name operators use, and the renderer's file name.
pub const NAMES: [(&str, &str); 8] = [
    ("profile.ipxe", "ipxe/profile.ipxe"),
    ("localboot.ipxe", "ipxe/localboot.ipxe"),
    ("profile.grub", "grub/profile.cfg"),
    ("localboot.grub", "grub/localboot.cfg"),
    ("kickstart", "installer/kickstart.cfg"),
    ("preseed", "installer/preseed.cfg"),
    ("autoinstall", "installer/autoinstall.yaml"),
    ("unattend", "windows/unattend.xml"),
];

/// The renderer's file name of editable template `name`; `None`: no such template.
pub fn file_of(name: &str) -> Option<&'static str> {
    NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// Why a template text is refused.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "no template {0:?} (one of profile.ipxe, localboot.ipxe, profile.grub, localboot.grub, kickstart, preseed, autoinstall, unattend)"
    )]
    Unknown(String),
    #[error("the template is {0} bytes, more than the {MAX_TEMPLATE} allowed")]
    TooLarge(usize),
    #[error("{}", concise(.0))]
    Render(#[from] RenderError),
    #[error(transparent)]
    Cmdb(#[from] CmdbError),
}

/// A render error in one line: minijinja's message with the template and line, without the
/// source excerpt its alternate form adds.
fn concise(e: &RenderError) -> String {
    match e {
        RenderError::Template(m) => format!("template: {m}"),
        other => other.to_string(),
    }
}

/// The shared renderer: a cheap `Clone` handle that HTTP, HTTPS and the UI all read, replaced
/// whole (never edited) when an override changes, so a render sees one consistent set.
#[derive(Clone)]
pub struct Templates {
    dir: Option<PathBuf>,
    current: Arc<RwLock<Arc<Renderer>>>,
    /// Serializes reloads, so the last swap is from the last read of the overrides.
    reload: Arc<tokio::sync::Mutex<()>>,
}

impl Templates {
    /// The defaults (embedded, or the files under `dir`), before the overrides are loaded.
    pub fn new(dir: Option<&Path>) -> anyhow::Result<Templates> {
        let renderer = Renderer::new(dir)?;
        Ok(Templates {
            dir: dir.map(Path::to_path_buf),
            current: Arc::new(RwLock::new(Arc::new(renderer))),
            reload: Arc::default(),
        })
    }

    /// The renderer to use for one script.
    pub fn current(&self) -> Arc<Renderer> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The default text of editable template `name`.
    pub fn default_text(&self, name: &str) -> Result<String, TemplateError> {
        let file = file_of(name).ok_or_else(|| TemplateError::Unknown(name.into()))?;
        crate::render::default_text(self.dir.as_deref(), file)
            .map_err(|e| TemplateError::Render(RenderError::Io(format!("{file}: {e}"))))
    }

    /// A renderer with the stored overrides and `name` set to `text`, once `text` parses and
    /// renders for a sample machine (strict: an unknown variable is an error).
    pub fn check(&self, stored: &BTreeMap<String, String>, name: &str, text: &str) -> Result<Renderer, TemplateError> {
        let file = file_of(name).ok_or_else(|| TemplateError::Unknown(name.into()))?;
        if text.len() > MAX_TEMPLATE {
            return Err(TemplateError::TooLarge(text.len()));
        }
        let mut files = by_file(stored);
        files.insert(file.to_string(), text.to_string());
        let renderer = Renderer::with_overrides(self.dir.as_deref(), &files)?;
        render_sample(&renderer, name)?;
        Ok(renderer)
    }

    /// [`Templates::check`] on the blocking pool, so that a save or a preview never renders on
    /// an async worker (a render is bounded by [`crate::render::FUEL`] and
    /// [`crate::render::MAX_OUTPUT`] either way).
    pub async fn check_blocking(
        &self,
        stored: BTreeMap<String, String>,
        name: String,
        text: String,
    ) -> Result<Renderer, TemplateError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.check(&stored, &name, &text))
            .await
            .map_err(|e| TemplateError::Render(RenderError::Io(format!("the check did not finish: {e}"))))?
    }

    /// Rebuilds the renderer from the defaults and the CMDB's overrides and swaps it in. A stored
    /// override that no longer renders (e.g. a `boot.templates` file changed under it) is
    /// skipped with a warning rather than stopping boots.
    pub async fn reload(&self, cmdb: &Cmdb) -> Result<(), TemplateError> {
        let _one = self.reload.lock().await;
        let mut stored = cmdb.template_overrides().await?;
        stored.retain(|name, text| match self.check(&BTreeMap::new(), name, text) {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(template = %name, error = %e, "ignoring a stored template override");
                false
            }
        });
        let renderer = Renderer::with_overrides(self.dir.as_deref(), &by_file(&stored))?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(renderer);
        Ok(())
    }
}

/// Overrides keyed by operator name -> keyed by the renderer's file name.
fn by_file(stored: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    stored.iter().filter_map(|(n, t)| Some((file_of(n)?.to_string(), t.clone()))).collect()
}

/// The boot loader a boot template is for, `None` for an answer file.
pub fn loader_of(name: &str) -> Option<crate::render::Loader> {
    match name.rsplit_once('.')?.1 {
        "ipxe" => Some(crate::render::Loader::Ipxe),
        "grub" => Some(crate::render::Loader::Grub),
        _ => None,
    }
}

/// Renders template `name` for made-up machines: both firmwares for the boot scripts.
fn render_sample(r: &Renderer, name: &str) -> Result<String, RenderError> {
    let (http, agent) = ("http://198.18.0.1", "https://198.18.0.1");
    match loader_of(name) {
        Some(loader) => {
            let plan = if name.starts_with("localboot.") { BootPlan::LocalDisk } else { sample_plan(http) };
            let bios = r.script(loader, &plan, &ScriptVars::sample(http, agent))?;
            r.script(loader, &plan, &ScriptVars { uefi: true, ..ScriptVars::sample(http, agent) })?;
            Ok(bios)
        }
        None if name == "unattend" => r.unattend(&crate::render::UnattendVars::sample()),
        None => {
            let kind = name;
            r.answer(kind, &sample_answer(http, "52:54:00:00:00:00", "sample"))
        }
    }
}

/// The plan of a made-up agent profile with an answer file, so every profile variable is set.
fn sample_plan(http_base: &str) -> BootPlan {
    let profile = rackboot_config::Profile {
        name: "sample".into(),
        kernel: "sample/vmlinuz".into(),
        initrd: "sample/initrd.img".into(),
        cmdline: "console=ttyS0".into(),
        answer: None,
        windows: None,
        arm64: None,
    };
    let profiles = BTreeMap::from([(profile.name.clone(), profile)]);
    let ctx = PlanContext { http_base, discovery_profile: "sample", profiles: &profiles };
    let mac = "52:54:00:00:00:00".parse().expect("a MAC");
    crate::planner::plan_boot(mac, None, &ctx).expect("the sample profile exists")
}

/// Answer-file values for a preview: the machine's MAC and name, the rest made up; never an
/// installer token.
pub fn sample_answer(http_base: &str, mac: &str, hostname: &str) -> AnswerVars {
    AnswerVars {
        mac: mac.into(),
        hostname: hostname.into(),
        domain: "example.test".into(),
        disk: "/dev/vda".into(),
        disk_name: "vda".into(),
        ssh_keys: vec!["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPreview preview@example".into()],
        appliance_url: http_base.into(),
        repo_url: "http://deb.debian.org/debian".into(),
        repo_host: "deb.debian.org".into(),
        repo_path: "/debian".into(),
        proxy: String::new(),
        finish_url: format!("{http_base}/boot/installed?mac={mac}"),
        finish_token: String::new(),
        network: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates() -> Templates {
        Templates::new(None).unwrap()
    }

    #[test]
    fn every_default_passes_its_own_check() {
        let t = templates();
        for (name, _) in NAMES {
            let text = t.default_text(name).unwrap();
            t.check(&BTreeMap::new(), name, &text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_syntax_error_is_refused_with_its_line() {
        let err =
            templates().check(&BTreeMap::new(), "profile.ipxe", "#!ipxe\n\n{% if uefi %}\nx\n").err().expect("refused");
        let msg = err.to_string();
        assert!(msg.contains("ipxe/profile.ipxe:"), "{msg}");
        assert!(msg.contains("syntax error"), "{msg}");
    }

    #[test]
    fn an_unknown_variable_is_refused_even_in_the_uefi_branch() {
        let text = "#!ipxe\n{% if uefi %}{{ no_such }}{% endif %}\n";
        let err = templates().check(&BTreeMap::new(), "localboot.ipxe", text).err().expect("refused");
        assert!(err.to_string().contains("undefined"), "{err}");
    }

    #[test]
    fn unknown_and_oversize_are_refused() {
        let t = templates();
        assert!(matches!(t.check(&BTreeMap::new(), "identity.sh", "x"), Err(TemplateError::Unknown(_))));
        let big = "#".repeat(MAX_TEMPLATE + 1);
        assert!(matches!(t.check(&BTreeMap::new(), "preseed", &big), Err(TemplateError::TooLarge(_))));
    }

    #[test]
    fn a_checked_override_is_what_renders() {
        let r = templates().check(&BTreeMap::new(), "localboot.ipxe", "#!ipxe\necho local {{ mac }}\n").unwrap();
        let out = r.ipxe(&BootPlan::LocalDisk, &ScriptVars::sample("http://x", "https://x")).unwrap();
        assert_eq!(out, "#!ipxe\necho local 52:54:00:00:00:00\n");
    }
}
