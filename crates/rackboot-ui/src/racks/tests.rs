//! The rack pages' templates rendered with every field, gaps between slots and firmware standings.

use super::*;

#[test]
fn the_racks_pages_render_with_every_field() {
    let views = super::super::view::Views::new().unwrap();
    let ctx = minijinja::context! {
        user => "olga", role => "operator", csrf => "c", operator => true, error => Value::from(None::<String>),
        racks => Value::from(Serde(vec![json!({"name": "r1", "location": null, "switch": "leaf", "slots": 4, "auto_provision": false, "flags": 1})])),
        f => Value::from(Serde(blank())),
    };
    let html = views.render("racks.html", ctx).unwrap();
    assert!(html.contains("id=\"rack-form\"") && html.contains("{rack}-u{slot:02}"), "{html}");
    // Whatever was typed comes back escaped.
    let mut f = blank();
    f["name"] = json!("<script>x</script>");
    let ctx = minijinja::context! {
        user => "olga", role => "operator", csrf => "c", operator => true, error => "refused",
        racks => Value::from(Serde(Vec::<serde_json::Value>::new())), f => Value::from(Serde(f)),
    };
    let html = views.render("racks.html", ctx).unwrap();
    assert!(!html.contains("<script>x") && html.contains("&lt;script&gt;"), "{html}");
}

/// A rack placed by CSV alone (no port map) has slots between its machines that no entry
/// names: the picture draws them empty.
#[test]
fn a_rack_with_gaps_between_its_slots_renders() {
    let views = super::super::view::Views::new().unwrap();
    let view: serde_json::Value = serde_json::from_str(r#"{"flags":[],"rack":{"address_plan":{"first":"127.0.12.1","last":"127.0.12.4"},
        "auto_provision":false,"created_at":1,"hardware_profile":null,"hostname_pattern":"{rack}-u{slot:02}","location":null,
        "machines":[{"hostname":"fw7","mac":"52:54:00:f3:00:01","slot":3}],"name":"r7","os_profile":null,"ports":[],
        "silent_after_minutes":15,"switch":{"lldp_chassis_id":null,"lldp_chassis_name":null,"remote_id":null},"trust_lldp":false,
        "uefi_loader":null,"updated_at":1,"v":1},"slots":[{"expected":true,"machines":[{"by":"csv","hostname":"fw7","id":1,
        "last_event":"rack.placed","last_event_at_ms":1,"mac":"52:54:00:f3:00:01","reserved_ip":"127.0.12.3","state":"discovered"}],
        "ports":[],"slot":3}]}"#).unwrap();
    let ctx = minijinja::context! { user => "o", role => "operator", csrf => "c", operator => true,
    notice => Value::from(None::<String>), view => Value::from(Serde(view)), switch => "",
    firmware => Value::from(Serde(json!({"1": "unknown"}))) };
    let html = views.render("rack.html", ctx).unwrap();
    assert_eq!(html.matches("class=\"u empty\"").count(), 2, "U2 and U1: {html}");
    assert!(html.contains("firmware-unknown") && html.contains("id=\"firmware-submit\""), "{html}");
}

#[test]
fn the_elevation_shows_each_machine_s_firmware_standing() {
    let views = super::super::view::Views::new().unwrap();
    let machine = |id: u64| {
        json!({"id": id, "mac": null, "hostname": format!("n{id}"), "reserved_ip": null,
        "state": "ready", "by": null, "last_event": null, "last_event_at_ms": null})
    };
    let view = json!({"slots": [
        {"slot": 3, "ports": [], "expected": true, "machines": [machine(7)]},
        {"slot": 2, "ports": [], "expected": true, "machines": [machine(8)]},
        {"slot": 1, "ports": [], "expected": true, "machines": []}]});
    let ctx = minijinja::context! { view => Value::from(Serde(view)),
    firmware => Value::from(Serde(json!({"7": "drift"}))) };
    let html = views.render("rack_rows.html", ctx).unwrap();
    let row = |id: &str| html.split("<tr").find(|r| r.contains(id)).unwrap().to_string();
    assert!(row("slot-3-7").contains("firmware-drift\">drift"), "{html}");
    assert!(row("slot-2-8").ends_with("<td>—</td></tr>"), "no baseline: {html}");
    assert_eq!(row("slot-1\"").matches("<td>").count(), 6, "an empty slot has every column: {html}");
}
