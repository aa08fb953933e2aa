//! SQL for what an operator watches: counts and host states across organizations for the metrics
//! (by connection id only).

use crate::db::{Conn, DbResult};

/// Workspaces with an open session, for every connection (of every organization; 0 for none).
pub async fn open_sessions_by_connection(c: &mut Conn) -> DbResult<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT c.id, COUNT(w.id) FROM sandbox_connections c \
         LEFT JOIN sandbox_workspaces w ON w.connection_id = c.id AND w.state = 'open' GROUP BY c.id ORDER BY c.id",
    )
    .fetch_all(c)
    .await?)
}

/// Tombstones waiting, for every connection (of every organization; 0 for none).
pub async fn tombstones_by_connection(c: &mut Conn) -> DbResult<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT c.id, COUNT(t.id) FROM sandbox_connections c \
         LEFT JOIN sandbox_tombstones t ON t.connection_id = c.id GROUP BY c.id ORDER BY c.id",
    )
    .fetch_all(c)
    .await?)
}

/// Tombstones whose retry was due at or before `before`, for every connection (0 for none).
pub async fn tombstones_overdue_by_connection(c: &mut Conn, before: i64) -> DbResult<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT c.id, COUNT(t.id) FROM sandbox_connections c \
         LEFT JOIN sandbox_tombstones t ON t.connection_id = c.id AND t.next_attempt_at <= $1 GROUP BY c.id ORDER BY c.id",
    )
    .bind(before)
    .fetch_all(c)
    .await?)
}

/// Every switched-on connection's last known state: (id, health code, since, checked at), the
/// last three null before its first check.
pub async fn host_states(c: &mut Conn) -> DbResult<Vec<(String, Option<String>, Option<i64>, Option<i64>)>> {
    Ok(sqlx::query_as(
        "SELECT c.id, h.health, h.since, h.checked_at FROM sandbox_connections c \
         LEFT JOIN sandbox_host_checks h ON h.connection_id = c.id WHERE c.is_enabled = 1 ORDER BY c.id",
    )
    .fetch_all(c)
    .await?)
}
