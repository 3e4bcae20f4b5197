//! `/ui/machines`: the machine list. Search and filters are the API's (`MachineFilter` in the
//! CMDB), kept in the URL with the sort and page, so a view can be shared and the back button
//! works; the page is a plain GET form. Bulk actions are in [`super::bulk`].

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde::{Deserialize, Serialize};

use minijinja::Value as V;

use super::session::Session;
use super::view::{message, urlencode};
use super::UiState;
use rackboot_store::{Machine, MachineFilter, MachineState};

pub fn routes() -> Router<UiState> {
    Router::new().route("/ui/machines", get(list)).route("/ui/machines/bulk", post(super::bulk::run))
}

/// Matches sorted at most (the list is sorted on the server before it is paged).
const MAX_SORTED: usize = 100_000;
/// Longest search or filter text accepted.
const MAX_TEXT: usize = 128;
/// Page sizes offered.
const PER_PAGE: [usize; 4] = [25, 50, 100, 200];

/// The list's URL query: filters, sort and page. Unknown keys are ignored (a shared link from
/// a newer version still opens).
#[derive(Debug, Default, Deserialize, Serialize, Clone)]
pub struct ListQuery {
    #[serde(default)]
    pub q: String,
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub tag: String,
    #[serde(default)]
    pub vendor: String,
    /// The resource pool.
    #[serde(default)]
    pub pool: String,
    #[serde(default)]
    pub sort: String,
    #[serde(default)]
    pub dir: String,
    #[serde(default)]
    pub page: Option<usize>,
    #[serde(default)]
    pub per: Option<usize>,
    /// The outcome of a bulk action, shown once after its redirect.
    #[serde(default)]
    pub notice: String,
}

impl ListQuery {
    /// The query string of this view with `sort`/`dir`/`page` replaced (filters kept).
    pub fn with(&self, sort: &str, dir: &str, page: usize) -> String {
        let mut parts = Vec::new();
        let filters = [
            ("q", &self.q),
            ("state", &self.state),
            ("tag", &self.tag),
            ("vendor", &self.vendor),
            ("pool", &self.pool),
        ];
        for (k, v) in filters {
            if !v.is_empty() {
                parts.push(format!("{k}={}", urlencode(v)));
            }
        }
        parts.push(format!("sort={sort}&dir={dir}"));
        if page > 1 {
            parts.push(format!("page={page}"));
        }
        if let Some(per) = self.per.filter(|p| PER_PAGE.contains(p)) {
            parts.push(format!("per={per}"));
        }
        parts.join("&")
    }
}

/// The columns the list sorts by.
const SORTS: [&str; 6] = ["id", "hostname", "state", "vendor", "ip", "seen"];

/// One row of the list.
#[derive(Serialize)]
struct Row {
    id: u64,
    hostname: Option<String>,
    macs: Vec<String>,
    ip: Option<String>,
    serial: Option<String>,
    vendor: String,
    state: MachineState,
    tags: Vec<String>,
    seen_ms: Option<u64>,
    pool: String,
}

