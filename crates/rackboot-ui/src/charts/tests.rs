//! The last hour's series from hand-made events, their layout, the pool samples and the charts'
//! template.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::figures::figures;
use super::plot::{plot, scale, Series, Shape, Spec};
use super::pool::{self, Sample};
use super::*;

/// A moment on a whole minute, so the slots' edges are easy to name.
const NOW: u64 = 1_800_000_000_000;

/// `ago_ms` before [`NOW`].
fn at(ago_ms: u64) -> u64 {
    NOW - ago_ms
}

fn ev(seq: u64, machine_id: u64, at_ms: u64, kind: EventKind, detail: Value, state: Option<MachineState>) -> Event {
    Event { seq, machine_id, at_ms, kind, detail, state }
}

fn changed(seq: u64, machine_id: u64, at_ms: u64, from: &str, to: &str) -> Event {
    ev(seq, machine_id, at_ms, EventKind::MachineState, json!({"from": from, "to": to}), None)
}

const MIN: u64 = MINUTE_MS;

#[test]
fn a_moment_falls_in_the_minute_that_ends_at_or_after_it() {
    assert_eq!(slot(NOW, NOW), Some(59));
    assert_eq!(slot(at(1), NOW), Some(59));
    assert_eq!(slot(at(MIN - 1), NOW), Some(59));
    assert_eq!(slot(at(MIN), NOW), Some(58), "the end of slot 58 is in it");
    assert_eq!(slot(at(59 * MIN + 1), NOW), Some(0));
    assert_eq!(slot(at(60 * MIN), NOW), None, "the hour's first moment ends the slot before it");
    assert_eq!(slot(NOW + 5_000, NOW), Some(59), "another clock a little ahead: this minute");
    assert_eq!(slot_end(59, NOW), NOW);
    assert_eq!(slot_end(0, NOW), at(59 * MIN));
}

#[test]
fn boots_and_failures_are_counted_in_their_minute() {
    let failed =
        |seq, ago, state: &str| ev(seq, 1, at(ago), EventKind::JobFinished, json!({"job": seq, "state": state}), None);
    let events = vec![
        ev(1, 1, at(61 * MIN), EventKind::BootScript, json!({}), None), // before the hour
        ev(2, 1, at(90_000), EventKind::BootScript, json!({"plan": "profile"}), None),
        ev(3, 2, at(100_000), EventKind::BootScript, json!({"plan": "local-disk"}), None),
        ev(4, 1, at(30_000), EventKind::BootScript, json!({}), None),
        ev(5, 1, at(20_000), EventKind::AgentEnrolled, json!({"approved": true}), None),
        ev(6, 2, at(10 * MIN + 1), EventKind::ProvisionInstallerFinished, json!({"run": 1}), None),
        ev(7, 2, at(20_000), EventKind::DhcpOffer, json!({"boot_file": "ipxe.efi"}), None), // not a boot
        failed(8, 5 * MIN + 1, "failed"),
        failed(9, 5 * MIN + 2, "timed_out"),
        failed(10, 5 * MIN + 3, "error"),
        failed(11, 5 * MIN + 4, "succeeded"),
        failed(12, 5 * MIN + 5, "cancelled"),
        ev(13, 3, at(2 * MIN + 1), EventKind::JobLeaseExpired, json!({"job": 13, "state": "failed"}), None),
        ev(14, 3, at(2 * MIN + 2), EventKind::JobLeaseExpired, json!({"job": 14, "state": "queued"}), None),
        ev(15, 3, at(1), EventKind::ProvisionFailed, json!({"run": 2, "error": "x"}), None),
        ev(16, 3, at(2), EventKind::JobFinished, json!({"job": 16}), None), // no state: not counted
    ];
    let h = hour(&events, NOW, &HashMap::new(), None);
    let only = |v: &[u64], want: &[(usize, u64)]| {
        let mut expect = vec![0; MINUTES];
        for (i, n) in want {
            expect[*i] = *n;
        }
        assert_eq!(v, expect.as_slice());
    };
    only(&h.boots_started, &[(58, 2), (59, 1)]);
    only(&h.boots_finished, &[(49, 1), (59, 1)]);
    only(&h.failed_jobs, &[(54, 3), (57, 1)]);
    only(&h.failed_runs, &[(59, 1)]);
    assert!(h.states.is_empty(), "no machine now, none changed");
    assert_eq!((h.first_known, h.cut_ms), (0, None));
}

