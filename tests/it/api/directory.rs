//! Logins from the company's directory against Debian's slapd with TLS (`common::slapd`):
//! directory users log in through `POST /auth/login` and `rackboot login` (LDAPS, found by a
//! search as a service account; StartTLS with a DN pattern), their groups map to roles, a user
//! in no mapped group or with a wrong or empty password is refused, a local account's name is
//! never the directory's;
//! a change of groups takes effect at the user's first request after `recheck_secs`; a directory
//! that does not answer refuses its users (503) while the local admin keeps working.

use std::time::Duration;

use hyper::Method;
use rackboot::client::ApiClient;
use serde_json::{json, Value};

use crate::common::slapd::{Slapd, BASE};
use crate::common::Lab;

pub(crate) const PEOPLE: &str = "ou=people,dc=example,dc=com";
pub(crate) const GROUPS: &str = "ou=groups,dc=example,dc=com";

/// alice (rack-admins), bob (rack-ops), carol (a group nobody maps), a directory `admin`, and the
/// service account.
pub(crate) fn ldif() -> String {
    let person = |uid: &str| {
        format!("dn: uid={uid},{PEOPLE}\nobjectClass: inetOrgPerson\nuid: {uid}\ncn: {uid}\nsn: {uid}\nuserPassword: {uid}-password-1\n\n")
    };
    let group = |cn: &str, member: &str| {
        format!("dn: cn={cn},{GROUPS}\nobjectClass: groupOfNames\ncn: {cn}\nmember: uid={member},{PEOPLE}\n\n")
    };
    format!(
        "dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n\n\
         dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups\n\n\
         dn: cn=rackboot,{BASE}\nobjectClass: organizationalRole\nobjectClass: simpleSecurityObject\ncn: rackboot\nuserPassword: service-password-1\n\n\
         {}{}{}{}{}{}{}{}{}",
        person("alice"),
        person("bob"),
        person("carol"),
        person("admin"),
        person("erin"),
        group("team-c", "erin"),
        group("rack-admins", "alice"),
        group("rack-ops", "bob"),
        group("others", "carol"),
    )
}

/// `[auth.ldap]` for `slapd` over LDAPS, users found by a search as the service account.
pub(crate) fn ldaps_config(slapd: &Slapd, dir: &std::path::Path) -> String {
    let pw = dir.join("ldap-service.pw");
    std::fs::write(&pw, "service-password-1\n").unwrap();
    format!(
        r#"[auth.ldap]
url = "ldaps://127.0.0.1:{port}"
ca_file = "{ca}"
search_base = "{PEOPLE}"
bind_dn = "cn=rackboot,{BASE}"
bind_password_file = "{pw}"
group_base = "{GROUPS}"
recheck_secs = 1
groups = [
  {{ group = "cn=rack-admins,{GROUPS}", role = "admin" }},
  {{ group = "CN=Rack-Ops, {GROUPS}", role = "operator" }},
  {{ group = "cn=team-c,{GROUPS}", role = "operator", pool = "team-c" }},
]
"#,
        port = slapd.ldaps_port,
        ca = slapd.ca().display(),
        pw = pw.display(),
    )
}

pub(crate) fn client(lab: &Lab, token: &str) -> ApiClient {
    ApiClient::new(&lab.https_url(), token.to_string(), lab.ca_pem().as_bytes()).unwrap()
}

/// A login's status and answer.
pub(crate) async fn login(lab: &Lab, user: &str, password: &str) -> (u16, Value) {
    let body = json!({"username": user, "password": password});
    client(lab, "").call(Method::POST, "/auth/login", Some(body)).await.unwrap()
}

async fn logged_in(lab: &Lab, user: &str) -> ApiClient {
    let (s, v) = login(lab, user, &format!("{user}-password-1")).await;
    assert_eq!(s, 200, "{user}: {v}");
    client(lab, v["token"].as_str().unwrap())
}

