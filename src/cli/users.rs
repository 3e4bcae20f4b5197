//! `rackboot users`, `rackboot tokens` and `rackboot audit`: people, their API tokens and the
//! audit log through the REST API. Passwords are read from stdin or a prompt, never an argument.

use std::io::{BufRead, IsTerminal};

use super::*;

#[derive(Subcommand)]
pub(super) enum UsersCmd {
    /// List users and their roles.
    List,
    /// Add a user; the password is read from stdin (one line) or prompted for.
    #[command(
        after_help = "Examples:\n  rackboot users add alice --role operator\n  pwgen -s 24 1 | tee alice.pw | rackboot users add alice --role viewer"
    )]
    Add {
        /// Username: 1-64 of a-z, 0-9, '.', '_', '-'.
        name: String,
        /// viewer (reads), operator (also machines, tasks, jobs, profiles) or admin.
        #[arg(long)]
        role: String,
        /// A role in one resource pool, POOL=ROLE (viewer or operator; repeatable): the user
        /// then acts only on those pools' machines and --role does not apply.
        #[arg(long = "pool", value_name = "POOL=ROLE")]
        pools: Vec<String>,
    },
    /// Change a user's role, password (--password: read from stdin or prompted) or state.
    Set {
        name: String,
        #[arg(long)]
        role: Option<String>,
        /// Set a new password, read from stdin (one line) or prompted for.
        #[arg(long)]
        password: bool,
        /// Disable the user: they cannot log in and their tokens stop working.
        #[arg(long, conflicts_with = "enable")]
        disable: bool,
        /// Enable a disabled user.
        #[arg(long)]
        enable: bool,
        /// Replace the user's pool roles with these, POOL=ROLE (repeatable).
        #[arg(long = "pool", value_name = "POOL=ROLE")]
        pools: Vec<String>,
        /// Remove every pool role: the user is global again.
        #[arg(long, conflicts_with = "pools")]
        no_pools: bool,
    },
    /// Delete a user and every token of theirs.
    Delete { name: String },
}

#[derive(Subcommand)]
pub(super) enum TokensCmd {
    /// List tokens (yours; an admin sees everyone's). Secrets are never shown again.
    List {
        /// Only this user's.
        #[arg(long)]
        user: Option<String>,
    },
    /// Create an API token of yours and print it once to stdout.
    #[command(after_help = "Example:\n  rackboot tokens create ci --role viewer --ttl 86400 > ci.token")]
    Create {
        /// What it is for, e.g. ci.
        name: String,
        /// viewer, operator or admin; default (and at most): your own.
        #[arg(long)]
        role: Option<String>,
        /// Lifetime in seconds; default: it does not expire.
        #[arg(long, value_name = "SECS")]
        ttl: Option<u64>,
    },
    /// Revoke a token by id: it stops working at once.
    Revoke { id: String },
}

/// Filters of `rackboot audit`.
#[derive(Args)]
pub(super) struct AuditArgs {
    /// Only this user's calls (`-`: unauthenticated ones).
    #[arg(long)]
    user: Option<String>,
    /// Only this method, e.g. DELETE.
    #[arg(long)]
    method: Option<String>,
    /// Only this HTTP status.
    #[arg(long)]
    status: Option<u16>,
    /// Only ok, denied (401/403), limited (429) or failed calls.
    #[arg(long)]
    outcome: Option<String>,
    /// Only calls that acted on something in this resource pool.
    #[arg(long)]
    pool: Option<String>,
    /// Only entries at or after this moment (Unix milliseconds).
    #[arg(long, value_name = "MS")]
    since: Option<u64>,
    /// Only entries before this moment (Unix milliseconds).
    #[arg(long, value_name = "MS")]
    until: Option<u64>,
    /// Print at most this many entries, newest first.
    #[arg(long, default_value_t = 100)]
    limit: usize,
}

/// `POOL=ROLE` arguments as the API's `pools` object.
fn pool_roles(args: &[String]) -> anyhow::Result<Value> {
    let mut m = serde_json::Map::new();
    for a in args {
        let (pool, role) = a.split_once('=').with_context(|| format!("--pool {a:?} is not POOL=ROLE"))?;
        m.insert(pool.trim().to_string(), json!(role.trim()));
    }
    Ok(Value::Object(m))
}

/// Reads a password: one line from stdin when it is not a terminal, else a prompt (twice).
fn read_password(what: &str) -> anyhow::Result<String> {
    if !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\n', '\r']).to_string());
    }
    let first = rpassword::prompt_password(format!("password for {what}: "))?;
    let again = rpassword::prompt_password("again: ")?;
    anyhow::ensure!(first == again, "the passwords differ");
    Ok(first)
}

