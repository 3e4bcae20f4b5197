//! `/api/v1/tasks`: provisioning tasks. A task picks its machines (by MAC, serial, tag, or the
//! next N to call in), and fans out into one run per machine that the engine walks to
//! `installed`.

use std::collections::HashSet;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{page, ApiError, ApiState};
use crate::cmdb::{Machine, MachineFilter, MachineState, NewMachine, NewRun};
use crate::provision::{hostname, ip_from_pool, parse_pool, Run, Selector, Task, TaskSpec};

pub fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(show)).routes(routes!(cancel))
}

fn bad(m: impl Into<String>) -> ApiError {
    ApiError::bad(m)
}

/// A task and its runs (one per machine).
#[derive(Serialize, ToSchema)]
pub struct TaskRuns {
    pub task: Task,
    pub runs: Vec<Run>,
}

/// A plain file name (no directories, no dot files): what may be joined to a served directory.
fn plain_name(n: &str) -> bool {
    !n.is_empty() && !n.starts_with('.') && n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// The image: a file in the images directory; its checksum is computed here when not given.
async fn image_checksum(engine: &crate::provision::engine::Engine, spec: &mut TaskSpec) -> Result<(), ApiError> {
    let name = spec.image.clone().unwrap_or_default();
    if !plain_name(&name) {
        return Err(bad(format!("image {name:?} must be a plain file name in the images directory")));
    }
    let image = engine.cfg.images_dir.join(&name);
    if !image.is_file() {
        return Err(bad(format!("image {name:?} is not in {}", engine.cfg.images_dir.display())));
    }
    if spec.image_sha256.as_ref().is_some_and(|h| h.len() != 64 || !h.chars().all(|c| c.is_ascii_hexdigit())) {
        return Err(bad("image_sha256 must be 64 hex digits"));
    }
    // A qcow2 image is checked and converted to raw here, once (qemu-img): seconds to minutes.
    let (dir, given) = (engine.cfg.images_dir.clone(), spec.image_sha256.clone());
    let sum = tokio::task::spawn_blocking(move || crate::provision::images::prepare(&dir, &name, given.as_deref()))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(bad)?;
    spec.image_sha256 = Some(sum);
    Ok(())
}

/// Creates a provisioning task: picks its machines (MACs, serials, a tag, or the next N to call
/// in) and queues one run per machine, which the engine walks to `installed`.
#[utoipa::path(post, path = "/tasks", tag = "tasks", request_body = TaskSpec,
    responses((status = 201, description = "Created, with its runs", body = TaskRuns),
        (status = 404, description = "No machine has the tag", body = super::Problem, content_type = "application/problem+json"),
        (status = 409, description = "A machine is installed (set reinstall) or busy", body = super::Problem, content_type = "application/problem+json"),
        (status = 503, description = "Provisioning is not running", body = super::Problem, content_type = "application/problem+json")))]
