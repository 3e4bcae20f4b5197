//! What is shipped for Prometheus and Grafana (dist/prometheus/): `promtool check rules` accepts
//! the alert rules and `promtool test rules` runs their unit tests (each alert fires on the series
//! that should wake someone, and not on a healthy appliance's); every query of the Grafana
//! dashboard parses (checked by promtool as a recording rule). That the metrics they name are
//! exported is checked against a live appliance in `api::openapi_health_and_metrics_are_served`.
//! Skips where promtool (Debian's prometheus package) is missing.

use std::process::Command;

#[test]
fn promtool_accepts_the_rules_and_their_unit_tests_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/prometheus");
    if Command::new("promtool").arg("--version").output().is_err() {
        eprintln!("skipped: no promtool (apt-get install prometheus)");
        return;
    }
    for args in [["check", "rules", "rackboot-rules.yml"], ["test", "rules", "rackboot-rules.test.yml"]] {
        let out = Command::new("promtool").args(args).current_dir(dir).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("SUCCESS"), "promtool {}: {text}", args.join(" "));
    }
}

#[test]
fn every_dashboard_query_is_valid_promql() {
    if Command::new("promtool").arg("--version").output().is_err() {
        eprintln!("skipped: no promtool (apt-get install prometheus)");
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dist/prometheus/rackboot-dashboard.json");
    let dash: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    let mut n = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap().replace("$instance", ".*");
            rules +=
                &format!("      - record: dashboard:q{n}\n        expr: {}\n", serde_json::to_string(&expr).unwrap());
            n += 1;
        }
    }
    assert!(n >= 10, "{n} queries");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("q.yml"), rules).unwrap();
    let out = Command::new("promtool").args(["check", "rules", "q.yml"]).current_dir(dir.path()).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains(&format!("SUCCESS: {n} rules found")), "{text}");
}