/// Logs `user` in and writes the session's token to `out` (0600).
pub(super) async fn login(c: ApiClient, user: &str, out: &std::path::Path, ttl: Option<u64>) -> anyhow::Result<()> {
    let password = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(format!("password for {user}: "))?
    } else {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        line.trim_end_matches(['\n', '\r']).to_string()
    };
    let mut body = json!({"username": user, "password": password});
    if let Some(ttl) = ttl {
        body["ttl_secs"] = json!(ttl);
    }
    let v = c.ok(Method::POST, "/auth/login", Some(body)).await?;
    save_session(&v, out)
}

/// Logs in through the company's OpenID provider (the device authorization flow): shows where
/// to enter the code, then waits until the user has logged in there.
pub(super) async fn login_sso(c: ApiClient, out: &std::path::Path) -> anyhow::Result<()> {
    let v = c.ok(Method::POST, "/auth/oidc/device", None).await?;
    let handle = v["handle"].as_str().context("the answer has no handle")?.to_string();
    let url = v["verification_uri_complete"].as_str().or(v["verification_uri"].as_str()).unwrap_or("");
    eprintln!(
        "Open {url}\nand enter the code {} (within {} minutes); waiting for the login there...",
        s(&v["user_code"]),
        v["expires_in"].as_u64().unwrap_or(600) / 60
    );
    let mut interval = v["interval"].as_u64().unwrap_or(5).clamp(1, 60);
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(interval)).await;
        let (status, v) = c.call(Method::POST, "/auth/oidc/device/token", Some(json!({"handle": handle}))).await?;
        match status {
            200 => return save_session(&v, out),
            202 => interval = v["interval"].as_u64().unwrap_or(interval).clamp(1, 60),
            _ => anyhow::bail!("the login was refused ({status}): {}", s(&v["detail"])),
        }
    }
}

/// Writes a new session's token to `out` (mode 0600) and says who it is.
fn save_session(v: &Value, out: &std::path::Path) -> anyhow::Result<()> {
    let token = v["token"].as_str().context("the login's answer has no token")?;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(out)
        .with_context(|| format!("writing the token to {}", out.display()))?;
    f.write_all(format!("{token}\n").as_bytes())?;
    println!(
        "logged in as {} ({}); session {} in {}: use --token-file {}",
        s(&v["user"]),
        s(&v["role"]),
        s(&v["id"]),
        out.display(),
        out.display()
    );
    Ok(())
}

pub(super) async fn users(c: ApiClient, cmd: UsersCmd) -> anyhow::Result<()> {
    match cmd {
        UsersCmd::List => {
            let v = c.ok(Method::GET, "/users", None).await?;
            println!("{:<24} {:<9} {:<9} FROM", "NAME", "ROLE", "STATE");
            for u in v["users"].as_array().into_iter().flatten() {
                let state = match (u["disabled"] == true, u["directory"]["mapped"] == false) {
                    (true, _) => "disabled",
                    (false, true) => "unmapped",
                    (false, false) => "enabled",
                };
                let from = match (u["directory"]["kind"].as_str(), u["directory"]["dn"].as_str()) {
                    (Some("oidc"), Some(subject)) => format!("openid {subject}"),
                    (_, Some(dn)) => format!("directory {dn}"),
                    _ => "local".to_string(),
                };
                let role = match u["pools"].as_object().filter(|p| !p.is_empty()) {
                    Some(p) => p.iter().map(|(k, v)| format!("{k}={}", s(v))).collect::<Vec<_>>().join(","),
                    None => s(&u["role"]),
                };
                println!("{:<24} {:<9} {state:<9} {from}", s(&u["name"]), role);
            }
        }
        UsersCmd::Add { name, role, pools } => {
            let pools = pool_roles(&pools)?;
            let password = read_password(&name)?;
            let body = json!({"name": name, "role": role, "password": password, "pools": pools});
            c.ok(Method::POST, "/users", Some(body)).await?;
            println!("added user {name} ({role})");
        }
        UsersCmd::Set { name, role, password, disable, enable, pools, no_pools } => {
            let mut body = serde_json::Map::new();
            if !pools.is_empty() || no_pools {
                body.insert("pools".into(), pool_roles(&pools)?);
            }
            if let Some(r) = role {
                body.insert("role".into(), json!(r));
            }
            if password {
                body.insert("password".into(), json!(read_password(&name)?));
            }
            if disable || enable {
                body.insert("disabled".into(), json!(disable));
            }
            anyhow::ensure!(
                !body.is_empty(),
                "nothing to change: give --role, --password, --disable, --enable, --pool or --no-pools"
            );
            let u = c.ok(Method::PATCH, &format!("/users/{}", enc(&name)), Some(Value::Object(body))).await?;
            println!(
                "user {name}: role {}, {}",
                s(&u["role"]),
                if u["disabled"] == true { "disabled" } else { "enabled" }
            );
        }
        UsersCmd::Delete { name } => {
            c.ok(Method::DELETE, &format!("/users/{}", enc(&name)), None).await?;
            println!("deleted user {name} and its tokens");
        }
    }
    Ok(())
}

