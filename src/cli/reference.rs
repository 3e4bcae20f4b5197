//! `rackboot reference cli|events`: the book's reference pages (docs/reference/), printed as
//! Markdown from the binary itself, so they cannot drift from it (tools/book.sh writes them).

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
}
