//! One chart laid out for its SVG (pure): bars per minute, the axes' ticks and labels, a
//! legend, a summary in words and a table for screen readers, from per-minute series. The
//! template (`dashboard_charts.html`) only draws what this says.

use serde::Serialize;

use super::MINUTES;

/// The SVG's size (its `viewBox`; CSS scales it to the page).
pub const WIDTH: u32 = 660;
pub const HEIGHT: u32 = 186;
/// The plot area inside it: left of it the counts, below it the minutes.
const LEFT: f64 = 44.0;
const TOP: f64 = 8.0;
const PLOT_W: f64 = 600.0;
const PLOT_H: f64 = 140.0;
const SLOT_W: f64 = PLOT_W / MINUTES as f64;

/// One line of a chart: `values` per minute, oldest first ([`MINUTES`] of them).
#[derive(Debug, Clone)]
pub struct Series {
    /// Names its colour (CSS class `s-KEY`) and its bars (`data-series`).
    pub key: String,
    /// What it counts, in words (`boots started`).
    pub label: String,
    pub values: Vec<u64>,
}

/// How a chart's series are drawn and told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Events per minute: series side by side; the table lists the minutes with any.
    Counts,
    /// How many at each minute's end: series stacked; the table lists the minutes where any changed.
    Levels,
}

/// What a chart is, beside its series.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    /// The figure's id (`chart-ID`), unique on the page.
    pub id: &'a str,
    pub title: &'a str,
    /// The vertical axis's label (`boots`).
    pub unit: &'a str,
    pub shape: Shape,
    /// Slots before this one are unknown (not read, or before the appliance started).
    pub first_known: usize,
    /// Why, in two or three words (`not read`), written over them when it fits.
    pub unknown: &'a str,
    /// Said under the chart (why some minutes are unknown).
    pub note: Option<String>,
}

/// A chart, ready to draw.
#[derive(Debug, Clone, Serialize)]
pub struct Plot {
    pub id: String,
    pub title: String,
    pub unit: String,
    pub width: u32,
    pub height: u32,
    pub area: Area,
    /// The unknown minutes, if any.
    pub unknown: Option<Unknown>,
    pub y_ticks: Vec<Tick>,
    pub x_ticks: Vec<Tick>,
    pub bars: Vec<Bar>,
    pub legend: Vec<Key>,
    pub summary: String,
    pub note: Option<String>,
    /// The table: a column per series, a row per minute worth listing, newest first.
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
}

/// A rectangle in the SVG's coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Area {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

/// The minutes nothing is known of: their area and why, with where the words go when they fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unknown {
    pub at: Area,
    pub text: String,
    pub label: Option<(f64, f64)>,
}

/// A labelled place on an axis (`at`: y for the counts, x for the minutes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tick {
    pub at: f64,
    pub label: String,
}

/// One bar: a series' value in one minute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bar {
    pub key: String,
    pub ago: usize,
    pub value: u64,
    pub at: Area,
    pub title: String,
}

/// A legend entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Key {
    pub key: String,
    pub label: String,
}

/// A table row: minutes ago and each series' value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub ago: usize,
    pub values: Vec<u64>,
}

/// Lays out `series` as `spec` says.
pub fn plot(spec: &Spec<'_>, series: &[Series]) -> Plot {
    let known = spec.first_known.min(MINUTES);
    let top = scale(peak(spec.shape, series, known));
    let y = |v: f64| TOP + PLOT_H - v / top as f64 * PLOT_H;
    let mut bars = Vec::new();
    for i in known..MINUTES {
        let mut base = 0u64;
        for (k, s) in series.iter().enumerate() {
            let v = s.values.get(i).copied().unwrap_or(0);
            if v == 0 {
                continue;
            }
            let slot_x = LEFT + i as f64 * SLOT_W;
            let at = match spec.shape {
                Shape::Counts => {
                    let w = (SLOT_W - 2.0) / series.len() as f64;
                    Area {
                        x: r1(slot_x + 1.0 + k as f64 * w),
                        y: r1(y(v as f64)),
                        w: r1(w),
                        h: r1(v as f64 / top as f64 * PLOT_H),
                    }
                }
                Shape::Levels => {
                    let (lo, hi) = (y(base as f64), y((base + v) as f64));
                    base += v;
                    Area { x: r1(slot_x + 1.0), y: r1(hi), w: SLOT_W - 2.0, h: r1(lo - hi) }
                }
            };
            let ago = MINUTES - 1 - i;
            bars.push(Bar { key: s.key.clone(), ago, value: v, at, title: format!("{}: {v} {}", when(ago), s.label) });
        }
    }
    let mid = top.is_multiple_of(2).then_some(top / 2);
    let y_ticks =
        [Some(0), mid, Some(top)].into_iter().flatten().map(|v| Tick { at: r1(y(v as f64)), label: v.to_string() });
    let x_ticks = [60usize, 45, 30, 15, 0]
        .into_iter()
        .map(|ago| Tick { at: r1(LEFT + (MINUTES - ago) as f64 * SLOT_W), label: ago.to_string() });
    Plot {
        id: spec.id.to_string(),
        title: spec.title.to_string(),
        unit: spec.unit.to_string(),
        width: WIDTH,
        height: HEIGHT,
        area: Area { x: LEFT, y: TOP, w: PLOT_W, h: PLOT_H },
        unknown: (known > 0).then(|| unknown(known, spec.unknown)),
        y_ticks: y_ticks.collect(),
        x_ticks: x_ticks.collect(),
        bars,
        legend: series.iter().map(|s| Key { key: s.key.clone(), label: s.label.clone() }).collect(),
        summary: summary(spec, series, known),
        note: spec.note.clone(),
        columns: series.iter().map(|s| s.label.clone()).collect(),
        rows: rows(spec.shape, series, known),
    }
}

