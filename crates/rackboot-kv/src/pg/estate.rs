//! What the appliances sharing a store tell each other through it: the change log the others
//! follow (`changes`, trimmed after an hour, with the trim's watermark) and the DHCP pairs'
//! beats (`dhcp_pairs`), both on the database's clock.

use super::Pg;
use crate::CmdbError;

impl Pg {
    /// Change-log entries after `seq`, oldest first, at most `limit`, and the newest sequence
    /// a trim has removed: past `seq`, entries were missed for good.
    pub fn changes_after(&self, seq: i64, limit: i64) -> Result<(i64, Vec<(i64, Change)>), CmdbError> {
        let client = self.client()?;
        let rows = self
            .block(async {
                // One round trip; the watermark's row comes back even when no entry does.
                let stmt = client
                    .prepare_cached(
                        "SELECT t.through, c.seq, c.appliance, c.machines, c.leases, c.racks, c.events_from, c.events_to
                         FROM changes_trimmed t LEFT JOIN LATERAL
                             (SELECT * FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2) c ON true
                         ORDER BY c.seq",
                    )
                    .await?;
                client.query(&stmt, &[&seq, &limit]).await
            })
            .map_err(|e| self.error(e))?;
        let col = |e: tokio_postgres::Error| CmdbError::Storage(format!("changes: {e}"));
        let through = match rows.first() {
            Some(r) => r.try_get(0).map_err(col)?,
            None => return Err(CmdbError::Storage("changes: the trim watermark row is missing".into())),
        };
        let ids = |v: Vec<i64>| v.into_iter().map(|i| i as u64).collect();
        let mut entries = Vec::with_capacity(rows.len());
        for r in &rows {
            let Some(at) = r.try_get::<_, Option<i64>>(1).map_err(col)? else { continue };
            let events = match (r.try_get::<_, Option<i64>>(6), r.try_get::<_, Option<i64>>(7)) {
                (Ok(Some(a)), Ok(Some(b))) => Some((a as u64, b as u64)),
                _ => None,
            };
            entries.push((
                at,
                Change {
                    appliance: r.try_get(2).map_err(col)?,
                    machines: ids(r.try_get(3).map_err(col)?),
                    leases: ids(r.try_get(4).map_err(col)?),
                    racks: r.try_get(5).map_err(col)?,
                    events,
                },
            ));
        }
        Ok((through, entries))
    }

    /// Where a follower starting now begins: the newest entry of the change log, or what the
    /// trims have passed if that is newer (0 for a store never written).
    pub fn newest_change(&self) -> Result<i64, CmdbError> {
        let client = self.client()?;
        let row = self
            .block(client.query_one(
                "SELECT greatest(coalesce(max(seq), 0), (SELECT through FROM changes_trimmed)) FROM changes",
                &[],
            ))
            .map_err(|e| self.error(e))?;
        Ok(row.get(0))
    }

    /// Drops change-log entries older than `secs` and moves the trim watermark past them.
    pub fn trim_changes(&self, secs: i64) -> Result<u64, CmdbError> {
        let client = self.client()?;
        let row = self
            .block(client.query_one(
                "WITH gone AS (DELETE FROM changes WHERE at < now() - make_interval(secs => $1) RETURNING seq),
                      moved AS (UPDATE changes_trimmed SET through = greatest(through, (SELECT max(seq) FROM gone))
                                WHERE EXISTS (SELECT 1 FROM gone) RETURNING through)
                 SELECT count(*) FROM gone",
                &[&(secs as f64)],
            ))
            .map_err(|e| self.error(e))?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// Records a beat of `appliance` as `role` of DHCP pair `pair` and returns how long ago the
    /// other member last beat (`None`: never), both on the database's clock. Also says which
    /// appliance held this role until now, if another one beat as it within `fresh_secs`.
    pub fn pair_beat(
        &self,
        pair: &str,
        role: &str,
        appliance: &str,
        active: bool,
        fresh_secs: f64,
    ) -> Result<(Option<f64>, Option<String>), CmdbError> {
        let client = self.client()?;
        self.block(async {
            let clash = client
                .query_opt(
                    "SELECT appliance FROM dhcp_pairs WHERE pair = $1 AND role = $2 AND appliance <> $3
                     AND beat_at > now() - make_interval(secs => $4)",
                    &[&pair, &role, &appliance, &fresh_secs],
                )
                .await?
                .map(|r| r.get::<_, String>(0));
            client
                .execute(
                    "INSERT INTO dhcp_pairs (pair, role, appliance, active, beat_at) VALUES ($1, $2, $3, $4, now())
                     ON CONFLICT (pair, role) DO UPDATE SET appliance = excluded.appliance, active = excluded.active,
                         beat_at = excluded.beat_at",
                    &[&pair, &role, &appliance, &active],
                )
                .await?;
            let other = client
                .query_opt(
                    "SELECT extract(epoch FROM now() - beat_at)::float8 FROM dhcp_pairs WHERE pair = $1 AND role <> $2",
                    &[&pair, &role],
                )
                .await?
                .map(|r| r.get::<_, f64>(0));
            Ok((other, clash))
        })
        .map_err(|e| self.error(e))
    }

    /// Whether the store answers (the writer asks while faulted).
    pub fn ping(&self) -> Result<(), CmdbError> {
        let client = self.client()?;
        self.block(client.simple_query("SELECT 1")).map(|_| ()).map_err(|e| self.error(e))
    }
}

/// What one write batch changed, for the other appliances sharing the store.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub appliance: String,
    pub machines: Vec<u64>,
    pub leases: Vec<u64>,
    pub racks: bool,
    /// The batch's events, first and last sequence.
    pub events: Option<(u64, u64)>,
}

