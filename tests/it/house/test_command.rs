//! The test command's own guarantees (tools/harness.sh, which tools/test.sh runs every stage and
//! background job through): a stage past its limit, a background job that died without its
//! status and a run past its whole limit each end the run within seconds, named, with the
//! stage's last lines and processes shown and those processes ended. No root needed.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

const HARNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tools/harness.sh");

/// Runs `script` in bash after sourcing the harness, in a scratch directory (its `target/` holds
/// the jobs' files); its output (stdout and stderr together) and how long it took.
fn harness(script: &str) -> (Output, String, Duration) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let started = Instant::now();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail; exec 2>&1; source {HARNESS}\n{script}"))
        .current_dir(dir.path())
        .env("HARNESS_DIR", dir.path().join("target/test-run"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out, text, started.elapsed())
}

/// Whether a process whose command line contains `needle` runs.
fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
            .unwrap_or(false)
    })
}

#[test]
fn a_stage_past_its_limit_is_named_shown_and_ended_within_seconds() {
    // The stage's child starts a session of its own (as `low` and daemons do): it leaves the
    // stage's process group but keeps the stage's mark, and is ended all the same.
    let (out, text, took) = harness(
        "stage 'a sleepy stage' 2 bash -c 'echo its last words; setsid sleep 313.25 & exec sleep 313.5'\necho not reached",
    );
    assert_eq!(out.status.code(), Some(124), "{text}");
    assert!(took < Duration::from_secs(20), "took {took:?}: {text}");
    assert!(text.contains("== a sleepy stage: past its limit of 2 s"), "{text}");
    assert!(text.contains("  | its last words"), "the stage's last lines are shown: {text}");
    assert!(text.contains("sleep 313.25") && text.contains("sleep 313.5"), "its processes are listed: {text}");
    assert!(!text.contains("not reached"), "{text}");
    assert!(!running("sleep 313.25") && !running("sleep 313.5"), "the stage's processes are ended");
}

#[test]
fn a_stage_that_fails_fails_the_run_and_one_that_passes_is_timed() {
    let (out, text, _) = harness("stage 'quick one' 30 true\nstage 'a failing one' 30 bash -c 'exit 3'");
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("== quick one: 0 s"), "{text}");
    // A failure inside a stage's function stops the stage there (`set -e` holds inside it).
    let (out, text, _) = harness("f() { false; echo after; }\nstage 'a function' 30 f");
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("after"), "{text}");
}

#[test]
fn a_background_job_that_dies_without_its_status_fails_ready_at_once() {
    let (out, text, took) = harness(
        "trap 'end_all \"the run is ending\"' EXIT\n\
         job dies 300 bash -c 'echo working on it; exec sleep 317.5' & launched dies\n\
         sleep 1; kill -9 $(cat target/dies.pid)\n\
         stage 'waiting for the job' 300 ready dies",
    );
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(took < Duration::from_secs(15), "took {took:?}: {text}");
    assert!(text.contains("background job dies") && text.contains("without writing its status"), "{text}");
    assert!(text.contains("working on it"), "the job's last lines are shown: {text}");
    assert!(text.contains("== ending dies: the run is ending"), "the run's end ends what the job left: {text}");
    assert!(!running("sleep 317.5"));
}

#[test]
fn a_job_past_its_limit_gives_its_status_and_a_finished_one_its_log() {
    let (out, text, took) = harness(
        "job slow 2 exec sleep 319.5 & launched slow\n\
         job fine 30 echo done well & launched fine\n\
         ready fine\n\
         ready slow || echo \"slow: $?\"",
    );
    assert!(out.status.success(), "{text}");
    assert!(took < Duration::from_secs(20), "took {took:?}: {text}");
    assert!(text.contains("fine | done well"), "{text}");
    assert!(text.contains("slow: 124") && text.contains("past its limit of 2 s"), "{text}");
    assert!(!running("sleep 319.5"));
}

#[test]
fn the_whole_run_past_its_limit_ends_every_stage_and_names_each() {
    let (_, text, took) = harness(
        "run_limit 3\n\
         (stage 'lane one' 300 exec sleep 323.5) | sed 's/^/one | /' &\n\
         (stage 'lane two' 300 exec sleep 329.5) | sed 's/^/two | /' &\n\
         wait; test -e \"$HARNESS_DIR/run.expired\" && echo expired",
    );
    assert!(took < Duration::from_secs(25), "took {took:?}: {text}");
    assert!(text.contains("one | == lane one: past the whole run's limit of 3 s"), "{text}");
    assert!(text.contains("two | == lane two: past the whole run's limit of 3 s"), "{text}");
    assert!(text.contains("expired"), "{text}");
    assert!(!running("sleep 323.5") && !running("sleep 329.5"));
}

#[test]
fn a_stage_without_a_limit_is_refused() {
    let (out, text, _) = harness("stage 'no limit' cargo --version\necho not reached");
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("no limit: the limit `cargo` is not a number of seconds"), "{text}");
    assert!(!text.contains("not reached"), "{text}");
}
