//! SQL for what an operator watches: counts across organizations for the metrics (by connection
//! id only), and one organization's failed operations for its health.

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