#[test]
fn machines_by_state_are_walked_back_from_now() {
    // Machine 1: discovered 50 min ago, ready at 40, installing at 20, installed at 10.
    // Machine 2: installed all hour, failed 5 min ago. Machine 3: registered 30 min ago.
    let events = vec![
        ev(1, 1, at(50 * MIN), EventKind::MachineDiscovered, json!({"mac": "x"}), Some(MachineState::Discovered)),
        changed(2, 1, at(40 * MIN), "discovered", "ready"),
        ev(3, 3, at(30 * MIN), EventKind::MachineRegistered, json!({"macs": []}), Some(MachineState::Discovered)),
        changed(4, 1, at(20 * MIN), "ready", "installing"),
        changed(5, 1, at(10 * MIN), "installing", "installed"),
        changed(6, 2, at(5 * MIN), "installed", "failed"),
    ];
    let now = HashMap::from([
        (MachineState::Installed, 1),
        (MachineState::Failed, 1),
        (MachineState::Discovered, 1),
        (MachineState::Retired, 0),
    ]);
    let h = hour(&events, NOW, &now, None);
    let names: Vec<MachineState> = h.states.iter().map(|(s, _)| *s).collect();
    use MachineState::*;
    assert_eq!(names, [Discovered, Ready, Installing, Installed, Failed], "lifecycle order; only the ones seen");
    let at_ago = |state: MachineState, ago: usize| h.states.iter().find(|(s, _)| *s == state).unwrap().1[59 - ago];
    // Each slot is the count at its end; a change exactly at a slot's end is in it.
    let table = [
        (0, [1, 0, 0, 1, 1]),
        (5, [1, 0, 0, 1, 1]),
        (6, [1, 0, 0, 2, 0]),
        (10, [1, 0, 0, 2, 0]),
        (11, [1, 0, 1, 1, 0]),
        (20, [1, 0, 1, 1, 0]),
        (21, [1, 1, 0, 1, 0]),
        (30, [1, 1, 0, 1, 0]),
        (31, [0, 1, 0, 1, 0]),
        (40, [0, 1, 0, 1, 0]),
        (41, [1, 0, 0, 1, 0]),
        (50, [1, 0, 0, 1, 0]),
        (51, [0, 0, 0, 1, 0]),
        (59, [0, 0, 0, 1, 0]),
    ];
    for (ago, want) in table {
        let got: Vec<u64> = names.iter().map(|s| at_ago(*s, ago)).collect();
        assert_eq!(got, want, "{ago} minutes ago");
    }
}

#[test]
fn a_missing_event_cannot_make_a_count_negative() {
    // A change into `ready` for a machine that is not ready now (its later events were pruned).
    let events = vec![changed(1, 1, at(3 * MIN), "discovered", "ready")];
    let h = hour(&events, NOW, &HashMap::from([(MachineState::Discovered, 1)]), None);
    assert_eq!(h.states.len(), 1, "{:?}", h.states);
    assert_eq!(h.states[0].0, MachineState::Discovered);
    assert_eq!(h.states[0].1[59], 1);
    assert_eq!(h.states[0].1[0], 2, "undone: it came from discovered");
}

#[test]
fn a_read_cut_short_leaves_the_minutes_before_it_unknown() {
    // The read began with an event 20.5 minutes ago: slots that began before it are unknown.
    let cut = at(20 * MIN + 30_000);
    let events = vec![
        ev(100, 1, cut, EventKind::BootScript, json!({}), None),
        ev(101, 1, at(MIN + 1), EventKind::BootScript, json!({}), None),
        changed(102, 1, at(MIN + 2), "discovered", "ready"),
    ];
    let h = hour(&events, NOW, &HashMap::from([(MachineState::Ready, 1)]), Some(cut));
    assert_eq!(h.cut_ms, Some(cut));
    assert_eq!(h.first_known, 40, "slot 40 began 20 min ago, after the cut; 39 before it");
    assert_eq!(h.boots_started.iter().sum::<u64>(), 2, "the cut slot's event is still counted where it fell");
    let ready = &h.states.iter().find(|(s, _)| *s == MachineState::Ready).unwrap().1;
    assert!(ready[..40].iter().all(|n| *n == 0), "nothing reconstructed before the cut: {ready:?}");
    assert_eq!((ready[40], ready[57], ready[58], ready[59]), (0, 0, 1, 1));

    let plots = figures(&h, &[], Sample { at_ms: NOW, leased: 0, pool: 0 });
    let boots = &plots[0];
    assert_eq!(boots.id, "boots");
    let unknown = boots.unknown.as_ref().expect("the unknown minutes are drawn");
    assert_eq!((unknown.at.x, unknown.at.w), (44.0, 400.0));
    assert_eq!((unknown.text.as_str(), unknown.label), ("not read", Some((244.0, 78.0))));
    assert!(boots.bars.iter().all(|b| b.ago < 20), "no bar in the unknown minutes: {:?}", boots.bars);
    let note = boots.note.as_deref().unwrap();
    assert!(note.starts_with("Only the newest events were read: minutes before ") && note.ends_with(" UTC"), "{note}");
    assert!(boots.summary.contains("in the last 20 minutes"), "{}", boots.summary);
    assert!(!plots.iter().any(|p| p.id == "pool"), "no pool counted: no pool chart");
}