impl From<Machine> for Row {
    fn from(m: Machine) -> Row {
        let vendor = [m.vendor.as_deref(), m.model.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
        Row {
            id: m.id,
            hostname: m.hostname,
            macs: m.macs.iter().map(ToString::to_string).collect(),
            ip: m.reserved_ip.map(|ip| ip.to_string()),
            serial: m.serial,
            vendor,
            state: m.state,
            tags: m.tags,
            seen_ms: m.last_seen_at.map(|s| s * 1000),
            pool: m.pool,
        }
    }
}

/// A state's place in the lifecycle ([`STATES`] order).
fn rank(s: MachineState) -> usize {
    let name = super::view::state_name(&s);
    STATES.iter().position(|x| *x == name).unwrap_or(STATES.len())
}

/// Sorts machines by a column of [`SORTS`]; ties (and machines without the value) by id.
fn sort(machines: &mut [Machine], by: &str, desc: bool) {
    let ip = |m: &Machine| m.reserved_ip.map(u32::from);
    machines.sort_by(|a, b| {
        let o = match by {
            "hostname" => a.hostname.cmp(&b.hostname),
            "state" => rank(a.state).cmp(&rank(b.state)),
            "vendor" => (&a.vendor, &a.model).cmp(&(&b.vendor, &b.model)),
            "ip" => ip(a).cmp(&ip(b)),
            "seen" => a.last_seen_at.cmp(&b.last_seen_at),
            _ => std::cmp::Ordering::Equal,
        }
        .then(a.id.cmp(&b.id));
        if desc {
            o.reverse()
        } else {
            o
        }
    });
}

/// The filter a query asks for; a state that is not one, or text past [`MAX_TEXT`], is refused.
fn filter(q: &ListQuery, pools: Option<Vec<String>>) -> Result<MachineFilter, String> {
    for (name, v) in [("search", &q.q), ("tag", &q.tag), ("vendor", &q.vendor), ("pool", &q.pool)] {
        if v.chars().count() > MAX_TEXT {
            return Err(format!("the {name} text is longer than {MAX_TEXT} characters"));
        }
    }
    let some = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    let state = match q.state.as_str() {
        "" => None,
        s => Some(s.parse::<MachineState>()?),
    };
    Ok(MachineFilter {
        q: some(&q.q),
        state,
        tag: some(&q.tag),
        profile: None,
        vendor: some(&q.vendor),
        pool: some(&q.pool),
        // A pool-scoped user's: their pools' machines only.
        pools,
        after: None,
        limit: Some(MAX_SORTED),
    })
}

/// The machine list page.
async fn list(
    State(s): State<UiState>,
    session: Session,
    q: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = q.map(|Query(q)| q).unwrap_or_default();
    let user = Some(session.caller.user.as_str());
    let f = match filter(&q, session.pools()) {
        Ok(f) => f,
        Err(why) => return message(&s.views, StatusCode::BAD_REQUEST, "Machines", &why, &session),
    };
    let found = match s.api.cmdb.list_machines(f).await {
        Ok(found) => found,
        Err(e) => return message(&s.views, StatusCode::INTERNAL_SERVER_ERROR, "Machines", &e.to_string(), &session),
    };
    let by = if SORTS.contains(&q.sort.as_str()) { q.sort.as_str() } else { "id" };
    let desc = q.dir == "desc";
    let mut machines = found.machines;
    sort(&mut machines, by, desc);
    let per = q.per.filter(|p| PER_PAGE.contains(p)).unwrap_or(50);
    let pages = machines.len().div_ceil(per).max(1);
    let page = q.page.unwrap_or(1).clamp(1, pages);
    let rows: Vec<Row> = machines.into_iter().skip((page - 1) * per).take(per).map(Row::from).collect();
    let dir = if desc { "desc" } else { "asc" };
    let sort_links: std::collections::BTreeMap<&str, String> = SORTS
        .iter()
        .map(|c| {
            let next_dir = if *c == by && !desc { "desc" } else { "asc" };
            (*c, q.with(c, next_dir, 1))
        })
        .collect();
    let states: Vec<String> = STATES.iter().map(|s| s.to_string()).collect();
    let ctx = minijinja::context! {
        user, role => session.caller.role.as_str(), csrf => &session.csrf, operator => session.operator(),
        scoped => session.scoped(), pools_text => session.pools_text(),
        q => V::from(minijinja::value::Serde(&q)), rows => V::from(minijinja::value::Serde(&rows)), total => found.total, shown_total => found.total.min(MAX_SORTED),
        page, pages, per, per_pages => PER_PAGE, sort => by, dir, sort_links, states,
        prev => (page > 1).then(|| q.with(by, dir, page - 1)),
        next => (page < pages).then(|| q.with(by, dir, page + 1)),
        back => q.with(by, dir, page),
    };
    s.views.page("machines.html", ctx)
}

/// The states a filter offers, as the API spells them.
pub const STATES: [&str; 12] = [
    "discovered",
    "commissioning",
    "ready",
    "queued",
    "configuring",
    "installing",
    "post-install",
    "installed",
    "failed",
    "releasing",
    "rescue",
    "retired",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offered_state_parses() {
        for s in STATES {
            assert!(s.parse::<MachineState>().is_ok(), "{s}");
        }
    }

    #[test]
    fn a_view_keeps_its_filters_in_the_url() {
        let q = ListQuery { q: "52:54 00".into(), tag: "rack1".into(), per: Some(100), ..Default::default() };
        assert_eq!(q.with("hostname", "desc", 2), "q=52%3A54%2000&tag=rack1&sort=hostname&dir=desc&page=2&per=100");
        let bad = ListQuery { state: "sleeping".into(), ..Default::default() };
        assert!(filter(&bad, None).is_err());
        let long = ListQuery { q: "x".repeat(MAX_TEXT + 1), ..Default::default() };
        assert!(filter(&long, None).is_err());
    }

    #[test]
    fn sorting_is_stable_by_id() {
        let mk = |id: u64, host: Option<&str>| {
            let mut m = Machine::new(id, vec![format!("52:54:00:00:00:{id:02x}").parse().unwrap()], 0);
            m.hostname = host.map(Into::into);
            m
        };
        let mut v = vec![mk(3, Some("b")), mk(1, Some("c")), mk(2, None), mk(4, Some("b"))];
        sort(&mut v, "hostname", false);
        assert_eq!(v.iter().map(|m| m.id).collect::<Vec<_>>(), [2, 3, 4, 1]);
        sort(&mut v, "hostname", true);
        assert_eq!(v.iter().map(|m| m.id).collect::<Vec<_>>(), [1, 4, 3, 2]);
    }
}
