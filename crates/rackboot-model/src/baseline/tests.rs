use super::*;

const IMG: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn component(component: Component, version: &str, matches: Option<&str>) -> BaselineComponent {
    BaselineComponent {
        component,
        version: version.into(),
        image: format!("sha256:{IMG}"),
        matches: matches.map(Into::into),
        plugin: None,
    }
}

fn item(id: &str, name: &str, version: Option<&str>) -> FirmwareItem {
    FirmwareItem {
        id: id.into(),
        name: name.into(),
        version: version.map(Into::into),
        updateable: Some(true),
        health: None,
        path: Some(format!("/redfish/v1/UpdateService/FirmwareInventory/{id}")),
    }
}

fn baseline() -> Baseline {
    Baseline {
        name: "r650".into(),
        components: vec![
            component(Component::Bios, "1.1.0", None),
            component(Component::Bmc, "7.10.30.00", None),
            component(Component::Nic, "22.31.6", Some("ConnectX")),
            component(Component::Storage, "52.26.0", None),
        ],
    }
}

#[test]
fn a_machine_never_read_is_unknown_and_one_on_the_baseline_is_current() {
    let b = baseline();
    let d = drift(&b, None);
    assert_eq!(d.standing, Standing::Unknown);
    assert!(d.components.iter().all(|c| c.standing == Standing::Unknown && c.found.is_empty()));
    let report = FirmwareReport {
        read_at_ms: 5,
        bios_version: Some("1.1.0".into()),
        inventory: Some(vec![
            item("iDRAC.Embedded.1", "Integrated Dell Remote Access Controller", Some("7.10.30.00")),
            item("NIC.Slot.1", "Mellanox ConnectX-6 Lx", Some("v22.31.6")),
            item("NIC.Slot.2", "Mellanox ConnectX-6 Lx", Some("22.31.6")),
            item("RAID.SL.3-1", "PERC H755 Front", Some("52.26.0")),
        ]),
        ..Default::default()
    };
    let d = drift(&b, Some(&report));
    assert_eq!(d.standing, Standing::Current, "{d:#?}");
    assert_eq!(d.components[2].found.len(), 2, "both ConnectX ports are the NIC component");
    assert_eq!(d.read_at_ms, Some(5));
    assert_eq!(d.drifting().count(), 0);
}

#[test]
fn one_entry_behind_is_drift_naming_it_and_a_missing_kind_is_unknown() {
    let b = baseline();
    let report = FirmwareReport {
        bios_version: Some("1.0.0".into()),
        inventory: Some(vec![
            item("iDRAC.Embedded.1", "Integrated Dell Remote Access Controller", Some("7.10.30.00")),
            item("NIC.Slot.1", "Mellanox ConnectX-6 Lx", Some("22.31.6")),
            item("NIC.Slot.2", "Mellanox ConnectX-6 Lx", Some("22.30.1")),
        ]),
        ..Default::default()
    };
    let d = drift(&b, Some(&report));
    assert_eq!(d.standing, Standing::Drift);
    let by: Vec<(Component, Standing)> = d.components.iter().map(|c| (c.component, c.standing)).collect();
    assert_eq!(
        by,
        [
            (Component::Bios, Standing::Drift),
            (Component::Bmc, Standing::Current),
            (Component::Nic, Standing::Drift),
            (Component::Storage, Standing::Unknown),
        ]
    );
    assert_eq!(d.components[0].found[0].path, None, "the BIOS version is the system's, no inventory path");
    assert_eq!(d.drifting().map(|c| c.component).collect::<Vec<_>>(), [Component::Bios, Component::Nic]);
    assert_eq!(d.components[0].image, IMG);
}

#[test]
fn a_bios_without_a_system_version_is_found_in_the_inventory() {
    let b = Baseline { name: "x".into(), components: vec![component(Component::Bios, "2.19.1", None)] };
    let report = FirmwareReport {
        inventory: Some(vec![item("BIOS", "BIOS", Some("2.18.0")), item("Bmc", "BMC", Some("1"))]),
        ..Default::default()
    };
    let d = drift(&b, Some(&report));
    assert_eq!(d.standing, Standing::Drift);
    assert_eq!(d.components[0].found.len(), 1);
    assert_eq!(d.components[0].found[0].path.as_deref(), Some("/redfish/v1/UpdateService/FirmwareInventory/BIOS"));
}

#[test]
fn versions_compare_as_operators_write_them() {
    assert!(same_version("v2.1.0", "2.1.0"));
    assert!(same_version(" 2.1.0 ", "2.1.0"));
    assert!(same_version("U46 v2.10", "u46 V2.10"));
    assert!(!same_version("2.1", "2.1.0"));
    assert!(!same_version("vendor", "endor"), "a v not before a digit is kept");
}

#[test]
fn bad_baselines_are_refused_naming_the_part() {
    let ok = baseline();
    assert_eq!(check(&ok), Ok(()));
    let mut b = ok.clone();
    b.components[0].image = "sha256:abc".into();
    assert!(check(&b).unwrap_err().contains("bios: image must be a SHA-256"));
    let mut b = ok.clone();
    b.components[1].version = " ".into();
    assert!(check(&b).unwrap_err().contains("bmc: version"));
    let mut b = ok.clone();
    b.components.push(component(Component::Bios, "9", None));
    assert!(check(&b).unwrap_err().contains("named twice"));
    let b = Baseline { name: "e".into(), components: vec![] };
    assert!(check(&b).is_err());
    let plugin = |name: &str, params| crate::plugins::refs::PluginRef { name: name.into(), version: None, params };
    let mut b = ok.clone();
    b.components[0].plugin = Some(plugin("acme-bios", serde_json::json!({"bank": 1})));
    assert_eq!(check(&b), Ok(()));
    b.components[0].plugin = Some(plugin(" ", serde_json::json!({})));
    assert!(check(&b).unwrap_err().contains("bios: plugin needs a name"));
    b.components[0].plugin = Some(plugin("acme-bios", serde_json::json!({"firmware": "mine"})));
    assert!(
        check(&b).unwrap_err().contains("the appliance fills it in"),
        "the appliance's own key is not the operator's"
    );
}

#[test]
fn bootos_s_bios_version_stands_in_where_the_bmc_says_nothing() {
    let b = Baseline { name: "x".into(), components: vec![component(Component::Bios, "1.1.0", None)] };
    let d = drift_with(&b, None, Some("1.0.0"));
    assert_eq!(d.standing, Standing::Drift, "never read through a BMC, but BootOS saw 1.0.0");
    assert_eq!(d.components[0].found[0].name, "BIOS (in band, DMI)");
    assert_eq!(drift_with(&b, None, Some("1.1.0")).standing, Standing::Current);
    let report = FirmwareReport { bios_version: Some("1.1.0".into()), ..Default::default() };
    let d = drift_with(&b, Some(&report), Some("0.0.0"));
    assert_eq!(d.standing, Standing::Current, "the BMC's word comes first: {d:?}");
    assert_eq!(d.components[0].found.len(), 1);
}