async fn create(
    State(s): State<ApiState>,
    body: Result<Json<TaskSpec>, JsonRejection>,
) -> Result<(StatusCode, Json<TaskRuns>), ApiError> {
    let Json(mut spec) = body?;
    let engine = s
        .engine
        .as_ref()
        .ok_or_else(|| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "provisioning is not running"))?;
    let cmdb = &s.cmdb;
    if !spec.purpose.is_provision() {
        let what = spec.purpose.name();
        return Err(ApiError::field(
            "purpose",
            format!("a {what} starts from the machine: POST /machines/{{id}}/{what}"),
        ));
    }

    match (&spec.image, &spec.installer) {
        (Some(_), None) => image_checksum(engine, &mut spec).await?,
        (None, Some(name)) => {
            let profiles = super::profiles::all_profiles(&s).await?;
            let p = profiles.get(name).ok_or_else(|| bad(format!("no boot profile {name:?} for the installer")))?;
            if p.answer.is_none() {
                return Err(bad(format!(
                    "boot profile {name:?} has no answer file (set answer = \"kickstart\", \"preseed\" or \"autoinstall\")"
                )));
            }
        }
        _ => return Err(bad("a task needs either an image or an installer")),
    }
    if let Some(u) = &spec.user_data {
        rackboot_model::cloudinit::check_user_data(u).map_err(|e| ApiError::field("user_data", e))?;
    }
    if let Some(hints) = &spec.root_device {
        if spec.disk != "auto" {
            return Err(bad(format!("give disk {:?} or root_device hints, not both", spec.disk)));
        }
        hints.check().map_err(bad)?;
    }
    if let Some(layout) = &spec.layout {
        if spec.image.is_none() {
            return Err(ApiError::field(
                "layout",
                "a layout is for image deploys: an installer lays out its own disks",
            ));
        }
        layout.check().map_err(|e| ApiError::field("layout", e))?;
    }
    if let Some(p) = &spec.hardware_profile {
        let Some(profile) = engine.cfg.hardware_profiles.get(p) else {
            return Err(bad(format!("no hardware profile {p:?} in [[provision.hardware_profiles]]")));
        };
        // Its plugins must be stored, enabled, and take the profile's parameters.
        for r in &profile.plugins {
            crate::plugins::usage::resolve(&s.cmdb, r).await.map_err(|e| bad(format!("hardware profile {p}: {e}")))?;
        }
        // So must its firmware baseline's, with the parameters the flash adds.
        let baseline = profile.firmware_baseline.as_ref();
        if let (Some(fw), Some(b)) = (&s.firmware, baseline.and_then(|b| s.firmware.as_ref()?.baselines().get(b))) {
            crate::firmware::inband::check_plugins(fw, &s.cmdb, b)
                .await
                .map_err(|e| bad(format!("hardware profile {p}: {e}")))?;
        }
    }
    if let Some(p) = &spec.commission {
        if !engine.cfg.test_profiles.contains_key(p) {
            return Err(ApiError::field("commission", format!("no test profile {p:?} in [[provision.test_profiles]]")));
        }
    }
    for name in &spec.post_install {
        if !plain_name(name) || !engine.cfg.postinstall_dir.join(name).is_file() {
            return Err(bad(format!(
                "post-install script {name:?} is not in {}",
                engine.cfg.postinstall_dir.display()
            )));
        }
    }
    if spec.disk != "auto" && !spec.disk.starts_with('/') {
        return Err(bad("disk must be \"auto\" or an absolute device path"));
    }
    // These go into the identity script: refuse now what it would refuse after the disk is
    // already overwritten.
    for v in spec.ssh_keys.iter().chain(std::iter::once(&spec.disk)) {
        if !crate::render::shell_safe(v) {
            return Err(bad(format!("{v:?} cannot go into the identity script (quotes, $, backquotes, backslashes)")));
        }
    }
    // An installer's answer file also has them inside single quotes.
    if spec.installer.is_some() {
        if let Some(k) = spec.ssh_keys.iter().find(|k| k.contains('\'')) {
            return Err(bad(format!("{k:?} cannot go into an answer file (single quote)")));
        }
    }
    match &spec.select {
        Selector::Macs(v) if v.is_empty() => return Err(bad("select.macs is empty")),
        Selector::Serials(v) if v.is_empty() => return Err(bad("select.serials is empty")),
        _ => {}
    }
    if !(1..=crate::jobs::MAX_TIMEOUT_SECS).contains(&spec.step_timeout_secs) {
        return Err(bad("step_timeout_secs out of range"));
    }
    let pool = spec.ip_pool.as_deref().map(parse_pool).transpose().map_err(bad)?;

    // The machines: a pool-scoped caller's selection reaches only the pools they operate.
    let allowed = super::scope::pools_for_call();
    if let Some(p) = &spec.pool {
        rackboot_model::pools::check(p).map_err(|e| ApiError::field("pool", e))?;
    }
    let mut machines = Vec::new();
    match &spec.select {
        Selector::Macs(macs) => {
            for mac in macs {
                machines.push(by_mac(&s, *mac, allowed.is_some(), spec.pool.as_deref()).await?);
            }
        }
        Selector::Serials(serials) => {
            let f = MachineFilter { limit: Some(usize::MAX), pools: allowed.clone(), ..Default::default() };
            let all = cmdb.list_machines(f).await?.machines;
            for sn in serials {
                let m = all.iter().find(|m| m.serial.as_deref() == Some(sn.as_str()));
                machines.push(m.cloned().ok_or_else(|| bad(format!("no machine has serial {sn:?}")))?);
            }
        }
        Selector::Tag(t) => {
            let f = MachineFilter {
                tag: Some(t.clone()),
                pool: spec.pool.clone(),
                pools: allowed.clone(),
                limit: Some(usize::MAX),
                ..Default::default()
            };
            machines = cmdb.list_machines(f).await?.machines;
            if machines.is_empty() {
                return Err(ApiError::not_found(format!("no machine has tag {t:?}")));
            }
        }
        Selector::Next(n) => {
            if *n == 0 || *n > 10_000 {
                return Err(bad("next must be 1..=10000"));
            }
        }
    }
    let task_pool = task_pool(spec.pool.as_deref(), &machines, allowed.as_deref())?;
    // An installer profile of a pool's is for that pool's tasks only.
    if let Some(name) = &spec.installer {
        super::profiles::usable_in(&s, name, &task_pool).await.map_err(|e| ApiError::field("installer", e.detail))?;
    }
    super::scope::touched(&task_pool);
    spec.pool = Some(task_pool);
    for m in &machines {
        super::scope::touched(&m.pool);
        if m.state == MachineState::Installed && !spec.reinstall {
            return Err(ApiError::conflict(format!("machine {} is installed; set \"reinstall\": true", m.id)));
        }
        if m.state == MachineState::Retired {
            return Err(ApiError::conflict(format!("machine {} is retired: bring it back first", m.id)));
        }
    }
    let count = match spec.select {
        Selector::Next(n) => n as usize,
        _ => machines.len(),
    };
    let mut runs = Vec::new();
    let mut taken_ips = HashSet::new();
    let mut names = HashSet::new();
    for i in 0..count {
        let m = machines.get(i);
        let index = i as u32 + 1;
        let host = match &spec.hostname_pattern {
            Some(p) => Some(hostname(p, index, m.and_then(|m| m.macs.first().copied())).map_err(bad)?),
            None => m.and_then(|m| m.hostname.clone()),
        };
        if let Some(h) = &host {
            if !names.insert(h.clone()) {
                return Err(bad(format!("the hostname pattern gives {h:?} twice")));
            }
        }
        let ip = match (pool, m) {
            (Some(pool), _) => {
                let taken =
                    |ip| taken_ips.contains(&ip) || cmdb.reserved_owner(ip).is_some_and(|o| Some(o) != m.map(|m| m.id));
                let ip = ip_from_pool(pool, &taken, 1).ok_or_else(|| bad("ip_pool has too few free addresses"))?;
                taken_ips.insert(ip);
                Some(ip)
            }
            (None, Some(m)) => m.reserved_ip,
            (None, None) => None,
        };
        runs.push(NewRun { machine_id: m.map(|m| m.id), hostname: host, ip });
    }
    let (task, runs) = cmdb.create_task(spec, runs).await?;
    engine.wake();
    Ok((StatusCode::CREATED, Json(TaskRuns { task, runs })))
}

