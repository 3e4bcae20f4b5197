//! The shell completions and man pages the Debian package installs (dist/, written by
//! tools/book.sh from the binary, which CI checks are current): bash loads the completion script
//! and completes commands, subcommands and options with it; man renders the pages without a
//! warning. Skips where bash or man is missing.

use std::path::Path;
use std::process::Command;

fn dist(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dist").join(path)
}

/// What bash's completion offers for the command line `words` (the last word being completed).
fn complete(words: &[&str]) -> Vec<String> {
    let script = dist("completions/rackboot.bash");
    let list = words.iter().map(|w| format!("'{w}'")).collect::<Vec<_>>().join(" ");
    let prog = format!(
        "source {}; COMP_WORDS=({list}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
         COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; \
         _rackboot rackboot \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash").arg("--norc").arg("-c").arg(&prog).output().expect("bash runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_commands_subcommands_and_options() {
    if Command::new("bash").arg("--version").output().is_err() {
        eprintln!("skipped: no bash");
        return;
    }
    assert!(complete(&["rackboot", "mach"]).contains(&"machines".to_string()));
    let sub = complete(&["rackboot", "machines", "rel"]);
    assert_eq!(sub, ["release"], "{sub:?}");
    let opts = complete(&["rackboot", "tasks", "create", "--comm"]);
    assert!(opts.contains(&"--commission".to_string()), "{opts:?}");
    let shells = complete(&["rackboot", "completions", ""]);
    assert!(["bash", "zsh", "fish"].iter().all(|s| shells.contains(&s.to_string())), "{shells:?}");
}

#[test]
fn the_man_pages_render_without_warnings() {
    if Command::new("man").arg("--version").output().is_err() {
        eprintln!("skipped: no man");
        return;
    }
    let pages: Vec<_> = std::fs::read_dir(dist("man")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(pages.len() > 50, "{} pages", pages.len());
    for page in ["rackboot.1", "rackboot-tasks-create.1", "rackboot-machines-release.1"] {
        let out = Command::new("man")
            .args(["--warnings", "-P", "cat", "-l"])
            .arg(dist(&format!("man/{page}")))
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let (text, warnings) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && warnings.trim().is_empty(), "{page}: {warnings}");
        assert!(text.contains(&page.trim_end_matches(".1").to_string()), "{page}: {text}");
    }
    let create = std::fs::read_to_string(dist("man/rackboot-tasks-create.1")).unwrap();
    assert!(create.contains("commission"), "the options are in the page");
}
