//! The provisioning pages of the web UI over raw HTTPS (no browser): boot profiles with their
//! rendered preview (which saves nothing), saving through the API's checks (a refusal keeps the
//! form and stores nothing; a config profile stays read-only; a viewer cannot save), tasks and
//! their runs, and leases. No root needed.

use crate::common::appliance::Appliance;
use crate::raw::{login_as, raw, FORM};
use hyper::Method;
use serde_json::json;

fn enc(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn form(fields: &[(&str, &str)]) -> String {
    fields.iter().map(|(k, v)| format!("{k}={}", enc(v))).collect::<Vec<_>>().join("&")
}

async fn api_profiles(app: &Appliance) -> Vec<String> {
    let list = app.get("/profiles").await;
    list["profiles"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn profiles_preview_without_saving_and_save_through_the_api() {
    let app = Appliance::start("").await;
    let (cookie, csrf) = login_as(&app, "olga", "admin").await;
    let c = ("cookie", cookie.as_str());
    let (status, page) = raw(&app, "GET", "/ui/profiles", &[c], "").await;
    assert_eq!(status, 200);
    assert!(page.contains("discovery") && page.contains("the config file (read-only)"), "{page}");

    // Preview: the script a sample machine would get, rendered; nothing stored.
    let new = [
        ("csrf", csrf.as_str()),
        ("name", "debian-inst"),
        ("kernel", "d-i/linux"),
        ("initrd", "d-i/initrd.gz"),
        ("cmdline", "auto url={{ answer_url }} hostname={{ hostname }}"),
        ("answer", "preseed"),
        ("action", "preview"),
    ];
    let (status, page) = raw(&app, "POST", "/ui/profiles", &[c, FORM], &form(&new)).await;
    assert_eq!(status, 200, "{page}");
    let preview = page.split("id=\"preview\">").nth(1).expect("a preview").split("</pre>").next().unwrap();
    let preview = preview.replace("&#x2f;", "/");
    assert!(preview.contains("d-i/linux") && preview.contains("initrd.gz"), "{preview}");
    assert!(
        preview.contains("/boot/answer/preseed/no-token?mac=52:54:00:00:00:00") && preview.contains("hostname=sample"),
        "{preview}"
    );
    assert!(!api_profiles(&app).await.contains(&"debian-inst".to_string()), "a preview saved the profile");

    // A command line that does not render: the preview says why.
    let mut broken = new;
    broken[4].1 = "auto url={{ nope }}";
    let (status, page) = raw(&app, "POST", "/ui/profiles", &[c, FORM], &form(&broken)).await;
    assert!(status == 400 && page.contains("The preview failed") && page.contains("nope"), "{page}");

    // Save: through the API, which refuses what it refuses and keeps the form filled.
    let mut bad = new;
    bad[5].1 = "cloud-config";
    bad[6].1 = "save";
    let (status, page) = raw(&app, "POST", "/ui/profiles", &[c, FORM], &form(&bad)).await;
    assert!(
        status == 400 && page.contains("The profile was not saved") && page.contains("d-i&#x2f;initrd.gz"),
        "{page}"
    );
    assert!(!api_profiles(&app).await.contains(&"debian-inst".to_string()));
    let mut save = new;
    save[6].1 = "save";
    let (status, resp) = raw(&app, "POST", "/ui/profiles", &[c, FORM], &form(&save)).await;
    assert!(status == 303 && resp.contains("location: /ui/profiles/debian-inst?saved=1"), "{resp}");
    assert!(api_profiles(&app).await.contains(&"debian-inst".to_string()));
    let (_, page) = raw(&app, "GET", "/ui/profiles/debian-inst?saved=1", &[c], "").await;
    assert!(page.contains("Saved.") && page.contains("id=\"preview\""), "{page}");
    let audit = app.get("/audit?limit=10").await;
    assert!(audit.to_string().contains("/profiles/{name}"), "the save is audited: {audit}");

    // The config's profile stays read-only; a missing one is 404; a foreign CSRF token is refused.
    let edit = form(&[("csrf", &csrf), ("kernel", "x"), ("initrd", "y"), ("cmdline", ""), ("action", "save")]);
    let (status, page) = raw(&app, "POST", "/ui/profiles/discovery", &[c, FORM], &edit).await;
    assert!(status == 400 && page.contains("config file"), "{page}");
    assert_eq!(raw(&app, "GET", "/ui/profiles/nothing-here", &[c], "").await.0, 404);
    let forged = form(&[("csrf", "forged"), ("name", "x2"), ("kernel", "k"), ("initrd", "i"), ("action", "save")]);
    assert_eq!(raw(&app, "POST", "/ui/profiles", &[c, FORM], &forged).await.0, 403);
    assert!(!api_profiles(&app).await.contains(&"x2".to_string()));

    // A viewer sees no Save button and is refused by the API anyway.
    let (vcookie, vcsrf) = login_as(&app, "vera", "viewer").await;
    let v = ("cookie", vcookie.as_str());
    let (_, page) = raw(&app, "GET", "/ui/profiles/debian-inst", &[v], "").await;
    assert!(page.contains("id=\"p-preview\"") && !page.contains("id=\"p-save\""), "{page}");
    let viewer_save = form(&[("csrf", &vcsrf), ("name", "v1"), ("kernel", "k"), ("initrd", "i"), ("action", "save")]);
    assert_eq!(raw(&app, "POST", "/ui/profiles", &[v, FORM], &viewer_save).await.0, 403);
    assert!(!api_profiles(&app).await.contains(&"v1".to_string()));
}

#[tokio::test]
async fn tasks_runs_and_leases_pages() {
    let post = tempfile::tempdir().unwrap();
    let app = Appliance::start(&crate::common::provision::config(post.path())).await;
    let images = app.dir.path().join("boot/images");
    std::fs::create_dir_all(&images).unwrap();
    std::fs::write(images.join("lab.img"), vec![3u8; 4096]).unwrap();
    let mac = "52:54:00:bc:00:01";
    app.api.ok(Method::POST, "/machines", Some(json!({"macs": [mac]}))).await.unwrap();
    let spec = json!({"select": {"macs": [mac]}, "image": "lab.img", "hostname_pattern": "tpage-{n:02}"});
    let task = app.api.ok(Method::POST, "/tasks", Some(spec)).await.unwrap()["task"]["id"].as_u64().unwrap();

    let (cookie, _) = login_as(&app, "otto", "operator").await;
    let c = ("cookie", cookie.as_str());
    let (status, page) = raw(&app, "GET", "/ui/tasks", &[c], "").await;
    assert_eq!(status, 200);
    assert!(page.contains(&format!("href=\"/ui/tasks/{task}\"")) && page.contains("image lab.img"), "{page}");
    let (status, page) = raw(&app, "GET", &format!("/ui/tasks/{task}"), &[c], "").await;
    assert_eq!(status, 200);
    assert!(page.contains("tpage-01") && page.contains("wait_agent") && page.contains("state-active"), "{page}");
    assert!(page.contains("&quot;image&quot;: &quot;lab.img&quot;"), "the spec is shown, escaped: {page}");
    assert_eq!(raw(&app, "GET", "/ui/tasks/999", &[c], "").await.0, 404);
    assert_eq!(raw(&app, "GET", "/ui/tasks/abc", &[c], "").await.0, 404);

    let (status, page) = raw(&app, "GET", "/ui/leases", &[c], "").await;
    assert!(status == 200 && page.contains("No lease."), "{page}");
    assert_eq!(raw(&app, "GET", "/ui/leases?after=not-an-ip", &[c], "").await.0, 400);
    assert_eq!(raw(&app, "GET", "/ui/tasks", &[], "").await.0, 303, "no session, no page");
}
