//! The page templates (`templates/ui/`, embedded; HTML-escaped) and what they format with:
//! UTC ISO-8601 times with the relative time beside them, byte sizes. Templates format; they
//! never decide.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use minijinja::{Environment, UndefinedBehavior, Value};

use rackboot_store::now_ms;

const PAGES: [(&str, &str); 28] = [
    ("base.html", include_str!("../../../templates/ui/base.html")),
    ("login.html", include_str!("../../../templates/ui/login.html")),
    ("machines.html", include_str!("../../../templates/ui/machines.html")),
    ("machine.html", include_str!("../../../templates/ui/machine.html")),
    ("bmc.html", include_str!("../../../templates/ui/bmc.html")),
    ("network.html", include_str!("../../../templates/ui/network.html")),
    ("userdata.html", include_str!("../../../templates/ui/userdata.html")),
    ("event.html", include_str!("../../../templates/ui/event.html")),
    ("job.html", include_str!("../../../templates/ui/job.html")),
    ("day_two_fields.html", include_str!("../../../templates/ui/day_two_fields.html")),
    ("message.html", include_str!("../../../templates/ui/message.html")),
    ("dashboard.html", include_str!("../../../templates/ui/dashboard.html")),
    ("dashboard_charts.html", include_str!("../../../templates/ui/dashboard_charts.html")),
    ("audit.html", include_str!("../../../templates/ui/audit.html")),
    ("users.html", include_str!("../../../templates/ui/users.html")),
    ("webhooks.html", include_str!("../../../templates/ui/webhooks.html")),
    ("racks.html", include_str!("../../../templates/ui/racks.html")),
    ("rack.html", include_str!("../../../templates/ui/rack.html")),
    ("rack_rows.html", include_str!("../../../templates/ui/rack_rows.html")),
    ("rack_flags.html", include_str!("../../../templates/ui/rack_flags.html")),
    ("rack_picture.html", include_str!("../../../templates/ui/rack_picture.html")),
    ("tasks.html", include_str!("../../../templates/ui/tasks.html")),
    ("task.html", include_str!("../../../templates/ui/task.html")),
    ("leases.html", include_str!("../../../templates/ui/leases.html")),
    ("profiles.html", include_str!("../../../templates/ui/profiles.html")),
    ("templates.html", include_str!("../../../templates/ui/templates.html")),
    ("plugins.html", include_str!("../../../templates/ui/plugins.html")),
    ("firmware.html", include_str!("../../../templates/ui/firmware.html")),
];

/// The UI's template environment.
pub struct Views {
    env: Environment<'static>,
}

impl Views {
    /// Loads the embedded templates (strict: a missing variable is an error).
    pub fn new() -> anyhow::Result<Views> {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_filter("iso", |ms: u64| iso(ms));
        env.add_filter("ago", |ms: u64| ago(ms, now_ms()));
        env.add_filter("bytes", |n: u64| bytes(n));
        for (name, text) in PAGES {
            env.add_template(name, text)?;
        }
        Ok(Views { env })
    }

    /// Renders `name` with `ctx` into a page (500 with a plain message if the template fails).
    pub fn page(&self, name: &str, ctx: Value) -> Response {
        match self.render(name, ctx) {
            Ok(html) => Html(html).into_response(),
            Err(error) => {
                tracing::error!(%error, template = name, "ui template failed");
                (StatusCode::INTERNAL_SERVER_ERROR, "the page could not be rendered\n").into_response()
            }
        }
    }

    /// Renders `name` with `ctx` to text.
    pub fn render(&self, name: &str, ctx: Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }
}

/// A plain page that says what went wrong, with `status`.
pub fn message(
    views: &Views,
    status: StatusCode,
    title: &str,
    text: &str,
    session: &super::session::Session,
) -> Response {
    let ctx = minijinja::context! {
        title, text, status => status.as_u16(), user => &session.caller.user, role => session.caller.role.as_str(),
        csrf => &session.csrf, operator => session.operator(), scoped => session.scoped(), pools_text => session.pools_text(),
    };
    let mut resp = views.page("message.html", ctx);
    *resp.status_mut() = status;
    resp
}

/// A machine state as the API spells it (`post-install`).
pub fn state_name(s: &rackboot_store::MachineState) -> String {
    serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// Whether `s` may go into a redirect's `Location` as it is: at most 2,048 printable ASCII
/// characters (no space, no control character).
pub fn url_safe(s: &str) -> bool {
    s.len() <= 2048 && s.bytes().all(|b| b.is_ascii_graphic())
}

/// Percent-encodes `s` for a query value.
pub fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Unix milliseconds as UTC ISO-8601 (`2026-11-23T15:04:05Z`).
pub fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// How long before `now_ms` the moment `ms` was, in words (`3 min ago`, `in 2 h`).
pub fn ago(ms: u64, now_ms: u64) -> String {
    let (d, future) = if ms > now_ms { ((ms - now_ms) / 1000, true) } else { ((now_ms - ms) / 1000, false) };
    let text = match d {
        0..=4 => return "just now".into(),
        5..=59 => format!("{d} s"),
        60..=3599 => format!("{} min", d / 60),
        3600..=86_399 => format!("{} h", d / 3600),
        _ => format!("{} d", d / 86_400),
    };
    if future {
        format!("in {text}")
    } else {
        format!("{text} ago")
    }
}

/// A byte count in binary units (`16.0 GiB`).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let (mut v, mut u) = (n as f64, 0);
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_iso_with_a_relative_time() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_795_446_245_000), "2026-11-23T15:04:05Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(ago(1000, 1000), "just now");
        assert_eq!(ago(0, 90_000), "1 min ago");
        assert_eq!(ago(0, 7_200_000), "2 h ago");
        assert_eq!(ago(90_000, 0), "in 1 min");
    }

    #[test]
    fn sizes_and_query_values() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16 << 30), "16.0 GiB");
        assert_eq!(urlencode("a b&c=/é"), "a%20b%26c%3D%2F%C3%A9");
    }

    #[test]
    fn every_template_loads_and_escapes() {
        let v = Views::new().unwrap();
        let ctx = minijinja::context! { title => "<b>", text => "<script>", status => 404, user => None::<String>, csrf => "", operator => false };
        let html = v.render("message.html", ctx).unwrap();
        assert!(html.contains("&lt;script&gt;") && !html.contains("<script>"), "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"), "a page names another origin");
    }
}
