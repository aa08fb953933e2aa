//! The metrics' figures of this moment and the health report.

use super::model::{ConnectionState, HealthReport};
use super::store;
use crate::access::Caller;
use crate::db::DbError;
use crate::instruments::{self, Snapshot};
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::service as connections;
use crate::sandbox::tombstones::service as tombstones;
use crate::state::AppState;

/// The window of the failed operations the report counts.
pub const FAILED_WINDOW_MS: i64 = 60 * 60 * 1000;

/// What `/metrics` answers: the gauges read now, then everything in Prometheus's text format;
/// `None` when no recorder is installed (metrics off).
pub async fn scrape(st: &AppState) -> Result<Option<String>, DbError> {
    let Some(handle) = instruments::handle() else { return Ok(None) };
    let (open_sessions, tombstones_pending) = {
        let mut c = st.db.conn().await?;
        (store::open_sessions_by_connection(&mut c).await?, store::tombstones_by_connection(&mut c).await?)
    };
    let pool = st.db.pool();
    instruments::set_snapshot(&Snapshot {
        open_sessions: &open_sessions,
        tombstones_pending: &tombstones_pending,
        recording_queue: st.recorder.queued(),
        pool_connections: pool.size(),
        pool_idle: pool.num_idle(),
        version: env!("CARGO_PKG_VERSION"),
        sandboxd_version: &st.sandboxd_version,
    });
    Ok(Some(handle.render()))
}

/// The caller's organization at a glance: each connection's last known state (no host is asked),
/// its pending deletes, the sweeps' last runs and the operations that failed in the last hour.
pub async fn health(st: &AppState, caller: &Caller, now: i64) -> Result<HealthReport, ConnectionError> {
    let conns = connections::list_with_known_health(st, caller).await?;
    let pending = tombstones::pending(st, &caller.org_id).await.map_err(|e| ConnectionError::Internal(e.into()))?;
    let failed_operations_last_hour = {
        let mut log = st.log.reader().await?;
        log.failed_since(&caller.org_id, now - FAILED_WINDOW_MS).await?
    };
    let connections: Vec<ConnectionState> = conns
        .into_iter()
        .map(|(conn, known)| ConnectionState {
            pending: pending.iter().find(|(id, _)| *id == conn.id).map(|(_, p)| p.clone()).unwrap_or_default(),
            state: known.as_ref().map(|h| h.health),
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