fn unknown(known: usize, text: &str) -> Unknown {
    let at = Area { x: LEFT, y: TOP, w: r1(known as f64 * SLOT_W), h: PLOT_H };
    // About 6 px a character at the chart's 11 px font.
    let fits = at.w >= text.chars().count() as f64 * 6.0 + 12.0;
    Unknown { at, text: text.to_string(), label: fits.then(|| (r1(at.x + at.w / 2.0), r1(at.y + at.h / 2.0))) }
}

/// The tallest bar: the largest value, or the largest stack.
fn peak(shape: Shape, series: &[Series], known: usize) -> u64 {
    let at = |i: usize| series.iter().map(move |s| s.values.get(i).copied().unwrap_or(0));
    (known..MINUTES)
        .map(|i| match shape {
            Shape::Counts => at(i).max().unwrap_or(0),
            Shape::Levels => at(i).sum(),
        })
        .max()
        .unwrap_or(0)
}

/// The top of the vertical axis: the first of 1, 2, 4, 6, 8, 10, 20, 40, ... at or above `peak`
/// (all but 1 have a whole half, the middle tick).
pub fn scale(peak: u64) -> u64 {
    for e in 0..20 {
        for m in [1, 2, 4, 6, 8] {
            match 10u64.checked_pow(e).and_then(|unit| unit.checked_mul(m)) {
                Some(top) if top >= peak => return top,
                _ => {}
            }
        }
    }
    u64::MAX
}

/// A minute in words.
fn when(ago: usize) -> String {
    match ago {
        0 => "this minute".into(),
        1 => "1 minute ago".into(),
        n => format!("{n} minutes ago"),
    }
}

/// The chart in one or two sentences.
fn summary(spec: &Spec<'_>, series: &[Series], known: usize) -> String {
    if known >= MINUTES {
        return "Nothing known for the last hour.".into();
    }
    let span = match known {
        0 => "the last hour".to_string(),
        k => format!("the last {} minutes", MINUTES - k),
    };
    match spec.shape {
        Shape::Counts => {
            let told: Vec<String> = series
                .iter()
                .map(|s| {
                    let v = &s.values[known..MINUTES];
                    let total: u64 = v.iter().sum();
                    let (most, i) = v.iter().enumerate().map(|(i, n)| (*n, i)).max().unwrap_or((0, 0));
                    match total {
                        0 => format!("{}: none in {span}", capital(&s.label)),
                        _ => format!(
                            "{}: {total} in {span}, at most {most} in a minute ({})",
                            capital(&s.label),
                            when(MINUTES - 1 - known - i)
                        ),
                    }
                })
                .collect();
            told.join(". ") + "."
        }
        Shape::Levels => {
            let at = |i: usize| {
                let v: Vec<String> = series
                    .iter()
                    .filter_map(|s| s.values.get(i).filter(|n| **n > 0).map(|n| format!("{n} {}", s.label)))
                    .collect();
                if v.is_empty() {
                    "none".to_string()
                } else {
                    v.join(", ")
                }
            };
            match known {
                k if k >= MINUTES - 1 => format!("Now: {}.", at(MINUTES - 1)),
                k => format!("Now: {}. {}: {}.", at(MINUTES - 1), capital(&when(MINUTES - 1 - k)), at(k)),
            }
        }
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// The table's rows, newest first: for counts, the minutes with any; for levels, now and each
/// minute whose values differ from the one before it (and the oldest known).
fn rows(shape: Shape, series: &[Series], known: usize) -> Vec<Row> {
    let at = |i: usize| series.iter().map(|s| s.values.get(i).copied().unwrap_or(0)).collect::<Vec<_>>();
    (known..MINUTES)
        .rev()
        .filter(|&i| match shape {
            Shape::Counts => at(i).iter().any(|n| *n > 0),
            Shape::Levels => i == MINUTES - 1 || i == known || at(i) != at(i - 1),
        })
        .map(|i| Row { ago: MINUTES - 1 - i, values: at(i) })
        .collect()
}

/// Rounded to a tenth (short SVG numbers).
fn r1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
