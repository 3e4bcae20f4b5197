//! `rackboot tang`: the Tang server encrypted file systems are bound to (admin): its keys, the
//! machines bound to them, and rotation (a new key; re-bind jobs on the bound machines).

use super::*;

#[derive(Subcommand)]
pub(super) enum TangCmd {
    /// The keys (the advertised one last), their thumbprints and the machines bound to each.
    Keys,
    /// Which machines' encrypted volumes are bound to which key, and re-binds under way.
    Bindings,
    /// Make a new key the advertised one and queue a re-bind job on every installed machine
    /// bound to an older one; an older key is deleted once nobody is bound to it.
    Rotate,
}

pub(super) async fn tang(c: ApiClient, cmd: TangCmd) -> anyhow::Result<()> {
    match cmd {
        TangCmd::Keys => {
            let v = c.ok(Method::GET, "/tang/keys", None).await?;
            println!("url: {}", s(&v["url"]));
            println!("{:>4} {:<10} {:<44} {:<44} BOUND", "ID", "STATE", "KID (EXCHANGE)", "THP (SIGNING)");
            for k in v["keys"].as_array().into_iter().flatten() {
                let state = if k["active"] == true { "advertised" } else { "rotated" };
                println!(
                    "{:>4} {state:<10} {:<44} {:<44} {}",
                    k["id"],
                    s(&k["thumbprint"]),
                    s(&k["signing_thumbprint"]),
                    k["bound_machines"]
                );
            }
        }
        TangCmd::Bindings => {
            let v = c.ok(Method::GET, "/tang/bindings", None).await?;
            println!("{:>8} {:>4} {:<10} VOLUMES", "MACHINE", "KEY", "REBIND");
            for b in v["bindings"].as_array().into_iter().flatten() {
                let rebind = match (&b["rebind_job"], &b["rebind_error"]) {
                    (Value::Number(j), _) => format!("job {j}"),
                    (_, Value::String(e)) => format!("failed: {e}"),
                    _ => "-".into(),
                };
                let volumes: Vec<&str> =
                    b["volumes"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                println!("{:>8} {:>4} {rebind:<10} {}", b["machine"], b["key"], volumes.join(" "));
            }
        }
        TangCmd::Rotate => {
            let v = c.ok(Method::POST, "/tang/rotate", None).await?;
            println!("key {} is advertised now (kid {})", v["key"]["id"], s(&v["key"]["thumbprint"]));
            for j in v["jobs"].as_array().into_iter().flatten() {
                println!("machine {}: re-bind job {}", j["machine"], j["job"]);
            }
        }
    }
    Ok(())
}
