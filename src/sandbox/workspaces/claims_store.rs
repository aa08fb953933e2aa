//! SQL for the claims on host session names (`sandbox_session_claims`, see [`super::claims`]).

use crate::db::{Conn, DbResult};

/// Claims `key` for an open until `until`, unless a purge holds it at `now`; true when claimed.
/// One statement.
pub(super) async fn take_open(c: &mut Conn, key: &str, until: i64, now: i64) -> DbResult<bool> {
    let sql = "INSERT INTO sandbox_session_claims (session_key, opening_until, purging_until) VALUES ($1, $2, 0) \
         ON CONFLICT (session_key) DO UPDATE SET opening_until = CASE \
           WHEN sandbox_session_claims.opening_until > $2 THEN sandbox_session_claims.opening_until ELSE $2 END \
         WHERE sandbox_session_claims.purging_until <= $3";
    take(c, sql, key, until, now).await
}

/// Claims `key` for a purge until `until`, unless an open or a purge holds it at `now`; true when
/// claimed. One statement, a write: the caller's transaction holds the lock from then on.
pub(super) async fn take_purge(c: &mut Conn, key: &str, until: i64, now: i64) -> DbResult<bool> {
    let sql = "INSERT INTO sandbox_session_claims (session_key, opening_until, purging_until) VALUES ($1, 0, $2) \
         ON CONFLICT (session_key) DO UPDATE SET purging_until = $2 \
         WHERE sandbox_session_claims.opening_until <= $3 AND sandbox_session_claims.purging_until <= $3";
    take(c, sql, key, until, now).await
}

/// Runs claim statement `sql` for `key` (`$1`), `until` (`$2`) and `now` (`$3`): whether it
/// wrote the row.
async fn take(c: &mut Conn, sql: &str, key: &str, until: i64, now: i64) -> DbResult<bool> {
    let n = sqlx::query(sql).bind(key).bind(until).bind(now).execute(c).await?.rows_affected();
    Ok(n > 0)
}

/// Counts the workspace rows (of any organization: a destroy errs on the side of keeping) and the
/// tombstones that name host session `$1` or `$2`, by key or by reference.
const NAMING: &str =
    "(SELECT COUNT(*) FROM sandbox_workspaces WHERE session_key IN ($1, $2) OR session_ref IN ($1, $2)) \
     + (SELECT COUNT(*) FROM sandbox_tombstones WHERE session_key IN ($1, $2) OR session_id IN ($1, $2))";

/// Whether a workspace row or a tombstone names host session `a` or `b`. One statement, so one
/// snapshot: a row whose reference is being written is seen before or after, never missed.
pub(super) async fn names_any(c: &mut Conn, a: &str, b: &str) -> DbResult<bool> {
    let (n,): (i64,) = sqlx::query_as(&format!("SELECT {NAMING}")).bind(a).bind(b).fetch_one(c).await?;
    Ok(n > 0)
}

/// Whether a workspace row, a tombstone or a claim unexpired at `now` names host session `a` or
/// `b`, in one statement.
pub(super) async fn is_known(c: &mut Conn, a: &str, b: &str, now: i64) -> DbResult<bool> {
    let (n,): (i64,) = sqlx::query_as(&format!(
        "SELECT {NAMING} + (SELECT COUNT(*) FROM sandbox_session_claims WHERE session_key IN ($1, $2) \
         AND (opening_until > $3 OR purging_until > $3))"
    ))
    .bind(a)
    .bind(b)
    .bind(now)
    .fetch_one(c)
    .await?;
    Ok(n > 0)
}

/// Ends a purge's claim on `key`.
pub(super) async fn clear_purge(c: &mut Conn, key: &str) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_session_claims SET purging_until = 0 WHERE session_key = $1")
        .bind(key)
        .execute(c)
        .await?;
    Ok(())
}

/// Deletes the claims that hold nothing at `now`; returns how many.
pub(super) async fn delete_expired(c: &mut Conn, now: i64) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM sandbox_session_claims WHERE opening_until <= $1 AND purging_until <= $1")
        .bind(now)
        .execute(c)
        .await?
        .rows_affected())
}
