use super::*;
use rackboot_agent::wire::{Dmi, PciDevice};

pub const GOOD: &str = r#"
name = "mdadm-raid1"
version = "1.0.0"
vendor = "rackboot-lab"
description = "software RAID1"

[match]
dmi_vendor = ["QEMU", "rackboot-*"]
[[match.any]]
pci = ["1af4:1001"]
[[match.any]]
dmi_product = ["Standard PC*"]

[check]
run = "bin/check"
timeout = 30

[apply]
run = "bin/apply"
timeout = 600
destructive = true

[params]
type = "object"
required = ["disks"]
[params.properties.disks]
type = "array"
"#;

fn inv(vendor: &str, product: &str, pci: &[(&str, &str)]) -> Inventory {
    Inventory {
        dmi: Dmi { vendor: Some(vendor.into()), model: Some(product.into()), ..Default::default() },
        pci: pci
            .iter()
            .map(|(v, d)| PciDevice { vendor: (*v).into(), device: (*d).into(), ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn a_complete_manifest_parses() {
    let m = parse(GOOD).unwrap();
    assert_eq!((m.name.as_str(), m.version.as_str(), m.vendor.as_str()), ("mdadm-raid1", "1.0.0", "rackboot-lab"));
    assert!(m.apply.destructive && !m.apply.reboot);
    assert_eq!(m.params.unwrap()["properties"]["disks"]["type"], "array");
}

#[test]
fn match_combines_fields_and_alternatives() {
    let m = parse(GOOD).unwrap().matches;
    assert!(m.fits(&inv("QEMU", "Standard PC (i440FX)", &[])));
    assert!(m.fits(&inv("rackboot-lab", "x", &[("1AF4", "1001")])), "pci alternative, case-insensitive hex");
    assert!(!m.fits(&inv("rackboot-lab", "x", &[("1af4", "1000")])), "no alternative holds");
    assert!(!m.fits(&inv("Dell Inc.", "Standard PC", &[])), "vendor glob fails");
    assert!(!m.fits(&Inventory::default()), "an unknown DMI vendor fits no named glob");
    let any = Match { dmi_vendor: vec!["*".into()], ..Default::default() };
    assert!(any.fits(&Inventory::default()), "'*' fits an unknown vendor too");
}

#[test]
fn bad_manifests_are_refused_with_the_key() {
    let cases = [
        (GOOD.replace("description =", "colour = \"red\"\ndescription ="), "unknown field `colour`"),
        (GOOD.replace("timeout = 30\n", "timeout = 30\nshell = true\n"), "unknown field `shell`"),
        (GOOD.replace("\"1.0.0\"", "\"1.0\""), "not semver"),
        (GOOD.replace("\"1.0.0\"", "\"v1.0.0\""), "not semver"),
        (GOOD.replace("name = \"mdadm-raid1\"", "name = \"../x\""), "name"),
        (GOOD.replace("run = \"bin/check\"", "run = \"../bin/check\""), "check.run"),
        (GOOD.replace("run = \"bin/apply\"", "run = \"/bin/sh\""), "apply.run"),
        (GOOD.replace("timeout = 600", "timeout = 0"), "apply.timeout"),
        (GOOD.replace("\"1af4:1001\"", "\"1af4\""), "match.pci"),
        (GOOD.replace("type = \"array\"", "type = \"array\"\npattern = \"x\""), "\"pattern\" is not supported"),
    ];
    for (text, want) in cases {
        let err = parse(&text).unwrap_err();
        assert!(err.contains(want), "want {want:?}: {err}");
    }
    let empty = "name = \"a\"\nversion = \"1.0.0\"\nvendor = \"v\"\n[match]\n[check]\nrun = \"c\"\ntimeout = 1\n[apply]\nrun = \"a\"\ntimeout = 1\n";
    assert!(parse(empty).unwrap_err().contains("[match] needs"), "a match that fits everything is refused");
}

#[test]
fn globs() {
    assert!(glob("Dell*", "Dell Inc."));
    assert!(glob("*R6?0", "PowerEdge R640"));
    assert!(!glob("*R6?0", "PowerEdge R6400"));
    assert!(glob("qemu", "QEMU"));
    assert!(!glob("", "x"));
}
