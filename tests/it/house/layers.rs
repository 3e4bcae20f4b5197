//! The crate graph is the architecture, and this test keeps it: every workspace crate has a
//! floor, and a crate's `[dependencies]` name only crates on floors below its own, so a new
//! upward import fails the build's tests instead of closing another circle. A new crate gets a
//! floor here (ARCHITECTURE.md says which).

use std::path::Path;

/// Every crate of the workspace and its floor, bottom to top. `rackboot-agent` is the agent's
/// own program (bootos/agent); the appliance uses its wire types and bundle checks from the
/// ground floor up.
const FLOORS: &[(&str, u8)] = &[
    ("rackboot-agent", 0),
    ("rackboot-base", 0),
    ("rackboot-model", 1),
    ("rackboot-config", 2),
    ("rackboot-kv", 3),
    ("rackboot-store", 4),
    ("rackboot-boot", 5),
    ("rackboot-dhcp", 6),
    ("rackboot-dns", 6),
    ("rackboot-tftp", 6),
    ("rackboot-http", 6),
    ("rackboot-bmc", 6),
    ("rackboot-tang", 6),
    ("rackboot-control", 7),
    ("rackboot-api", 8),
    ("rackboot-ui", 9),
    ("rackboot", 10),
    ("rackboot-storm", 11),
];

fn floor(name: &str) -> u8 {
    FLOORS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f).unwrap_or_else(|| {
        panic!("crate {name} has no floor: add it to FLOORS in tests/it/house/layers.rs (and to ARCHITECTURE.md)")
    })
}

/// The package name and the `rackboot*` crates its `[dependencies]` name.
fn edges(manifest: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = text.parse().unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let name = doc["package"]["name"].as_str().unwrap().to_string();
    let deps: Vec<String> =
        doc.get("dependencies").and_then(|d| d.as_table()).map(|t| t.keys().cloned().collect()).unwrap_or_default();
    (name, deps.into_iter().filter(|d: &String| d.starts_with("rackboot")).collect())
}

#[test]
fn no_crate_names_one_on_its_own_floor_or_above() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut manifests = vec![root.join("Cargo.toml"), root.join("bootos/agent/Cargo.toml")];
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let (name, _) = edges(&dir.join("Cargo.toml"));
        assert_eq!(dir.file_name().unwrap().to_str(), Some(name.as_str()), "a crate's folder is named as the crate");
        manifests.push(dir.join("Cargo.toml"));
    }
    let mut upward = Vec::new();
    for m in &manifests {
        let (name, deps) = edges(m);
        for dep in deps {
            if floor(&dep) >= floor(&name) {
                upward.push(format!("{name} (floor {}) names {dep} (floor {})", floor(&name), floor(&dep)));
            }
        }
    }
    assert!(upward.is_empty(), "upward or sideways edges between crates: {upward:#?}");
}
