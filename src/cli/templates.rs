//! `rackboot templates`: the boot templates (iPXE scripts, installer answer files) and their
//! overrides through the REST API.

use super::*;

/// Largest file `templates set` reads (the API refuses more than 64 KiB anyway).
const MAX_FILE: u64 = 64 << 10;

#[derive(Subcommand)]
pub(super) enum TemplatesCmd {
    /// List the templates and whether an override replaces each default.
    List,
    /// Print a template's text in use.
    Show {
        /// profile.ipxe, localboot.ipxe, profile.grub, localboot.grub, kickstart, preseed or autoinstall.
        name: String,
    },
    /// Replace a template with a file's text (checked by the appliance before it is used).
    #[command(after_help = "Example:\n  rackboot templates set localboot.ipxe ./localboot.ipxe")]
    Set {
        /// Template name.
        name: String,
        /// The new text.
        file: PathBuf,
    },
    /// Delete a template's override: its default is used again.
    Reset {
        /// Template name.
        name: String,
    },
}

pub(super) async fn templates(c: ApiClient, cmd: TemplatesCmd) -> anyhow::Result<()> {
    match cmd {
        TemplatesCmd::List => {
            let v = c.ok(Method::GET, "/templates", None).await?;
            println!("{:<16} {:<9} CHANGED_BY", "NAME", "SOURCE");
            for t in v["templates"].as_array().into_iter().flatten() {
                println!("{:<16} {:<9} {}", s(&t["name"]), s(&t["source"]), s(&t["changed_by"]));
            }
        }
        TemplatesCmd::Show { name } => {
            let v = c.ok(Method::GET, &format!("/templates/{}", enc(&name)), None).await?;
            print!("{}", v["text"].as_str().unwrap_or_default());
        }
        TemplatesCmd::Set { name, file } => {
            let len = std::fs::metadata(&file).with_context(|| format!("reading {}", file.display()))?.len();
            anyhow::ensure!(len <= MAX_FILE, "{} is {len} bytes; a template is at most {MAX_FILE}", file.display());
            let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
            c.ok(Method::PUT, &format!("/templates/{}", enc(&name)), Some(json!({"text": text}))).await?;
            println!("template {name} replaced; the next boot uses it");
        }
        TemplatesCmd::Reset { name } => {
            c.ok(Method::DELETE, &format!("/templates/{}", enc(&name)), None).await?;
            println!("template {name} back to its default");
        }
    }
    Ok(())
}
