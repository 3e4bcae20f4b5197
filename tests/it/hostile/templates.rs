//! An operator's template that would eat the appliance: a nest of loops (25 million steps, 25 MB
//! of output) as a profile's command line, or as a boot template override, is refused at save
//! with the reason, stored nowhere, and boots go on with what was there; the API answers
//! meanwhile.

use std::time::{Duration, Instant};

use hyper::Method;
use serde_json::json;

use crate::common::*;

const NEST: &str = "{% for i in range(5000) %}{% for j in range(5000) %}x{% endfor %}{% endfor %}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fuel_eating_template_is_refused_at_save() {
    let lab = Lab::start("").await;
    let profile = json!({"kernel": "k", "initrd": "i", "cmdline": NEST});
    let started = Instant::now();
    let (status, p) = lab.api.call(Method::PUT, "/profiles/fuel", Some(profile)).await.unwrap();
    assert_eq!((status, p["field"].as_str()), (400, Some("cmdline")), "{p}");
    assert!(p.to_string().contains("steps to render"), "the reason is given: {p}");
    assert!(started.elapsed() < Duration::from_secs(5), "refused in {:?}", started.elapsed());
    let all = lab.api.ok(Method::GET, "/profiles", None).await.unwrap();
    assert!(!all.to_string().contains("\"fuel\""), "nothing stored: {all}");

    // A list printed a thousand times: the output bound.
    let wide =
        json!({"kernel": "k", "initrd": "i", "cmdline": "{% for i in range(1000) %}{{ range(50000) }}{% endfor %}"});
    let (status, p) = lab.api.call(Method::PUT, "/profiles/wide", Some(wide)).await.unwrap();
    assert_eq!(status, 400, "{p}");
    assert!(p.to_string().contains("output would be over"), "{p}");

    // The same as a boot template override.
    let t = lab.api.ok(Method::GET, "/templates/profile.ipxe", None).await.unwrap();
    let text = format!("{}{NEST}\n", t["default_text"].as_str().unwrap());
    let (status, p) = lab.api.call(Method::PUT, "/templates/profile.ipxe", Some(json!({"text": text}))).await.unwrap();
    assert_eq!(status, 400, "{p}");
    let t = lab.api.ok(Method::GET, "/templates/profile.ipxe", None).await.unwrap();
    assert_eq!(t["source"], "default", "nothing stored: {t}");
    lab.api.ok(Method::GET, "/machines", None).await.unwrap();
}