/// One appliance as the store knows it.
#[derive(Debug, Clone)]
pub struct ApplianceRow {
    pub id: String,
    pub hostname: String,
    pub https_base: String,
    pub version: String,
    pub started_at: i64,
    /// Seconds since its last beat, on the database's clock.
    pub age_secs: f64,
    /// The DHCP pair it beats in, if any: (pair, role, answering).
    pub pair: Option<(String, String, bool)>,
}

impl Pg {
    /// Records that appliance `id` is up and where it answers; drops appliances not seen for a
    /// week.
    pub fn appliance_beat(
        &self,
        id: &str,
        hostname: &str,
        https_base: &str,
        version: &str,
        started_at: i64,
    ) -> Result<(), CmdbError> {
        let client = self.client()?;
        self.block(client.batch_execute("DELETE FROM appliances WHERE beat_at < now() - interval '7 days'"))
            .map_err(|e| self.error(e))?;
        self.block(client.execute(
            "INSERT INTO appliances (id, hostname, https_base, version, started_at, beat_at)
             VALUES ($1, $2, $3, $4, to_timestamp($5::float8), now())
             ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, https_base = excluded.https_base,
                 version = excluded.version, started_at = excluded.started_at, beat_at = excluded.beat_at",
            &[&id, &hostname, &https_base, &version, &(started_at as f64)],
        ))
        .map(|_| ())
        .map_err(|e| self.error(e))
    }

    /// Every appliance that beat in the last week, most recently started first.
    pub fn appliances(&self) -> Result<Vec<ApplianceRow>, CmdbError> {
        let client = self.client()?;
        let rows = self
            .block(client.query(
                "SELECT a.id, a.hostname, a.https_base, a.version, extract(epoch FROM a.started_at)::int8,
                        extract(epoch FROM now() - a.beat_at)::float8, p.pair, p.role, p.active
                 FROM appliances a LEFT JOIN LATERAL
                     (SELECT pair, role, active FROM dhcp_pairs WHERE appliance = a.id ORDER BY beat_at DESC LIMIT 1) p
                     ON true
                 ORDER BY a.started_at DESC, a.id",
                &[],
            ))
            .map_err(|e| self.error(e))?;
        let col = |e: tokio_postgres::Error| CmdbError::Storage(format!("appliances: {e}"));
        rows.iter()
            .map(|r| {
                let pair = match (
                    r.try_get::<_, Option<String>>(6).map_err(col)?,
                    r.try_get::<_, Option<String>>(7).map_err(col)?,
                ) {
                    (Some(name), Some(role)) => {
                        Some((name, role, r.try_get::<_, Option<bool>>(8).map_err(col)?.unwrap_or(false)))
                    }
                    _ => None,
                };
                Ok(ApplianceRow {
                    id: r.try_get(0).map_err(col)?,
                    hostname: r.try_get(1).map_err(col)?,
                    https_base: r.try_get(2).map_err(col)?,
                    version: r.try_get(3).map_err(col)?,
                    started_at: r.try_get(4).map_err(col)?,
                    age_secs: r.try_get(5).map_err(col)?,
                    pair,
                })
            })
            .collect()
    }
}
