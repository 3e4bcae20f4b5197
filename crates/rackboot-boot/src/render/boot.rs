//! One boot plan, rendered for the loader that asked: an iPXE script or a config for the
//! signed GRUB (its command line quoted for GRUB, its paths checked).

use serde::Serialize;

use super::{val, ProfileVars, RenderError, Renderer, ScriptVars};
use crate::planner::BootPlan;

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
    /// What a loader that asked for a script shows a machine pinned to a Windows profile, then
    /// gives the firmware back (its next boot option).
    fn windows_notice(self, profile: &str, media: &str) -> String {
        let why = format!(
            "rackboot: profile {profile} installs Windows from media {media}, which starts only from UEFI PXE (bootmgfw.efi)"
        );
        match self {
            Loader::Ipxe => format!("#!ipxe\necho {why}\nsleep 15\nexit 1\n"),
            Loader::Grub => format!("echo '{why}'\nsleep 15\nexit\n"),
        }
    }

    fn templates(self) -> (&'static str, &'static str) {
        match self {
            Loader::Ipxe => ("ipxe/profile.ipxe", "ipxe/localboot.ipxe"),
            Loader::Grub => ("grub/profile.cfg", "grub/localboot.cfg"),
        }
    }
}

/// `cmdline` as GRUB words: each word GRUB would read differently (`$`, quotes, `;`, braces,
/// backslashes...) goes in single quotes, so the kernel gets exactly the rendered text.
pub fn grub_words(cmdline: &str) -> String {
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

impl Renderer {
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

    /// A profile boot's kernel command line rendered with the machine's values (and its
    /// answer-file URL), with the boot's enrollment nonce for an agent profile.
    pub fn cmdline(&self, p: &crate::planner::ProfileBoot, vars: &ScriptVars) -> Result<String, RenderError> {
        let mut cmdline = match &p.answer_url {
            Some(answer_url) => self.render_text(&p.cmdline, minijinja::context! { answer_url, ..val(vars) })?,
            None => self.render_text(&p.cmdline, val(vars))?,
        };
        if let Some(nonce) = vars.boot_nonce.as_deref().filter(|_| p.agent) {
            cmdline.push_str(" rackboot.nonce=");
            cmdline.push_str(nonce);
        }
        Ok(cmdline)
    }

    /// A plan rendered for `loader`.
    pub fn script(&self, loader: Loader, plan: &BootPlan, vars: &ScriptVars) -> Result<String, RenderError> {
        let (profile_template, localboot) = loader.templates();
        match plan {
            BootPlan::Windows { profile, media } => Ok(loader.windows_notice(profile, media)),
            BootPlan::LocalDisk => self.render(localboot, val(vars)),
            BootPlan::Profile(p) => {
                let mut cmdline = self.cmdline(p, vars)?;
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
                self.render(profile_template, ctx)
            }
        }
    }
}
