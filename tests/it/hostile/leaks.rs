//! What a caller who has proven nothing learns when the store is down: that the appliance
//! cannot answer, never where its database lives. PostgreSQL (a throwaway cluster) is stopped
//! hard; a forged API token, a forged agent credential, a login and /healthz each get 503 with a body
//! that names no host, socket or database. Skips without PostgreSQL.

use hyper::Method;
use serde_json::json;

use crate::common::appliance::Appliance;
use crate::common::https_get_with;
use crate::pg;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_caller_learns_nothing_of_the_store_from_a_503() {
    let Some(pg) = pg::Cluster::start() else {
        eprintln!("skipped: PostgreSQL server binaries not found (apt-get install postgresql)");
        return;
    };
    let a = Appliance::start(&pg.store()).await;
    let app = a.app.as_ref().unwrap();
    pg.set("down");
    let secret_parts = ["rackboot-pg", "postgres", "PostgreSQL", "database", "/tmp/"]; // the last: the socket's directory
    let clean = |what: &str, status: u16, body: &str| {
        assert_eq!(status, 503, "{what}: {body}");
        for part in secret_parts {
            assert!(!body.contains(part), "{what} tells {part:?}: {body}");
        }
    };

    let (status, body) =
        https_get_with(app.https_addr, &app.ca_pem, "/api/v1/machines", Some("rbt_0123456789abcdef_forgedsecret"))
            .await;
    clean("a forged API token", status, &body);

    let mut agent = rackboot_agent::client::Client::new(&a.url(), &a.trust()).unwrap();
    agent.credential = Some("4242.forged".into());
    let r = agent.call::<()>(Method::GET, "/agent/v1/jobs/next?wait=0", None, std::time::Duration::from_secs(5));
    let r = r.await.unwrap();
    clean("a forged agent credential", r.status, &String::from_utf8_lossy(&r.body));

    let login = json!({"username": "admin", "password": "guess"});
    let mut plain = rackboot_agent::client::Client::new(&a.url(), &a.trust()).unwrap();
    let r = plain.call(Method::POST, "/api/v1/auth/login", Some(&login), std::time::Duration::from_secs(5)).await;
    let r = r.unwrap();
    clean("a login", r.status, &String::from_utf8_lossy(&r.body));

    // Once the appliance knows the store is down, /healthz says so, without naming it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let health = loop {
        let (status, body) = https_get_with(app.https_addr, &app.ca_pem, "/healthz", None).await;
        if body.contains("changes cannot be stored") {
            assert_eq!(status, 503, "{body}");
            break body;
        }
        assert!(std::time::Instant::now() < deadline, "/healthz never reported the store: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    for part in &secret_parts[..4] {
        assert!(!health.contains(part), "/healthz tells {part:?}: {health}");
    }
    pg.set("up");
}
