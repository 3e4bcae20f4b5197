//! `rackboot jobs`: run scripts and actions on machines through their agents.

use super::*;

#[derive(Subcommand)]
pub(super) enum JobsCmd {
    /// Run a command on one machine (--machine) or on every machine with a tag (--tag), wait for
    /// it and print its output; exits with the job's exit code (one machine).
    Run {
        /// Machine id or MAC.
        #[arg(long, conflicts_with = "tag", required_unless_present = "tag")]
        machine: Option<String>,
        /// Every machine with this tag (one job each).
        #[arg(long)]
        tag: Option<String>,
        /// Interpreter for the script body.
        #[arg(long, default_value = "/bin/sh")]
        interpreter: String,
        /// Seconds before the job is killed and marked timed_out (default: agent.job_timeout_secs).
        #[arg(long)]
        timeout: Option<u64>,
        /// Queue it and return at once.
        #[arg(long)]
        no_wait: bool,
        /// The script body (joined with spaces), e.g. `-- uname -a`.
        #[arg(required = true, last = true)]
        script: Vec<String>,
    },
    /// A built-in action: refresh-inventory, reboot or power-off.
    Action {
        /// Machine id or MAC.
        #[arg(long, conflicts_with = "tag", required_unless_present = "tag")]
        machine: Option<String>,
        /// Every machine with this tag.
        #[arg(long)]
        tag: Option<String>,
        /// refresh-inventory, reboot or power-off.
        action: String,
    },
    /// List jobs (newest first).
    List {
        /// Only this machine's jobs (id or MAC).
        #[arg(long)]
        machine: Option<String>,
        /// Only jobs in this state: queued, running, succeeded, failed, timed_out, cancelled, error.
        #[arg(long)]
        state: Option<String>,
    },
    /// Show one job as JSON.
    Show {
        /// Job id.
        id: u64,
    },
    /// Print a job's output (--follow: as it arrives, until the job ends).
    Output {
        /// Job id.
        id: u64,
        /// Keep printing until the job ends.
        #[arg(long, short)]
        follow: bool,
    },
    /// Cancel a queued or running job.
    Cancel {
        /// Job id.
        id: u64,
    },
}
pub(super) async fn jobs(c: ApiClient, cmd: JobsCmd) -> anyhow::Result<()> {
    let target = |machine: Option<String>, tag: Option<String>| match (machine, tag) {
        (Some(m), _) => json!({"machine": m}),
        (None, t) => json!({"tag": t}),
    };
    match cmd {
        JobsCmd::Run { machine, tag, interpreter, timeout, no_wait, script } => {
            let mut body = target(machine, tag);
            body["action"] = json!({"kind": "script", "interpreter": interpreter, "body": script.join(" ")});
            if let Some(t) = timeout {
                body["timeout_secs"] = json!(t);
            }
            let v = c.ok(Method::POST, "/jobs", Some(body)).await?;
            let ids: Vec<u64> = v["jobs"].as_array().into_iter().flatten().filter_map(|j| j["id"].as_u64()).collect();
            if no_wait || ids.len() != 1 {
                for j in v["jobs"].as_array().into_iter().flatten() {
                    println!("queued job {} on machine {}", j["id"], j["machine_id"]);
                }
                return Ok(());
            }
            let job = wait_job(&c, ids[0]).await?;
            let out = c.ok(Method::GET, &format!("/jobs/{}/output", ids[0]), None).await?;
            print!("{}", out["text"].as_str().unwrap_or_default());
            eprintln!(
                "job {}: {} (exit code {}, {} ms)",
                ids[0],
                s(&job["state"]),
                s(&job["exit_code"]),
                s(&job["duration_ms"])
            );
            if job["state"] != "succeeded" {
                std::process::exit(job["exit_code"].as_i64().map_or(1, |c| c.clamp(1, 255) as i32));
            }
        }
        JobsCmd::Action { machine, tag, action } => {
            let kind = action.replace('-', "_");
            let mut body = target(machine, tag);
            body["action"] = json!({"kind": kind});
            let v = c.ok(Method::POST, "/jobs", Some(body)).await?;
            for j in v["jobs"].as_array().into_iter().flatten() {
                println!("queued job {} on machine {}", j["id"], j["machine_id"]);
            }
        }
        JobsCmd::List { machine, state } => {
            let mut query = Vec::new();
            for (k, v) in [("machine", machine), ("state", state)] {
                if let Some(v) = v {
                    query.push(format!("{k}={}", enc(&v)));
                }
            }
            let v = c.ok(Method::GET, &format!("/jobs?{}", query.join("&")), None).await?;
            println!("{:<6} {:<8} {:<10} {:<8} {:<5} {:<10} ACTION", "ID", "MACHINE", "STATE", "ATTEMPT", "EXIT", "MS");
            for j in v["jobs"].as_array().into_iter().flatten() {
                let action = match j["action"]["kind"].as_str() {
                    Some("script") => j["action"]["body"].as_str().unwrap_or_default().chars().take(50).collect(),
                    other => other.unwrap_or_default().to_string(),
                };
                println!(
                    "{:<6} {:<8} {:<10} {:<8} {:<5} {:<10} {}",
                    s(&j["id"]),
                    s(&j["machine_id"]),
                    s(&j["state"]),
                    s(&j["attempt"]),
                    s(&j["exit_code"]),
                    s(&j["duration_ms"]),
                    action.replace('\n', "; ")
                );
            }
        }
        JobsCmd::Show { id } => {
            let v = c.ok(Method::GET, &format!("/jobs/{id}"), None).await?;
            println!("{}", serde_json::to_string_pretty(&v)?);
        }
        JobsCmd::Output { id, follow } => {
            if follow {
                // Poll the stored output: simple and enough for a terminal (the API also
                // offers server-sent events for UIs).
                let mut printed = 0usize;
                loop {
                    let out = c.ok(Method::GET, &format!("/jobs/{id}/output"), None).await?;
                    let chunks = out["chunks"].as_array().cloned().unwrap_or_default();
                    for ch in chunks.iter().skip(printed) {
                        print!("{}", ch["data"].as_str().unwrap_or_default());
                    }
                    printed = chunks.len();
                    let state = out["job"]["state"].as_str().unwrap_or_default().to_string();
                    if state != "queued" && state != "running" {
                        eprintln!("job {id}: {state} (exit code {})", s(&out["job"]["exit_code"]));
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                }
            } else {
                let out = c.ok(Method::GET, &format!("/jobs/{id}/output"), None).await?;
                print!("{}", out["text"].as_str().unwrap_or_default());
            }
        }
        JobsCmd::Cancel { id } => {
            c.ok(Method::POST, &format!("/jobs/{id}/cancel"), None).await?;
            println!("cancelled job {id}");
        }
    }
    Ok(())
}
async fn wait_job(c: &ApiClient, id: u64) -> anyhow::Result<Value> {
    loop {
        let j = c.ok(Method::GET, &format!("/jobs/{id}"), None).await?;
        if !matches!(j["state"].as_str(), Some("queued" | "running")) {
            return Ok(j);
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
}
