//! The metrics' figures of this moment and the health report.

use super::model::{ConnectionState, HealthReport};
use super::store;
use crate::access::Caller;
use crate::db::DbError;
use crate::instruments::{self, Snapshot};
use crate::sandbox::connections::checks;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::Health;
use crate::sandbox::connections::service as connections;
use crate::sandbox::tombstones::service as tombstones;
use crate::state::AppState;

/// A pending delete counts as overdue once its retry is this far past (the sweep runs every minute).
pub const OVERDUE_AFTER_MS: i64 = 5 * 60 * 1000;

/// The window of the failed operations the report counts.
pub const FAILED_WINDOW_MS: i64 = 60 * 60 * 1000;

/// What `/metrics` answers: the gauges read now, then everything in Prometheus's text format;
/// `None` when no recorder is installed (metrics off).
pub async fn scrape(st: &AppState) -> Result<Option<String>, DbError> {
    let Some(handle) = instruments::handle() else { return Ok(None) };
    let now = crate::db::now_ms();
    let (open_sessions, tombstones_pending, tombstones_overdue, hosts) = {
        let mut c = st.db.conn().await?;
        (
            store::open_sessions_by_connection(&mut c).await?,
            store::tombstones_by_connection(&mut c).await?,
            store::tombstones_overdue_by_connection(&mut c, now - OVERDUE_AFTER_MS).await?,
            store::host_states(&mut c).await?,
        )
    };
    let seconds = |from: Option<i64>| from.map_or(0, |t| (now - t).max(0) / 1000);
    let is_problem = |code: Option<&str>| code.and_then(Health::from_code).is_some_and(|h| !h.is_healthy());
    let host_down_seconds: Vec<(String, i64)> = hosts
        .iter()
        .map(|(id, code, since, _)| (id.clone(), if is_problem(code.as_deref()) { seconds(*since) } else { 0 }))
        .collect();
    let host_check_age_seconds: Vec<(String, i64)> =
        hosts.iter().map(|(id, _, _, checked_at)| (id.clone(), seconds(*checked_at))).collect();
    let pool = st.db.pool();
    let text = instruments::render_snapshot(
        handle,
        &Snapshot {
            open_sessions: &open_sessions,
            tombstones_pending: &tombstones_pending,
            tombstones_overdue: &tombstones_overdue,
            host_down_seconds: &host_down_seconds,
            host_check_age_seconds: &host_check_age_seconds,
            recording_queue: st.recorder.queued(),
            pool_connections: pool.size(),
            pool_idle: pool.num_idle(),
            version: env!("CARGO_PKG_VERSION"),
            sandboxd_version: &st.sandboxd_version,
        },
    );
    Ok(Some(text))
}

/// The caller's organization at a glance: each connection's last known state as the host checks
/// kept it (no host is asked), its pending deletes, the sweeps' last runs and the operations that
/// failed in the last hour.
pub async fn health(st: &AppState, caller: &Caller, now: i64) -> Result<HealthReport, ConnectionError> {
    let conns = connections::list(st, caller).await?;
    let known = checks::last_known(st, &caller.org_id, &conns).await?;
    let pending = tombstones::pending(st, &caller.org_id).await.map_err(|e| ConnectionError::Internal(e.into()))?;
    let failed_operations_last_hour = {
        let mut log = st.log.reader().await?;
        log.failed_since(&caller.org_id, now - FAILED_WINDOW_MS).await?
    };
    let connections: Vec<ConnectionState> = conns
        .into_iter()
        .zip(known)
        .map(|(conn, known)| ConnectionState {
            pending: pending.iter().find(|(id, _)| *id == conn.id).map(|(_, p)| p.clone()).unwrap_or_default(),
            state: known.as_ref().map(|h| h.health),
            checked_at: known.as_ref().and_then(|h| h.checked_at),
            since: known.as_ref().and_then(|h| h.since),
            message: known.map(|h| h.message),
            id: conn.id,
            name: conn.name,
            is_enabled: conn.is_enabled,
        })
        .collect();
    let tombstones_pending = pending.iter().map(|(_, p)| p.count).sum();
    let connections_with_failed_deletes = connections.iter().filter(|c| c.pending.last_error.is_some()).count() as i64;
    let sweeps = st.sweeps.last();
    let ok = !connections.iter().any(ConnectionState::is_problem)
        && connections_with_failed_deletes == 0
        && sweeps.iter().all(|s| s.ok);
    Ok(HealthReport {
        ok,
        connections,
        tombstones_pending,
        connections_with_failed_deletes,
        sweeps,
        failed_operations_last_hour,
    })
}
