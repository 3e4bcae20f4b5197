//! What is generated from the binary itself, so it cannot drift from it (tools/book.sh writes it
//! into the tree and CI checks it is current): the book's reference pages (`rackboot reference
//! cli|events`, docs/reference/), the shell completions (`rackboot completions`,
//! dist/completions/) and the man pages (`rackboot man DIR`, dist/man/).

use clap::CommandFactory;

use rackboot::cmdb::EventKind;

/// Every command and subcommand with its full `--help`, in the order `--help` lists them.
pub fn cli() -> String {
    let mut out = String::new();
    let mut root = super::Cli::command().term_width(100);
    root.build();
    walk(&root, "rackboot", &mut out);
    out
}

fn walk(cmd: &clap::Command, path: &str, out: &mut String) {
    let mut cmd = cmd.clone().bin_name(path);
    let help = cmd.render_long_help().to_string();
    out.push_str(&format!("\n## `{path}`\n\n```text\n{}\n```\n", help.trim_end()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        walk(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// The shells completions are made for.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut super::Cli::command(), "rackboot", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Writes a man page for the binary and one for every visible command under it
/// (`rackboot-machines-list.1`); returns how many.
pub fn man_pages(dir: &std::path::Path) -> anyhow::Result<usize> {
    use anyhow::Context;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut root = super::Cli::command();
    root.build();
    let mut count = 0;
    man_walk(&root, "rackboot", dir, &mut count)?;
    Ok(count)
}

fn man_walk(cmd: &clap::Command, name: &str, dir: &std::path::Path, count: &mut usize) -> anyhow::Result<()> {
    use anyhow::Context;
    let cmd = cmd.clone().name(name.to_string()).bin_name(name.replace('-', " "));
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut page)?;
    let file = dir.join(format!("{name}.1"));
    std::fs::write(&file, page).with_context(|| format!("writing {}", file.display()))?;
    *count += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        man_walk(sub, &format!("{name}-{}", sub.get_name()), dir, count)?;
    }
    Ok(())
}

/// Every timeline event kind: its name, what it means, its `detail` fields.
pub fn events() -> String {
    let mut out = String::from("\n| Kind | Meaning | `detail` fields |\n|---|---|---|\n");
    for (_, name, meaning, fields) in EventKind::ALL {
        let cell = |s: &str| s.trim().replace('|', "\\|").replace('\n', " ");
        out.push_str(&format!("| `{name}` | {} | {} |\n", cell(meaning), cell(fields)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_pages_cover_every_command_and_event_kind() {
        let text = cli();
        for path in ["## `rackboot serve`", "## `rackboot machines list`", "## `rackboot store migrate`"] {
            assert!(text.contains(path), "{path}");
        }
        assert!(!text.contains("## `rackboot reference`"), "the hidden command stays out of the book");
        let kinds = events();
        assert_eq!(kinds.lines().filter(|l| l.starts_with("| `")).count(), EventKind::ALL.len());
        assert!(kinds.contains("| `agent.enroll_conflict` |"));
    }

    #[test]
    fn completions_and_man_pages_cover_the_commands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = completions(shell);
            assert!(text.contains("machines") && text.contains("commission"), "{shell:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let n = man_pages(dir.path()).unwrap();
        assert!(n > 50, "{n} pages");
        let list = std::fs::read_to_string(dir.path().join("rackboot-machines-list.1")).unwrap();
        assert!(list.starts_with(".ie") || list.contains(".TH rackboot-machines-list 1"), "{list}");
        assert!(!dir.path().join("rackboot-reference.1").exists());
    }
}