fn series(key: &str, values: &[(usize, u64)]) -> Series {
    let mut v = vec![0; MINUTES];
    for (i, n) in values {
        v[*i] = *n;
    }
    Series { key: key.into(), label: format!("{key} things"), values: v }
}

#[test]
fn counts_are_drawn_side_by_side_and_told_in_words() {
    let spec =
        Spec { id: "t", title: "T", unit: "things", shape: Shape::Counts, first_known: 0, unknown: "", note: None };
    let p = plot(&spec, &[series("a", &[(59, 3), (10, 1)]), series("b", &[(59, 1)])]);
    assert_eq!(p.bars.len(), 3);
    let a = p.bars.iter().find(|b| b.key == "a" && b.ago == 0).unwrap();
    let b = p.bars.iter().find(|b| b.key == "b").unwrap();
    assert_eq!(a.value, 3);
    assert_eq!(a.title, "this minute: 3 a things");
    // Scale 4: 3 of 4 is 105 of the 140 px; the two bars share the last 10 px slot.
    assert_eq!((a.at.x, a.at.w, a.at.h, a.at.y), (635.0, 4.0, 105.0, 43.0));
    assert_eq!((b.at.x, b.at.h), (639.0, 35.0));
    let ticks: Vec<&str> = p.y_ticks.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(ticks, ["0", "2", "4"]);
    assert_eq!(p.x_ticks.first().map(|t| (t.at, t.label.as_str())), Some((44.0, "60")));
    assert_eq!(p.x_ticks.last().map(|t| (t.at, t.label.as_str())), Some((644.0, "0")));
    assert_eq!(
        p.summary,
        "A things: 4 in the last hour, at most 3 in a minute (this minute). B things: 1 in the last hour, at most 1 in a minute (this minute)."
    );
    let rows: Vec<(usize, Vec<u64>)> = p.rows.iter().map(|r| (r.ago, r.values.clone())).collect();
    assert_eq!(rows, [(0, vec![3, 1]), (49, vec![1, 0])]);
    assert!(p.unknown.is_none());
}

#[test]
fn levels_are_stacked_and_the_table_lists_the_changes() {
    let spec =
        Spec { id: "s", title: "S", unit: "machines", shape: Shape::Levels, first_known: 0, unknown: "", note: None };
    let mut ready = series("ready", &[]);
    ready.values = vec![2; MINUTES];
    let failed = series("failed", &(30..MINUTES).map(|i| (i, 1)).collect::<Vec<_>>());
    let p = plot(&spec, &[ready, failed]);
    let now: Vec<_> = p.bars.iter().filter(|b| b.ago == 0).collect();
    assert_eq!(now.len(), 2);
    // Scale 4: ready fills 0-2 (y 78 to 148), failed sits on it (y 43 to 78).
    assert_eq!((now[0].at.y, now[0].at.h), (78.0, 70.0));
    assert_eq!((now[1].at.y, now[1].at.h), (43.0, 35.0));
    let rows: Vec<(usize, Vec<u64>)> = p.rows.iter().map(|r| (r.ago, r.values.clone())).collect();
    assert_eq!(rows, [(0, vec![2, 1]), (29, vec![2, 1]), (59, vec![2, 0])]);
    assert_eq!(p.summary, "Now: 2 ready things, 1 failed things. 59 minutes ago: 2 ready things.");
}

#[test]
fn the_scale_is_a_round_number_with_a_whole_middle() {
    let tops: Vec<u64> = [0, 1, 2, 3, 5, 7, 9, 11, 45, 1001].into_iter().map(scale).collect();
    assert_eq!(tops, [1, 1, 2, 4, 6, 8, 10, 20, 60, 2000]);
    assert_eq!(scale(u64::MAX), u64::MAX);
}

