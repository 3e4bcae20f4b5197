//! The dashboard's four charts of the last hour, laid out from an [`Hour`] and the DHCP pool's
//! samples: boots started and finished, machines by state, DHCP pool use, failures.

use super::plot::{plot, Plot, Series, Shape, Spec};
use super::pool::{self, Sample};
use super::{Hour, MINUTES};

/// The charts, in the page's order. `pool_now`: the gauges now; none drawn when they count no
/// pool (DHCP off or in proxy mode).
pub fn figures(hour: &Hour, samples: &[Sample], pool_now: Sample) -> Vec<Plot> {
    let cut = hour.cut_ms.map(|ms| {
        format!(
            "Only the newest events were read: minutes before {} are not shown.",
            crate::view::iso(ms).trim_end_matches('Z').replace('T', " ")
        ) + " UTC"
    });
    let counts = |id, title, unit, series: Vec<Series>| {
        let spec = Spec {
            id,
            title,
            unit,
            shape: Shape::Counts,
            first_known: hour.first_known,
            unknown: "not read",
            note: cut.clone(),
        };
        plot(&spec, &series)
    };
    let line = |key: &str, label: &str, values: &[u64]| Series {
        key: key.to_string(),
        label: label.to_string(),
        values: values.to_vec(),
    };
    let mut out = vec![counts(
        "boots",
        "Boots started and finished per minute",
        "boots",
        vec![
            line("started", "boots started", &hour.boots_started),
            line("finished", "boots finished", &hour.boots_finished),
        ],
    )];
    let states: Vec<Series> = hour
        .states
        .iter()
        .map(|(s, v)| {
            let name = crate::view::state_name(s);
            line(&name, &name, v)
        })
        .collect();
    let spec = Spec {
        id: "states",
        title: "Machines by state",
        unit: "machines",
        shape: Shape::Levels,
        first_known: hour.first_known,
        unknown: "not read",
        note: cut.clone(),
    };
    out.push(plot(&spec, &states));
    if pool_now.pool > 0 {
        let (leased, first) = pool::series(samples, pool_now);
        let pct = pool_now.leased as f64 * 100.0 / pool_now.pool as f64;
        let mut note = format!("{} of {} pool addresses in use now ({pct:.0}%).", pool_now.leased, pool_now.pool);
        if first > 0 {
            note.push_str(" Sampled once a minute since the appliance started");
            note.push_str(if first >= MINUTES - 1 { " (under a minute ago)." } else { "." });
        }
        let spec = Spec {
            id: "pool",
            title: "DHCP leases in use",
            unit: "leases",
            shape: Shape::Levels,
            first_known: first,
            unknown: "before the appliance started",
            note: Some(note),
        };
        out.push(plot(&spec, &[line("leases", "leases in use", &leased)]));
    }
    out.push(counts(
        "failures",
        "Failed jobs and runs per minute",
        "failures",
        vec![
            line("failed-jobs", "failed jobs", &hour.failed_jobs),
            line("failed-runs", "failed runs", &hour.failed_runs),
        ],
    ));
    out
}