async fn status(c: &ApiClient, path: &str) -> u16 {
    c.call(Method::GET, path, None).await.unwrap().0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_users_log_in_with_the_roles_their_groups_map_to() {
    let Some(mut slapd) = Slapd::start(&ldif()) else { return };
    let cfg_dir = tempfile::tempdir().unwrap();
    let lab = Lab::start(&ldaps_config(&slapd, cfg_dir.path())).await;

    let alice = logged_in(&lab, "alice").await;
    let who = alice.ok(Method::GET, "/auth/whoami", None).await.unwrap();
    assert_eq!((who["user"].as_str(), who["role"].as_str()), (Some("alice"), Some("admin")), "{who}");
    let users = alice.ok(Method::GET, "/users", None).await.unwrap();
    let a = users["users"].as_array().unwrap().iter().find(|u| u["name"] == "alice").cloned().unwrap();
    assert_eq!(a["directory"]["dn"], format!("uid=alice,{PEOPLE}"), "{a}");
    let bob = logged_in(&lab, "bob").await;
    assert_eq!(bob.ok(Method::GET, "/auth/whoami", None).await.unwrap()["role"], "operator", "a DN compared loosely");
    assert_eq!(status(&bob, "/users").await, 403);

    // A group mapped to a pool: erin acts only in team-c.
    let erin = logged_in(&lab, "erin").await;
    assert_eq!(erin.ok(Method::GET, "/machines", None).await.unwrap()["total"], 0);
    assert_eq!(erin.ok(Method::GET, "/racks", None).await.unwrap()["racks"], json!([]), "no rack of team-c");
    assert_eq!(status(&erin, "/webhooks").await, 403, "webhooks are not a pool user's");
    let users = lab.api.ok(Method::GET, "/users", None).await.unwrap();
    let e = users["users"].as_array().unwrap().iter().find(|u| u["name"] == "erin").cloned().unwrap();
    assert_eq!(e["pools"], json!({"team-c": "operator"}), "{e}");

    // Refused: a group nobody maps, a wrong or empty password, nobody of that name, and the
    // local admin's name with the directory's `admin` password.
    let (s, v) = login(&lab, "carol", "carol-password-1").await;
    assert_eq!(s, 403, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("no directory group"), "{v}");
    for (user, password) in
        [("alice", "alice-password-2"), ("alice", ""), ("dave", "dave-password-1"), ("admin", "admin-password-1")]
    {
        let (s, v) = login(&lab, user, password).await;
        assert_eq!(s, 401, "{user}/{password:?}: {v}");
    }
    let (s, v) =
        lab.api.call(Method::PATCH, "/users/alice", Some(json!({"password": "a-new-password-99"}))).await.unwrap();
    assert_eq!(s, 409, "a directory user's password is the directory's: {v}");

    // `rackboot login`: the password from stdin, the session's token into a file of its own.
    let token = cfg_dir.path().join("bob.token");
    let out = token.to_str().unwrap();
    let (ok, said) = lab.cli_with_input(&["login", "bob", "--out", out], "bob-password-1\n");
    assert!(ok && said.contains("logged in as bob (operator)"), "{said}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token).unwrap().permissions().mode() & 0o777, 0o600);
    let session = client(&lab, std::fs::read_to_string(&token).unwrap().trim());
    assert_eq!(session.ok(Method::GET, "/auth/whoami", None).await.unwrap()["user"], "bob");
    let (ok, said) = lab.cli_with_input(&["login", "bob", "--out", out], "wrong-password\n");
    assert!(!ok && said.contains("wrong username or password"), "{said}");

    // Groups change: alice moves to rack-ops, bob leaves it; at their next request after the
    // recheck period alice acts as an operator and bob's session stops working. An event
    // stream bob holds open ends by itself, with no request of his.
    let mut stream = bob.events("/events/stream", None).await.unwrap();
    let start = tokio::time::timeout(Duration::from_secs(10), stream.next()).await.unwrap().unwrap().unwrap();
    assert_eq!(start.event.as_deref(), Some("stream.start"));
    slapd.modify(&format!(
        "dn: cn=rack-admins,{GROUPS}\nchangetype: modify\nreplace: member\nmember: uid=carol,{PEOPLE}\n\n\
         dn: cn=rack-ops,{GROUPS}\nchangetype: modify\nreplace: member\nmember: uid=alice,{PEOPLE}\n"
    ));
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.next().await {
                Ok(Some(_)) => continue,
                _ => return,
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "bob's open stream ends once the directory says he is out");
    assert_eq!(status(&alice, "/users").await, 403, "alice is an operator now");
    assert_eq!(alice.ok(Method::GET, "/auth/whoami", None).await.unwrap()["role"], "operator");
    assert_eq!(status(&bob, "/machines").await, 401, "bob is in no mapped group any more");
    assert_eq!(login(&lab, "bob", "bob-password-1").await.0, 403);

    // The directory stops answering: its users are refused, the local admin is not.
    slapd.down();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (s, v) = alice.call(Method::GET, "/machines", None).await.unwrap();
    assert_eq!(s, 503, "{v}");
    assert!(v["detail"].as_str().unwrap().contains("the directory did not answer"), "{v}");
    assert_eq!(login(&lab, "alice", "alice-password-1").await.0, 503);
    assert_eq!(status(&lab.api, "/users").await, 200, "the local admin keeps working");
    slapd.up();
    assert_eq!(status(&alice, "/machines").await, 200, "back with the directory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starttls_and_a_dn_pattern_log_in_too() {
    let Some(slapd) = Slapd::start(&ldif()) else { return };
    let cfg = format!(
        r#"[auth.ldap]
url = "ldap://127.0.0.1:{port}"
starttls = true
ca_file = "{ca}"
user_dn = "uid={{user}},{PEOPLE}"
group_base = "{GROUPS}"
groups = [{{ group = "cn=rack-ops,{GROUPS}", role = "operator" }}]
"#,
        port = slapd.ldap_port,
        ca = slapd.ca().display(),
    );
    let lab = Lab::start(&cfg).await;
    let bob = logged_in(&lab, "bob").await;
    assert_eq!(bob.ok(Method::GET, "/auth/whoami", None).await.unwrap()["role"], "operator");
    assert_eq!(login(&lab, "bob", "bob-password-9").await.0, 401);
}
