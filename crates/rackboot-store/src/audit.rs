//! The audit log: one entry per change made through the API (and per refused change and failed
//! login), appended after the call completes, newest `cap` kept: each append deletes the oldest
//! entries past the cap in its own transaction. Entries never hold bodies or secrets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::store::{decode, encode, AUDIT, KEY_NEXT_AUDIT, META};
use super::{Cmdb, CmdbError};

/// How a call ended, from its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// 1xx-3xx.
    Ok,
    /// 401 or 403: no valid token, a role too low, or a wrong password.
    Denied,
    /// 429: refused by the login rate limit.
    Limited,
    /// Any other error.
    Failed,
}

impl Outcome {
    /// The outcome a response status means.
    pub fn of(status: u16) -> Outcome {
        match status {
            401 | 403 => Outcome::Denied,
            429 => Outcome::Limited,
            s if s < 400 => Outcome::Ok,
            _ => Outcome::Failed,
        }
    }
}

/// One audited call.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    /// Sequence number (newest is highest).
    pub seq: u64,
    /// Unix milliseconds when the call completed.
    pub at_ms: u64,
    /// The caller's user; for a login, the username tried; `-` when unknown.
    pub user: String,
    /// The caller's token id, if one was valid.
    pub token: Option<String>,
    /// The peer's IP address.
    pub from: String,
    /// HTTP method.
    pub method: String,
    /// The route template under `/api/v1`, e.g. `/users/{name}`.
    pub route: String,
    /// The path parameters of the call (e.g. `name`), never the body or a query.
    pub params: BTreeMap<String, String>,
    /// HTTP status of the answer.
    pub status: u16,
    pub outcome: Outcome,
    /// The resource pools of what the call acted on (a machine's, a rack's, a job's machine's;
    /// both for a move between pools); absent when it acted on nothing in a pool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<String>,
}

/// Which entries a page holds.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub user: Option<String>,
    pub method: Option<String>,
    pub status: Option<u16>,
    pub outcome: Option<Outcome>,
    /// Only calls that acted on something in this pool.
    pub pool: Option<String>,
    /// Unix milliseconds, inclusive.
    pub since_ms: Option<u64>,
    /// Unix milliseconds, exclusive.
    pub until_ms: Option<u64>,
    /// Entries with a lower sequence than this (the cursor).
    pub before: Option<u64>,
    pub limit: usize,
}

/// Entries one page looks at, at most (the default cap plus rotation slack).
const SCAN: usize = 200_000;

impl Cmdb {
    /// Appends `entry` (its `seq` is assigned here) and deletes the oldest entries past `cap`,
    /// in one transaction; waits for the commit.
    pub async fn append_audit(&self, mut entry: AuditEntry, cap: usize) -> Result<u64, CmdbError> {
        self.write(move |ctx| {
            let mut meta = ctx.t.tx.open_table(META)?;
            let seq = meta.get(KEY_NEXT_AUDIT)?.map_or(1, |v| v.value());
            meta.insert(KEY_NEXT_AUDIT, seq + 1)?;
            entry.seq = seq;
            let mut t = ctx.t.tx.open_table(AUDIT)?;
            t.insert(seq, encode(&entry).as_slice())?;
            while t.len()? as usize > cap.max(1) {
                t.pop_first()?;
            }
            Ok(seq)
        })
        .await
    }

    /// A page of entries, newest first, and the cursor (a sequence) of the next page.
    pub async fn audit_page(&self, f: AuditFilter) -> Result<(Vec<AuditEntry>, Option<u64>), CmdbError> {
        self.read(move |rtx| {
            let t = rtx.open_table(AUDIT)?;
            let (mut out, mut next) = (Vec::new(), None);
            for row in t.range(..f.before.unwrap_or(u64::MAX))?.rev().take(SCAN) {
                let e: AuditEntry = decode(row?.1.value())?;
                if f.since_ms.is_some_and(|s| e.at_ms < s) {
                    break;
                }
                let keep = f.user.as_ref().is_none_or(|u| &e.user == u)
                    && f.method.as_ref().is_none_or(|m| e.method.eq_ignore_ascii_case(m))
                    && f.status.is_none_or(|s| e.status == s)
                    && f.outcome.is_none_or(|o| e.outcome == o)
                    && f.pool.as_ref().is_none_or(|p| e.pools.contains(p))
                    && f.until_ms.is_none_or(|u| e.at_ms < u);
                if !keep {
                    continue;
                }
                if out.len() >= f.limit {
                    next = out.last().map(|l: &AuditEntry| l.seq);
                    break;
                }
                out.push(e);
            }
            Ok((out, next))
        })
        .await
    }

    /// Audit entries stored now.
    pub async fn audit_len(&self) -> Result<u64, CmdbError> {
        self.read(|rtx| rtx.open_table(AUDIT)?.len()).await
    }
}
