//! SQL for tombstones. A claim is a conditional UPDATE: only one sweeper's succeeds.

use super::model::{Pending, Tombstone};
use crate::db::{Conn, DbResult};

const COLUMNS: &str = "id, organization_id, connection_id, session_key, session_id, reason, attempts, \
    next_attempt_at, last_error, created_at";

pub struct NewTombstone<'a> {
    pub org_id: &'a str,
    pub connection_id: &'a str,
    pub session_key: &'a str,
    pub session_id: &'a str,
    pub reason: &'a str,
}

/// Inserts a tombstone due at once; returns its id.
pub async fn insert(c: &mut Conn, t: &NewTombstone<'_>, now: i64) -> DbResult<String> {
    let id = crate::db::new_id();
    sqlx::query(
        "INSERT INTO sandbox_tombstones (id, organization_id, connection_id, session_key, session_id, reason, \
         attempts, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $7)",
    )
    .bind(&id)
    .bind(t.org_id)
    .bind(t.connection_id)
    .bind(t.session_key)
    .bind(t.session_id)
    .bind(t.reason)
    .bind(now)
    .execute(c)
    .await?;
    Ok(id)
}

/// Ids of tombstones due at `now` and not claimed by a live claim, oldest due first.
pub async fn due(c: &mut Conn, now: i64, limit: i64) -> DbResult<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT id FROM sandbox_tombstones WHERE next_attempt_at <= $1 \
         AND (claimed_until IS NULL OR claimed_until <= $1) ORDER BY next_attempt_at, id LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Every tombstone of every organization still waiting (due or not) and the earliest next
/// attempt: what the command-line sweep reports (a sandbox that may still run at its provider).
pub async fn waiting_everywhere(c: &mut Conn) -> DbResult<(i64, Option<i64>)> {
    let row: (i64, Option<i64>) =
        sqlx::query_as("SELECT COUNT(*), MIN(next_attempt_at) FROM sandbox_tombstones").fetch_one(c).await?;
    Ok(row)
}

/// Claims one tombstone for `token` until `until`, if it is still due and unclaimed: the
/// conditional UPDATE lets only one concurrent sweeper win (the other's matches no row).
pub async fn claim(c: &mut Conn, id: &str, token: &str, now: i64, until: i64) -> DbResult<Option<Tombstone>> {
    let n = sqlx::query(
        "UPDATE sandbox_tombstones SET claimed_until = $1, claim_token = $2 WHERE id = $3 \
         AND next_attempt_at <= $4 AND (claimed_until IS NULL OR claimed_until <= $4)",
    )
    .bind(until)
    .bind(token)
    .bind(id)
    .bind(now)
    .execute(&mut *c)
    .await?
    .rows_affected();
    if n != 1 {
        return Ok(None);
    }
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM sandbox_tombstones WHERE id = $1 AND claim_token = $2"))
        .bind(id)
        .bind(token)
        .fetch_optional(c)
        .await?)
}

/// The provider confirmed: the tombstone goes (only by the sweeper holding its claim).
pub async fn remove(c: &mut Conn, id: &str, token: &str) -> DbResult<()> {
    sqlx::query("DELETE FROM sandbox_tombstones WHERE id = $1 AND claim_token = $2")
        .bind(id)
        .bind(token)
        .execute(c)
        .await?;
    Ok(())
}

/// A failed attempt: counted, the next one scheduled, the claim released.
pub async fn failed(c: &mut Conn, id: &str, token: &str, next: i64, error: &str, now: i64) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_tombstones SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2, \
         last_attempt_at = $3, claimed_until = NULL, claim_token = NULL WHERE id = $4 AND claim_token = $5",
    )
    .bind(next)
    .bind(error)
    .bind(now)
    .bind(id)
    .bind(token)
    .execute(c)
    .await?;
    Ok(())
}

/// Not attempted now (its name is being opened or destroyed): due again at `next`, the claim
/// released, the attempts and the last error kept.
pub async fn defer(c: &mut Conn, id: &str, token: &str, next: i64) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_tombstones SET next_attempt_at = $1, claimed_until = NULL, claim_token = NULL \
         WHERE id = $2 AND claim_token = $3",
    )
    .bind(next)
    .bind(id)
    .bind(token)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Tombstone>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM sandbox_tombstones WHERE organization_id = $1 AND id = $2"))
        .bind(org_id)
        .bind(id)
        .fetch_optional(c)
        .await?)
}

pub async fn of_connection(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<Vec<Tombstone>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_tombstones WHERE organization_id = $1 AND connection_id = $2 \
         ORDER BY next_attempt_at, id"
    ))
    .bind(org_id)
    .bind(connection_id)
    .fetch_all(c)
    .await?)
}

/// Each connection's waiting tombstones: how many, the earliest next attempt, the latest error.
pub async fn pending_by_connection(c: &mut Conn, org_id: &str) -> DbResult<Vec<(String, Pending)>> {
    let rows: Vec<(String, i64, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT connection_id, next_attempt_at, last_error, last_attempt_at FROM sandbox_tombstones \
         WHERE organization_id = $1 ORDER BY connection_id",
    )
    .bind(org_id)
    .fetch_all(c)
    .await?;
    let mut out: Vec<(String, Pending, i64)> = Vec::new();
    for (conn, next, error, last_at) in rows {
        if out.last().is_none_or(|(c, _, _)| *c != conn) {
            out.push((conn.clone(), Pending::default(), i64::MIN));
        }
        if let Some((_, p, latest)) = out.last_mut() {
            p.count += 1;
            p.next_attempt_at = Some(p.next_attempt_at.map_or(next, |n| n.min(next)));
            if let (Some(e), Some(at)) = (error, last_at) {
                if at >= *latest {
                    *latest = at;
                    p.last_error = Some(e);
                }
            }
        }
    }
    Ok(out.into_iter().map(|(c, p, _)| (c, p)).collect())
}

pub async fn count_for_connection(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<i64> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM sandbox_tombstones WHERE organization_id = $1 AND connection_id = $2")
            .bind(org_id)
            .bind(connection_id)
            .fetch_one(c)
            .await?;
    Ok(n)
}

pub async fn delete_for_connection(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM sandbox_tombstones WHERE organization_id = $1 AND connection_id = $2")
        .bind(org_id)
        .bind(connection_id)
        .execute(c)
        .await?
        .rows_affected())
}

/// Whether a tombstone of `org_id` on `connection_id` names host session `session_id`.
pub async fn names_session(c: &mut Conn, org_id: &str, connection_id: &str, session_id: &str) -> DbResult<bool> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM sandbox_tombstones WHERE organization_id = $1 AND connection_id = $2 \
         AND (session_id = $3 OR session_key = $3)",
    )
    .bind(org_id)
    .bind(connection_id)
    .bind(session_id)
    .fetch_one(c)
    .await?;
    Ok(n > 0)
}