/// The machine with `mac`, for a task. Not there yet: registered now (it waits in the queue
/// until its agent calls in), in the task's pool if one is given; a pool-scoped caller
/// registers nothing and reaches only their pools' machines (another's is not there).
async fn by_mac(s: &ApiState, mac: crate::mac::Mac, scoped: bool, pool: Option<&str>) -> Result<Machine, ApiError> {
    let cmdb = &s.cmdb;
    let m = match cmdb.machine_by_mac(mac).await {
        Ok(m) => m,
        Err(e @ crate::cmdb::CmdbError::NotFound(_)) if scoped => return Err(e.into()),
        Err(crate::cmdb::CmdbError::NotFound(_)) => {
            let m = match cmdb.create_machine(NewMachine { macs: vec![mac], ..Default::default() }).await {
                Ok(m) => m,
                // It powered on (DHCP or its agent registered it) just now.
                Err(crate::cmdb::CmdbError::Conflict(_)) => cmdb.machine_by_mac(mac).await?,
                Err(e) => return Err(e.into()),
            };
            match pool {
                Some(p) if p != m.pool => cmdb.set_machine_pool(m.id, p.to_string()).await?,
                _ => m,
            }
        }
        Err(e) => return Err(e.into()),
    };
    super::scope::admit(Some(&m.pool), &format!("machine with MAC {mac}"))?;
    Ok(m)
}

