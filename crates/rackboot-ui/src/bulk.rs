//! `POST /ui/machines/bulk`: an action on the machines selected in the list. Each machine's
//! change is one REST API call made as the session's user (so the API's role table, checks and
//! audit entry apply); destructive actions need the selection's size (or `delete`) typed in.

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde_json::{json, Value};

use super::form::Form;
use super::forward::{self, Answer};
use super::session::{self, Session};
use super::view::{message, urlencode};
use super::UiState;

/// Machines one bulk action takes at most.
pub const MAX_SELECTED: usize = 1000;
/// Longest script a bulk action sends.
const MAX_SCRIPT: usize = 64 << 10;

/// What a bulk action does to one machine: an API call.
// One per form post: the size of the provisioning variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    /// Submit an agent job (`refresh_inventory`, `reboot`, `power_off`).
    Job(&'static str),
    /// Run a shell script (`/bin/sh`) as an agent job.
    Script(String),
    Tag(String),
    Delete,
    /// A power action through each machine's BMC (`on`, `off`, `cycle`, `pxe-once`), all at
    /// once: the power service caps what is in flight.
    Power(&'static str),
    /// One provisioning task over the selection (by each machine's first MAC): an image file
    /// name or an installer boot profile, and whether installed machines are taken too.
    Provision {
        image: Option<String>,
        installer: Option<String>,
        root_device: Option<rackboot_model::provision::RootDeviceHints>,
        layout: Option<rackboot_model::provision::Layout>,
        /// cloud-init user-data for the installed machines.
        user_data: Option<String>,
        reinstall: bool,
        /// A test profile the machines pass before the install.
        commission: Option<String>,
    },
    /// Day two (`POST /machines/{id}/<what>`): release (with its erase), rescue, return,
    /// retire, unretire.
    Lifecycle {
        what: &'static str,
        body: Option<Value>,
    },
}

impl Action {
    fn parse(f: &Form) -> Result<Action, String> {
        match f.get("action").unwrap_or("") {
            "refresh_inventory" => Ok(Action::Job("refresh_inventory")),
            "reboot" => Ok(Action::Job("reboot")),
            "power_off" => Ok(Action::Job("power_off")),
            "script" => match f.get("script") {
                Some(b) if !b.trim().is_empty() && b.len() <= MAX_SCRIPT => Ok(Action::Script(b.replace("\r\n", "\n"))),
                Some(_) => Err(format!("a script is at most {MAX_SCRIPT} bytes")),
                None => Err("the script is empty".into()),
            },
            "tag" => match f.get("tag").map(str::trim) {
                Some(t) if !t.is_empty() && t.len() <= 64 => Ok(Action::Tag(t.to_string())),
                _ => Err("a tag of 1 to 64 characters is needed".into()),
            },
            "delete" => Ok(Action::Delete),
            "bmc_on" => Ok(Action::Power("on")),
            "bmc_off" => Ok(Action::Power("off")),
            "bmc_cycle" => Ok(Action::Power("cycle")),
            "bmc_pxe" => Ok(Action::Power("pxe-once")),
            "provision" => {
                let field = |name| f.get(name).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
                let (image, installer) = (field("image"), field("installer"));
                if image.is_some() == installer.is_some() {
                    return Err("to provision, give either an image or an installer profile".into());
                }
                if [&image, &installer].into_iter().flatten().any(|v| v.len() > 255) {
                    return Err("an image or profile name is at most 255 characters".into());
                }
                // Root-device hints, comma-separated KEY=VALUE (the API checks what they ask).
                let root_device = match field("root_device") {
                    Some(v) if v.len() > 1024 => return Err("root-device hints are at most 1024 characters".into()),
                    Some(v) => Some(rackboot_model::provision::RootDeviceHints::from_pairs(v.split(','))?),
                    None => None,
                };
                // cloud-init user-data for the task (the API checks its format and size).
                let user_data = f.get("user_data").map(|v| v.replace("\r\n", "\n")).filter(|v| !v.trim().is_empty());
                let reinstall = f.get("reinstall").is_some();
                let layout = f.layout()?;
                let commission = field("test_profile");
                if commission.as_ref().is_some_and(|p| p.len() > 64) {
                    return Err("a test profile's name is at most 64 characters".into());
                }
                Ok(Action::Provision { image, installer, root_device, layout, user_data, reinstall, commission })
            }
            "release" => {
                let erase = f.get("erase").unwrap_or("");
                let erase: rackboot_agent::wire::EraseMode = erase.parse()?;
                let body = json!({"erase": erase, "keep_reservation": f.get("keep_reservation").is_some()});
                Ok(Action::Lifecycle { what: "release", body: Some(body) })
            }
            "rescue" => {
                Ok(Action::Lifecycle { what: "rescue", body: Some(json!({"mount": f.get("mount").is_some()})) })
            }
            "return" => Ok(Action::Lifecycle { what: "return", body: None }),
            "commission" => match f.get("test_profile").map(str::trim) {
                Some(p) if !p.is_empty() && p.len() <= 64 => {
                    Ok(Action::Lifecycle { what: "commission", body: Some(json!({"profile": p})) })
                }
                _ => Err("to commission, name a test profile".into()),
            },
            "retire" => Ok(Action::Lifecycle { what: "retire", body: None }),
            "unretire" => Ok(Action::Lifecycle { what: "unretire", body: None }),
            "" => Err("choose an action".into()),
            other => Err(format!("{other:?} is not an action this page offers")),
        }
    }

    /// Whether a person must type the count (or `delete`) first.
    fn destructive(&self) -> bool {
        matches!(
            self,
            Action::Delete
                | Action::Script(_)
                | Action::Provision { .. }
                | Action::Job("reboot" | "power_off")
                | Action::Power("off" | "cycle")
                | Action::Lifecycle { what: "release" | "rescue" | "return" | "commission", .. }
        )
    }

    fn done(&self) -> String {
        match self {
            Action::Job(kind) => format!("queued a {} job on", kind.replace('_', " ")),
            Action::Script(_) => "queued a script job on".into(),
            Action::Tag(t) => format!("tagged {t:?}:"),
            Action::Delete => "deleted".into(),
            Action::Power("pxe-once") => "set a one-time network boot through the BMC of".into(),
            Action::Power(a) => format!("powered {a} through the BMC (verified)"),
            Action::Provision { .. } => "queued provisioning of".into(),
            Action::Lifecycle { what: "release", body } => {
                format!(
                    "queued the release (erase: {}) of",
                    body.as_ref().map_or("?", |b| b["erase"].as_str().unwrap_or("?"))
                )
            }
            Action::Lifecycle { what: "rescue", .. } => "queued the rescue of".into(),
            Action::Lifecycle { what: "commission", .. } => "queued the commissioning of".into(),
            Action::Lifecycle { what: "return", .. } => "returned to their disks".into(),
            Action::Lifecycle { what: "retire", .. } => "retired".into(),
            Action::Lifecycle { .. } => "brought back".into(),
        }
    }
}

/// The machine ids of the selection: numbers, without repeats, at most [`MAX_SELECTED`].
fn selection(f: &Form) -> Result<Vec<u64>, String> {
    let mut ids = BTreeSet::new();
    for v in f.all("id") {
        ids.insert(v.parse::<u64>().map_err(|_| format!("{v:?} is not a machine id"))?);
        if ids.len() > MAX_SELECTED {
            return Err(format!("at most {MAX_SELECTED} machines at once"));
        }
    }
    if ids.is_empty() {
        return Err("select at least one machine".into());
    }
    Ok(ids.into_iter().collect())
}

/// Whether the typed confirmation matches a destructive action on `n` machines.
fn confirmed(action: &Action, typed: Option<&str>, n: usize) -> bool {
    let typed = typed.unwrap_or("").trim();
    !action.destructive() || typed == n.to_string() || (*action == Action::Delete && typed == "delete")
}

/// Runs a bulk action and redirects back to the list it came from with what happened.
pub async fn run(State(s): State<UiState>, session: Session, headers: HeaderMap, body: axum::body::Body) -> Response {
    let f = match Form::read(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    if let Err(why) = session::check_post(&session, &headers, f.get("csrf")) {
        return session::refuse(why);
    }
    let bad = |why: String| message(&s.views, StatusCode::BAD_REQUEST, "Bulk action", &why, &session);
    let (action, ids) = match (Action::parse(&f), selection(&f)) {
        (Ok(a), Ok(ids)) => (a, ids),
        (Err(why), _) | (_, Err(why)) => return bad(why),
    };
    if !confirmed(&action, f.get("confirm"), ids.len()) {
        let what = if action == Action::Delete { format!("{} (or delete)", ids.len()) } else { ids.len().to_string() };
        return bad(format!("nothing was done: type {what} in the confirmation box to act on {} machines", ids.len()));
    }
    if let Action::Provision { image, installer, root_device, layout, user_data, reinstall, commission } = &action {
        let mut spec = json!({"image": image, "installer": installer, "reinstall": reinstall});
        if let Some(p) = commission {
            spec["commission"] = json!(p);
        }
        if let Some(hints) = root_device {
            spec["root_device"] = json!(hints);
        }
        if let Some(layout) = layout {
            spec["layout"] = json!(layout);
        }
        if let Some(text) = user_data {
            spec["user_data"] = json!(text);
        }
        return provision(&s, &session, spec, &ids, &f).await;
    }
    let (mut ok, mut failed, mut first_error) = (0usize, 0usize, None);
    let answers: Vec<Answer> = match action {
        // Each waits for its BMC; all at once (the power service caps what is in flight).
        Action::Power(_) => {
            futures_util::future::join_all(ids.iter().map(|id| apply(&s, &session, &action, *id))).await
        }
        _ => {
            let mut answers = Vec::new();
            for id in &ids {
                answers.push(apply(&s, &session, &action, *id).await);
            }
            answers
        }
    };
    for (id, answer) in ids.iter().zip(answers) {
        if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
            // The API refused this user; it refuses the rest the same way (and audited it).
            return message(&s.views, answer.status, "Not allowed", &answer.message(), &session);
        }
        if answer.status.is_success() {
            ok += 1;
        } else {
            failed += 1;
            first_error.get_or_insert_with(|| format!("machine {id}: {}", answer.message()));
        }
    }
    let mut notice = format!("{} {ok} of {} machines", action.done(), ids.len());
    if let Some(e) = first_error {
        notice.push_str(&format!("; {failed} failed ({})", e.chars().take(200).collect::<String>()));
    }
    // A machine page's own form goes back to that page (unless the machine is gone).
    if let ([id], Some("machine"), false) = (ids.as_slice(), f.get("to"), action == Action::Delete) {
        return Redirect::to(&format!("/ui/machines/{id}?notice={}", urlencode(&notice))).into_response();
    }
    back_to_list(&f, &notice)
}

/// The redirect to the list the form came from, with `notice` shown once.
fn back_to_list(f: &Form, notice: &str) -> Response {
    let back = f.get("back").filter(|b| super::view::url_safe(b)).unwrap_or("");
    let back = back.split('&').filter(|kv| !kv.starts_with("notice=")).collect::<Vec<_>>().join("&");
    Redirect::to(&format!("/ui/machines?{back}&notice={}", urlencode(notice))).into_response()
}

/// Creates one provisioning task (`spec` without its selection) for the selected machines
/// (`POST /api/v1/tasks`).
async fn provision(s: &UiState, session: &Session, mut spec: Value, ids: &[u64], f: &Form) -> Response {
    let mut macs = Vec::new();
    for id in ids {
        // Another pool's machine is not there for a pool-scoped user (its MAC is not told).
        let found = s.api.cmdb.machine(*id).await.and_then(|m| match session.sees(&m.pool) {
            true => Ok(m),
            false => Err(rackboot_store::CmdbError::NotFound(format!("machine {id}"))),
        });
        match found {
            Ok(m) => macs.extend(m.macs.first().map(ToString::to_string)),
            Err(e) => return message(&s.views, StatusCode::NOT_FOUND, "Provision", &e.to_string(), session),
        }
    }
    spec["select"] = json!({"macs": macs});
    let answer = forward::as_session(s, session, Method::POST, "/tasks", Some(spec)).await;
    if answer.status == StatusCode::FORBIDDEN || answer.status == StatusCode::UNAUTHORIZED {
        return message(&s.views, answer.status, "Not allowed", &answer.message(), session);
    }
    let notice = match answer.body["task"]["id"].as_u64() {
        Some(task) if answer.status.is_success() => {
            format!("queued provisioning of {} machines: task {task}", ids.len())
        }
        _ => format!("nothing was provisioned: {}", answer.message().chars().take(300).collect::<String>()),
    };
    back_to_list(f, &notice)
}

/// One machine's API call for `action`.
async fn apply(s: &UiState, session: &Session, action: &Action, id: u64) -> Answer {
    match action {
        Action::Job(kind) => {
            let body = json!({"machine": id.to_string(), "action": {"kind": kind}});
            forward::as_session(s, session, Method::POST, "/jobs", Some(body)).await
        }
        Action::Script(body) => {
            let action = json!({"kind": "script", "interpreter": "/bin/sh", "body": body});
            let body = json!({"machine": id.to_string(), "action": action});
            forward::as_session(s, session, Method::POST, "/jobs", Some(body)).await
        }
        Action::Tag(tag) => {
            let tags: Vec<Value> = match s.api.cmdb.machine(id).await {
                Ok(m) if m.tags.contains(tag) => return Answer { status: StatusCode::OK, body: Value::Null },
                Ok(m) => m.tags.into_iter().map(Value::from).chain([Value::from(tag.clone())]).collect(),
                Err(e) => return Answer { status: StatusCode::NOT_FOUND, body: json!({"detail": e.to_string()}) },
            };
            forward::as_session(s, session, Method::PATCH, &format!("/machines/{id}"), Some(json!({"tags": tags})))
                .await
        }
        Action::Delete => forward::as_session(s, session, Method::DELETE, &format!("/machines/{id}"), None).await,
        Action::Power(a) => {
            let body = json!({"action": a, "uefi": machine_uefi(s, id).await});
            forward::as_session(s, session, Method::POST, &format!("/machines/{id}/power"), Some(body)).await
        }
        Action::Lifecycle { what, body } => {
            forward::as_session(s, session, Method::POST, &format!("/machines/{id}/{what}"), body.clone()).await
        }
        // One task for the whole selection: `provision`, never per machine.
        Action::Provision { .. } => {
            Answer { status: StatusCode::INTERNAL_SERVER_ERROR, body: json!({"detail": "provisioning is one task"}) }
        }
    }
}

/// Whether a one-time network boot should be UEFI: unless DHCP last saw the machine boot BIOS.
async fn machine_uefi(s: &UiState, id: u64) -> bool {
    s.api.cmdb.machine(id).await.map_or(true, |m| !m.last_arch.as_deref().is_some_and(|a| a.starts_with("bios")))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn form(body: &str) -> Form {
        Form::read(axum::body::Body::from(body.to_string())).await.unwrap()
    }

    #[tokio::test]
    async fn a_selection_is_bounded_and_numeric() {
        assert_eq!(selection(&form("id=3&id=1&id=3").await).unwrap(), [1, 3]);
        assert!(selection(&form("id=x").await).is_err());
        assert!(selection(&form("").await).is_err());
        let many: Vec<String> = (0..=MAX_SELECTED).map(|i| format!("id={i}")).collect();
        assert!(selection(&form(&many.join("&")).await).is_err());
    }

    #[tokio::test]
    async fn destructive_actions_need_the_count_typed() {
        let del = Action::parse(&form("action=delete").await).unwrap();
        assert!(!confirmed(&del, None, 3));
        assert!(!confirmed(&del, Some("2"), 3));
        assert!(confirmed(&del, Some(" 3 "), 3));
        assert!(confirmed(&del, Some("delete"), 3));
        let reboot = Action::parse(&form("action=reboot").await).unwrap();
        assert!(!confirmed(&reboot, Some("delete"), 3));
        let script = Action::parse(&form("action=script&script=echo+hi").await).unwrap();
        assert_eq!(script, Action::Script("echo hi".into()));
        assert!(!confirmed(&script, None, 1) && confirmed(&script, Some("1"), 1));
        assert!(Action::parse(&form("action=script&script=+").await).is_err());
        let tag = Action::parse(&form("action=tag&tag=rack1").await).unwrap();
        assert!(confirmed(&tag, None, 3));
        assert!(Action::parse(&form("action=tag").await).is_err());
        let prov = Action::parse(&form("action=provision&image=lab.img").await).unwrap();
        assert!(!confirmed(&prov, Some("delete"), 2) && confirmed(&prov, Some("2"), 2));
        assert!(Action::parse(&form("action=provision").await).is_err(), "neither image nor installer");
        assert!(Action::parse(&form("action=provision&image=a&installer=b").await).is_err(), "both");
        let hinted = "action=provision&image=lab.img&root_device=model%3DPERC+H730%2C+min_size_gib%3D200";
        match Action::parse(&form(hinted).await).unwrap() {
            Action::Provision { root_device: Some(h), .. } => {
                assert_eq!((h.model.as_deref(), h.min_size_gib), (Some("PERC H730"), Some(200)))
            }
            other => panic!("{other:?}"),
        }
        let err = Action::parse(&form("action=provision&image=a&root_device=size%3D3").await).unwrap_err();
        assert!(err.contains("not a root-device hint"), "{err}");
        assert!(Action::parse(&form("action=format_disks").await).is_err());
        // A release says its erase; it, a rescue and a return need the count typed.
        assert!(Action::parse(&form("action=release").await).unwrap_err().contains("unknown erase mode"));
        assert!(Action::parse(&form("action=release&erase=shred").await).is_err());
        let release = Action::parse(&form("action=release&erase=zero&keep_reservation=1").await).unwrap();
        let body = json!({"erase": "zero", "keep_reservation": true});
        assert_eq!(release, Action::Lifecycle { what: "release", body: Some(body) });
        assert!(!confirmed(&release, Some("delete"), 2) && confirmed(&release, Some("2"), 2));
        let rescue = Action::parse(&form("action=rescue&mount=1").await).unwrap();
        assert!(!confirmed(&rescue, None, 1));
        let retire = Action::parse(&form("action=retire").await).unwrap();
        assert!(confirmed(&retire, None, 4), "retiring a released machine loses nothing");
        let on = Action::parse(&form("action=bmc_on").await).unwrap();
        assert!(on == Action::Power("on") && confirmed(&on, None, 5), "powering on needs no confirmation");
        let off = Action::parse(&form("action=bmc_off").await).unwrap();
        assert!(!confirmed(&off, None, 2) && confirmed(&off, Some("2"), 2));
        assert!(!confirmed(&Action::Power("cycle"), Some("delete"), 2));
    }
}
