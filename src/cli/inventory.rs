//! `rackboot inventory --ansible`: the CMDB as Ansible's dynamic inventory. It is the inventory
//! script itself: Ansible runs it with `--list`, or `--host NAME` for one host's variables.

use clap::Args;
use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

#[derive(Args)]
pub struct InventoryArgs {
    /// Ansible's dynamic-inventory JSON (groups rack_*, state_*, tag_*, profile_*; host
    /// variables ansible_host and rackboot_*).
    #[arg(long, required = true)]
    ansible: bool,
    /// Every group, and every host with its variables (the default; what Ansible asks first).
    #[arg(long, conflicts_with = "host")]
    list: bool,
    /// One host's variables (`{}` for a host it does not know).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
}

pub async fn inventory(api: ApiClient, args: InventoryArgs) -> anyhow::Result<()> {
    let all = api.ok(Method::GET, "/inventory/ansible", None).await?;
    println!("{}", serde_json::to_string_pretty(&answer(all, args.host.as_deref()))?);
    Ok(())
}

/// The whole inventory, or one host's variables.
fn answer(mut all: Value, host: Option<&str>) -> Value {
    match host {
        Some(h) => all["_meta"]["hostvars"].get_mut(h).map(Value::take).unwrap_or_else(|| json!({})),
        None => all,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_asks_for_one_hosts_variables() {
        let all = json!({"_meta": {"hostvars": {"web-01": {"ansible_host": "198.18.0.60"}}}, "all": {}});
        assert_eq!(answer(all.clone(), Some("web-01")), json!({"ansible_host": "198.18.0.60"}));
        assert_eq!(answer(all.clone(), Some("nobody")), json!({}));
        assert_eq!(answer(all.clone(), None), all);
    }
}