#[test]
fn pool_use_starts_with_the_first_sample() {
    // Samples each minute since the appliance started 10.5 minutes ago; one missed 4 minutes ago.
    let samples: Vec<Sample> = (0..=10u64)
        .filter(|m| *m != 4)
        .map(|m| Sample { at_ms: at(m * MIN + 30_000), leased: 100 - m, pool: 1000 })
        .rev()
        .collect();
    let now = Sample { at_ms: NOW, leased: 7, pool: 1000 };
    let (values, first) = pool::series(&samples, now);
    assert_eq!(first, 49, "the first sample, 10.5 min ago, stands for the minute that ended 10 min ago");
    assert_eq!(values[59], 7, "now is the gauges now");
    assert_eq!(values[58], 99, "a minute ago: the sample 30 s before that");
    assert_eq!(values[55], 95, "the missed sample's minute takes the one before it");
    assert_eq!(values[49], 90);
    assert!(values[..49].iter().all(|v| *v == 0));
    // A sample older than two minutes does not stand for a minute.
    let (values, first) = pool::series(&[Sample { at_ms: at(10 * MIN), leased: 5, pool: 9 }], now);
    assert_eq!(first, 49);
    assert_eq!((values[49], values[51], values[52]), (5, 5, 0));
    // Now counts no pool: the minute is unknown, the samples still stand.
    let (values, first) = pool::series(&samples, Sample { pool: 0, ..now });
    assert_eq!((first, values[59]), (49, 0));
    let none: Vec<Sample> = samples.iter().map(|s| Sample { pool: 0, ..*s }).collect();
    assert_eq!(pool::series(&none, Sample { pool: 0, ..now }).1, MINUTES);
}

#[test]
fn the_history_keeps_an_hour() {
    let h = pool::PoolHistory::default();
    for m in 0..100 {
        h.record(Sample { at_ms: m, leased: m, pool: 1 });
    }
    let kept = h.samples();
    assert_eq!(kept.len(), MINUTES + 1);
    assert_eq!((kept[0].at_ms, kept[MINUTES].at_ms), (39, 99));
}

#[test]
fn the_charts_render_as_accessible_svg_from_the_appliance_alone() {
    let events = vec![
        ev(1, 1, at(30_000), EventKind::BootScript, json!({}), None),
        ev(2, 1, at(20_000), EventKind::JobFinished, json!({"state": "failed"}), None),
    ];
    let h = hour(&events, NOW, &HashMap::from([(MachineState::Discovered, 1)]), None);
    let samples = [Sample { at_ms: at(MIN), leased: 2, pool: 50 }];
    let plots = figures(&h, &samples, Sample { at_ms: NOW, leased: 3, pool: 50 });
    let ids: Vec<&str> = plots.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["boots", "states", "pool", "failures"]);
    let views = crate::view::Views::new().unwrap();
    let ctx = minijinja::context! { plots => minijinja::Value::from(minijinja::value::Serde(&plots)), pool_counted => true, read_at => NOW, error => None::<String> };
    let html = views.render("dashboard_charts.html", ctx).unwrap();
    assert_eq!(html.matches("<svg ").count(), 4, "{html}");
    assert_eq!(html.matches("role=\"img\"").count(), 4);
    assert!(
        html.contains("<title id=\"boots-t\">Boots started and finished per minute, the last hour</title>"),
        "{html}"
    );
    assert!(html.contains("<desc id=\"boots-d\">Boots started: 1 in the last hour"), "{html}");
    assert!(html.contains("data-series=\"started\" data-ago=\"0\" data-value=\"1\""), "{html}");
    assert!(html.contains("data-series=\"failed-jobs\" data-ago=\"0\" data-value=\"1\""), "{html}");
    assert!(html.contains("data-series=\"leases\" data-ago=\"0\" data-value=\"3\""), "{html}");
    assert!(html.contains("3 of 50 pool addresses in use now (6%). Sampled once a minute since the appliance started."));
    assert!(html.contains(">minutes ago</text>") && html.contains(">machines</text>"), "axis labels");
    assert!(html.contains("<th scope=\"row\">0</th><td>1</td><td>0</td>"), "the table: {html}");
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"), "{html}");
    assert!(!html.contains("chart-pool-off"));
}