pub(super) async fn tokens(c: ApiClient, cmd: TokensCmd) -> anyhow::Result<()> {
    match cmd {
        TokensCmd::List { user } => {
            let q = user.map(|u| format!("?user={}", enc(&u))).unwrap_or_default();
            let v = c.ok(Method::GET, &format!("/tokens{q}"), None).await?;
            println!(
                "{:<16} {:<16} {:<9} {:<20} {:<14} {:<14} LAST_USED_MS",
                "ID", "USER", "ROLE", "NAME", "CREATED_MS", "EXPIRES_MS"
            );
            for t in v["tokens"].as_array().into_iter().flatten() {
                println!(
                    "{:<16} {:<16} {:<9} {:<20} {:<14} {:<14} {}",
                    s(&t["id"]),
                    s(&t["user"]),
                    s(&t["role"]),
                    s(&t["name"]),
                    s(&t["created_ms"]),
                    s(&t["expires_ms"]),
                    s(&t["last_used_ms"])
                );
            }
        }
        TokensCmd::Create { name, role, ttl } => {
            let v = c.ok(Method::POST, "/tokens", Some(json!({"name": name, "role": role, "ttl_secs": ttl}))).await?;
            let t = &v["token"];
            eprintln!("token {} ({}, role {}); it is shown only now", s(&t["id"]), s(&t["name"]), s(&t["role"]));
            // The point of the command: the secret, once, alone on stdout.
            println!("{}", s(&v["secret"]));
        }
        TokensCmd::Revoke { id } => {
            c.ok(Method::DELETE, &format!("/tokens/{}", enc(&id)), None).await?;
            println!("revoked token {id}");
        }
    }
    Ok(())
}

pub(super) async fn audit(c: ApiClient, a: AuditArgs) -> anyhow::Result<()> {
    let AuditArgs { user, method, status, outcome, pool, since, until, limit } = a;
    let mut query = vec![format!("limit={}", limit.clamp(1, 10_000))];
    for (k, v) in [("user", user), ("method", method), ("outcome", outcome), ("pool", pool)] {
        if let Some(v) = v {
            query.push(format!("{k}={}", enc(&v)));
        }
    }
    for (k, v) in [("status", status.map(u64::from)), ("since", since), ("until", until)] {
        if let Some(v) = v {
            query.push(format!("{k}={v}"));
        }
    }
    let (mut printed, mut cursor) = (0, None::<String>);
    println!(
        "{:>7} {:<13} {:<16} {:<16} {:<15} {:<6} {:<30} {:>6} {:<16} PARAMS",
        "SEQ", "AT_MS", "USER", "TOKEN", "FROM", "METHOD", "ROUTE", "STATUS", "POOLS"
    );
    while printed < limit {
        let c_q = cursor.as_ref().map(|c| format!("&cursor={c}")).unwrap_or_default();
        let v = c.ok(Method::GET, &format!("/audit?{}{c_q}", query.join("&")), None).await?;
        for e in v["entries"].as_array().into_iter().flatten().take(limit - printed) {
            let params: Vec<String> =
                e["params"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={}", s(v))).collect();
            let pools: Vec<String> = e["pools"].as_array().into_iter().flatten().map(s).collect();
            let pools = if pools.is_empty() { "-".to_string() } else { pools.join(",") };
            println!(
                "{:>7} {:<13} {:<16} {:<16} {:<15} {:<6} {:<30} {:>6} {:<16} {}",
                s(&e["seq"]),
                s(&e["at_ms"]),
                s(&e["user"]),
                s(&e["token"]),
                s(&e["from"]),
                s(&e["method"]),
                s(&e["route"]),
                s(&e["status"]),
                pools,
                params.join(",")
            );
            printed += 1;
        }
        match v["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    Ok(())
}