/// The pool a task acts in: the one given (every machine must be of it), else the one its
/// machines share, else (`next`) `default`, or a pool-scoped caller's only operator pool. A
/// pool-scoped caller's task is in a pool they operate.
fn task_pool(given: Option<&str>, machines: &[Machine], allowed: Option<&[String]>) -> Result<String, ApiError> {
    let shared: std::collections::BTreeSet<&str> = machines.iter().map(|m| m.pool.as_str()).collect();
    let pool = match (given, shared.len(), allowed) {
        (Some(p), _, _) => {
            if let Some(m) = machines.iter().find(|m| m.pool != p) {
                return Err(ApiError::field("pool", format!("machine {} is in pool {}, not {p}", m.id, m.pool)));
            }
            p.to_string()
        }
        (None, 1, _) => shared.into_iter().next().unwrap_or_default().to_string(),
        (None, 0, Some([only])) => only.clone(),
        (None, 0, Some(_)) => return Err(ApiError::field("pool", "give the pool whose ready machines to take")),
        (None, 0, None) => rackboot_model::pools::DEFAULT.to_string(),
        (None, _, _) => {
            let names: Vec<&str> = shared.into_iter().collect();
            return Err(ApiError::field(
                "pool",
                format!("the machines are in pools {}: a task acts in one pool (give pool)", names.join(", ")),
            ));
        }
    };
    if allowed.is_some_and(|a| !a.contains(&pool)) {
        return Err(ApiError::new(StatusCode::FORBIDDEN, format!("this needs role operator in pool {pool}")));
    }
    Ok(pool)
}

/// Page of the task list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TaskQuery {
    /// Page size (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    limit: Option<usize>,
    /// Where the page starts: `next_cursor` of the previous page.
    #[serde(default, deserialize_with = "super::page::empty_none")]
    #[param(pattern = r"^(tasks\.[0-9]{1,18})?$")]
    cursor: Option<String>,
}

/// A page of tasks, newest first.
#[derive(Serialize, ToSchema)]
pub struct TaskList {
    pub tasks: Vec<Task>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Lists tasks, newest first.
#[utoipa::path(get, path = "/tasks", tag = "tasks", params(TaskQuery),
    responses((status = 200, description = "A page of tasks", body = TaskList)))]
async fn list(
    State(s): State<ApiState>,
    q: Result<Query<TaskQuery>, QueryRejection>,
) -> Result<Json<TaskList>, ApiError> {
    let Query(q) = q?;
    let before = page::key("tasks", q.cursor.as_deref())?;
    // A pool-scoped caller lists their pools' tasks only.
    let (tasks, next) = s.cmdb.tasks(before, page::limit(q.limit, 1000)?, super::scope::pools_for_call()).await?;
    Ok(Json(TaskList { tasks, next_cursor: next.map(|id| page::cursor("tasks", id)) }))
}

/// A task and its runs.
#[utoipa::path(get, path = "/tasks/{id}", tag = "tasks", params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, description = "The task and its runs", body = TaskRuns)))]
async fn show(State(s): State<ApiState>, UrlPath(id): UrlPath<u64>) -> Result<Json<TaskRuns>, ApiError> {
    let task = visible(&s, id).await?;
    let runs = s.cmdb.runs(task.runs.clone()).await?;
    Ok(Json(TaskRuns { task, runs }))
}

/// Cancels every unfinished run of the task (and the job it is at), in one transaction;
/// machines not yet installed go back to `ready`.
#[utoipa::path(post, path = "/tasks/{id}/cancel", tag = "tasks", params(("id" = u64, Path, description = "Task id")),
    responses((status = 200, description = "The task and its runs", body = TaskRuns)))]
async fn cancel(State(s): State<ApiState>, UrlPath(id): UrlPath<u64>) -> Result<Json<TaskRuns>, ApiError> {
    visible(&s, id).await?;
    for job in s.cmdb.cancel_task(id).await? {
        s.hub.publish(job.id, crate::controller::JobEvent::Done(Box::new(job)));
    }
    if let Some(e) = &s.engine {
        e.wake();
    }
    let task = s.cmdb.task(id).await?;
    let runs = s.cmdb.runs(task.runs.clone()).await?;
    Ok(Json(TaskRuns { task, runs }))
}

/// Task `id`, if the caller may reach it: a pool-scoped caller, only their pools' (another's
/// answers 404 as a missing one).
async fn visible(s: &ApiState, id: u64) -> Result<Task, ApiError> {
    let task = s.cmdb.task(id).await?;
    super::scope::admit(Some(task.spec.pool()), &format!("task {id}"))?;
    Ok(task)
}
