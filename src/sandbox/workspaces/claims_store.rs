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

/// Claims `key` for a destroy until `until`, unless a purge or another destroy holds it at `now`
/// (an open's claim does not stop it: the caller decides by the rows); the open's claim as it
/// stands when claimed, `None` when not. One statement, a write: the caller's transaction holds
/// the lock from then on.
pub(super) async fn take_destroy(c: &mut Conn, key: &str, until: i64, now: i64) -> DbResult<Option<i64>> {
    let row: Option<(i64,)> = sqlx::query_as(
        "INSERT INTO sandbox_session_claims (session_key, opening_until, purging_until) VALUES ($1, 0, $2) \
         ON CONFLICT (session_key) DO UPDATE SET purging_until = $2 \
         WHERE sandbox_session_claims.purging_until <= $3 RETURNING opening_until",
    )
    .bind(key)
    .bind(until)
    .bind(now)
    .fetch_optional(c)
    .await?;
    Ok(row.map(|(opening_until,)| opening_until))
}

/// The workspace rows (of any organization) that name host session `what` (the id a destroy names
/// it by; `name` is its name) by key or by reference, each with whether it **uses** it: its
/// reference is either, or, when `what` is a name, it opened a session of that key (has a
/// reference) or is opening one (`preparing`). A row that names the key but has no session (never
/// opened, or its session forgotten) uses nothing yet. One statement.
pub(super) async fn namers(c: &mut Conn, name: &str, what: &str) -> DbResult<Vec<(String, bool)>> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT id, CASE WHEN session_ref IN ($1, $2) \
           OR (session_key = $2 AND (session_ref IS NOT NULL OR state = 'preparing')) THEN 1 ELSE 0 END \
         FROM sandbox_workspaces WHERE session_key IN ($1, $2) OR session_ref IN ($1, $2) ORDER BY id",
    )
    .bind(name)
    .bind(what)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(|(id, uses)| (id, uses == 1)).collect())
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

/// Ends an open's claim on `key`.
pub(super) async fn clear_open(c: &mut Conn, key: &str) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_session_claims SET opening_until = 0 WHERE session_key = $1")
        .bind(key)
        .execute(c)
        .await?;
    Ok(())
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
