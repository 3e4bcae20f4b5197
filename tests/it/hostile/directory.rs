//! A login that tries to talk the directory into letting it in: LDAP filter syntax in the
//! username (a wildcard that would match every entry, a filter closed early and a second one
//! opened), DN syntax (an escape, an extra RDN) and a case trick never find alice or anyone
//! else, whatever the password; alice's own login still works after them.

use crate::api::directory::{ldaps_config, ldif, login};
use crate::common::slapd::Slapd;
use crate::common::Lab;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ldap_syntax_in_the_username_finds_nobody() {
    let Some(slapd) = Slapd::start(&ldif()) else { return };
    let cfg_dir = tempfile::tempdir().unwrap();
    // The login limiter set high, so every try reaches the directory's code (not a 429).
    let limits = "[auth]\nlogin_failures_per_user = 1000\nlogin_failures_per_address = 100000\n";
    let lab = Lab::start(&format!("{limits}{}", ldaps_config(&slapd, cfg_dir.path()))).await;
    let tries =
        ["*", "a*", "*)(uid=*", "alice)(|(uid=*", "*)(|(objectClass=*", "alice\\2a", "alice,ou=people", "ALICE"];
    for user in tries {
        for password in ["alice-password-1", "*", ""] {
            let (s, v) = login(&lab, user, password).await;
            assert!(s == 401 || s == 400, "{user:?}/{password:?}: {s} {v}");
            assert!(v.get("token").is_none(), "{user:?}: {v}");
        }
    }
    assert_eq!(login(&lab, "alice", "alice-password-1").await.0, 200);
}
