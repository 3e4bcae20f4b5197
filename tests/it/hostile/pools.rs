//! A pool-scoped user walking the API for another team's machines: a viewer of pool team-a
//! lists only team-a's machines, gets 404 for team-b's (by id or MAC, as for a machine that
//! does not exist: no existence leak), cannot change even their own pool's (403), and is
//! refused every call that does not know pools (users, webhooks, the audit log; what they may
//! reach of racks, events, jobs, tasks and the inventory: `pool_reads`); an operator of team-b changes team-b's machines and no other's.

use hyper::Method;
use serde_json::{json, Value};

use crate::api::directory::{client, login};
use crate::common::Lab;

const A1: &str = "52:54:00:a1:00:01";
const B1: &str = "52:54:00:b1:00:01";

pub(super) async fn scoped(lab: &Lab, name: &str, pools: Value) -> rackboot::client::ApiClient {
    let password = format!("{name}-password-123");
    let user = json!({"name": name, "role": "admin", "password": password, "pools": pools});
    lab.api.ok(Method::POST, "/users", Some(user)).await.unwrap();
    let (s, v) = login(lab, name, &password).await;
    assert_eq!(s, 200, "{v}");
    client(lab, v["token"].as_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_viewer_walking_the_api_sees_only_its_pool() {
    let lab = Lab::start("").await;
    let mut ids = Vec::new();
    for (mac, pool) in [(A1, "team-a"), (B1, "team-b")] {
        let m = lab.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
        lab.api.ok(Method::PUT, &format!("/machines/{mac}/pool"), Some(json!({"pool": pool}))).await.unwrap();
        ids.push(m["id"].as_u64().unwrap());
    }
    let (s, v) = lab
        .api
        .call(
            Method::POST,
            "/users",
            Some(json!({"name": "x", "role": "viewer",
        "password": "x-password-1234", "pools": {"team-a": "admin"}})),
        )
        .await
        .unwrap();
    assert_eq!(s, 400, "a pool grants viewer or operator: {v}");
    // "role": "admin" is given on purpose: a pool-scoped user's global role does not apply.
    let va = scoped(&lab, "va", json!({"team-a": "viewer"})).await;
    let ob = scoped(&lab, "ob", json!({"team-b": "operator"})).await;

    let list = va.ok(Method::GET, "/machines", None).await.unwrap();
    let macs: Vec<&str> = list["machines"].as_array().unwrap().iter().map(|m| m["macs"][0].as_str().unwrap()).collect();
    assert_eq!((macs, list["total"].as_u64()), (vec![A1], Some(1)), "{list}");
    let other = va.ok(Method::GET, "/machines?pool=team-b", None).await.unwrap();
    assert_eq!(other["total"], 0, "asking for another pool finds nothing: {other}");
    // Walking ids and MACs: another pool's machine answers as a missing one does.
    let missing = va.call(Method::GET, "/machines/999999", None).await.unwrap();
    for id in 1..=ids[1] + 2 {
        let (s, v) = va.call(Method::GET, &format!("/machines/{id}"), None).await.unwrap();
        if id == ids[0] {
            assert_eq!(s, 200, "{v}");
        } else {
            assert_eq!(s, missing.0, "machine {id}: {v}");
            assert_eq!(v["title"], missing.1["title"], "{v}");
            let same = |d: &Value, n: &str| d.as_str().unwrap_or_default().replace(n, "N");
            assert_eq!(same(&v["detail"], &id.to_string()), same(&missing.1["detail"], "999999"), "{v}");
        }
    }
    for path in [format!("/machines/{B1}"), format!("/machines/{B1}/events"), format!("/machines/{}/network", ids[1])] {
        assert_eq!(va.call(Method::GET, &path, None).await.unwrap().0, 404, "{path}");
    }
    let (s, v) = va.call(Method::PATCH, &format!("/machines/{A1}"), Some(json!({"tags": ["x"]}))).await.unwrap();
    assert_eq!(s, 403, "a viewer of team-a changes nothing: {v}");
    for path in ["/users", "/webhooks", "/audit"] {
        let (s, v) = va.call(Method::GET, path, None).await.unwrap();
        assert_eq!(s, 403, "{path}: {v}");
    }
    let (s, _) = va.call(Method::POST, "/machines", Some(json!({"macs": ["52:54:00:a1:00:09"]}))).await.unwrap();
    assert_eq!(s, 403);
    assert_eq!(va.ok(Method::GET, "/auth/whoami", None).await.unwrap()["user"], "va");

    // The operator of team-b: its machine yes, team-a's not even seen.
    let (s, v) = ob.call(Method::PATCH, &format!("/machines/{B1}"), Some(json!({"tags": ["ops"]}))).await.unwrap();
    assert_eq!(s, 200, "{v}");
    let (s, _) = ob.call(Method::PATCH, &format!("/machines/{A1}"), Some(json!({"tags": ["ops"]}))).await.unwrap();
    assert_eq!(s, 404);
    let (s, _) = ob.call(Method::PUT, &format!("/machines/{B1}/pool"), Some(json!({"pool": "team-a"}))).await.unwrap();
    assert_eq!(s, 403, "only an admin moves a machine between pools");
    let (s, _) = ob.call(Method::DELETE, &format!("/machines/{A1}"), None).await.unwrap();
    assert_eq!(s, 404);
    assert_eq!(
        lab.api.ok(Method::GET, "/machines", None).await.unwrap()["total"],
        2,
        "nothing of team-a's was touched"
    );

    // Their API tokens: up to the highest role they hold in a pool, acting in each pool with no
    // more than their role there, and with the pools of the user.
    let token = |role: &str| json!({"name": format!("ci-{role}"), "role": role});
    let (s, v) = ob.call(Method::POST, "/tokens", Some(token("admin"))).await.unwrap();
    assert_eq!(s, 403, "{v}");
    assert_eq!(va.call(Method::POST, "/tokens", Some(token("operator"))).await.unwrap().0, 403, "a viewer's");
    let made = ob.ok(Method::POST, "/tokens", Some(token("operator"))).await.unwrap();
    let ci = client(&lab, made["secret"].as_str().unwrap());
    let (s, v) = ci.call(Method::PATCH, &format!("/machines/{B1}"), Some(json!({"tags": ["ci"]}))).await.unwrap();
    assert_eq!(s, 200, "the operator token operates team-b: {v}");
    assert_eq!(ci.call(Method::GET, &format!("/machines/{A1}"), None).await.unwrap().0, 404);
    let made = ob.ok(Method::POST, "/tokens", Some(token("viewer"))).await.unwrap();
    let ro = client(&lab, made["secret"].as_str().unwrap());
    let (s, _) = ro.call(Method::PATCH, &format!("/machines/{B1}"), Some(json!({"tags": ["ro"]}))).await.unwrap();
    assert_eq!(s, 403, "a viewer token of an operator views");
    assert_eq!(ro.ok(Method::GET, "/machines", None).await.unwrap()["total"], 1);
}
