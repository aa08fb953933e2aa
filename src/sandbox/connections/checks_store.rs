//! SQL for each connection's last known health (`sandbox_host_checks`). A check's claim is a
//! conditional UPDATE: only one replica's succeeds, and only its token may write the result.

use crate::db::{Conn, DbResult};

/// A connection's last check, as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CheckRow {
    pub connection_id: String,
    pub version: String,
    /// A `Health` code; `None` before the first check.
    pub health: Option<String>,
    pub message: Option<String>,
    /// When the last check began (epoch milliseconds).
    pub checked_at: Option<i64>,
    /// Since when the state has been what it is.
    pub since: Option<i64>,
}

const COLUMNS: &str = "connection_id, version, health, message, checked_at, since";

/// The last checks of `org_id`'s connections.
pub async fn of_organization(c: &mut Conn, org_id: &str) -> DbResult<Vec<CheckRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM sandbox_host_checks WHERE organization_id = $1"))
        .bind(org_id)
        .fetch_all(c)
        .await?)
}

/// Every connection's last check (of every organization: the metrics label them by id only).
pub async fn everywhere(c: &mut Conn) -> DbResult<Vec<CheckRow>> {
    Ok(sqlx::query_as(&format!("SELECT {COLUMNS} FROM sandbox_host_checks ORDER BY connection_id"))
        .fetch_all(c)
        .await?)
}

/// A claim on one connection's check.
pub struct Claim<'a> {
    pub org_id: &'a str,
    pub connection_id: &'a str,
    /// The connection's version the check is about.
    pub version: &'a str,
    pub token: &'a str,
    pub now: i64,
    /// Due when last checked at or before this instant.
    pub due_before: i64,
    /// The claim expires then (a crashed checker holds nothing after it).
    pub until: i64,
}

/// Claims a connection's check, if no live claim holds it and it is due: never checked, last
/// checked at or before `due_before`, or about another `version`. The row is made on the first
/// claim. True when this caller holds the claim.
pub async fn claim(c: &mut Conn, k: &Claim<'_>) -> DbResult<bool> {
    sqlx::query(
        "INSERT INTO sandbox_host_checks (connection_id, organization_id, version) VALUES ($1, $2, '') \
         ON CONFLICT (connection_id) DO NOTHING",
    )
    .bind(k.connection_id)
    .bind(k.org_id)
    .execute(&mut *c)
    .await?;
    let claimed = sqlx::query(
        "UPDATE sandbox_host_checks SET claimed_until = $1, claim_token = $2 WHERE connection_id = $3 \
         AND claimed_until <= $4 AND (checked_at IS NULL OR checked_at <= $5 OR version <> $6)",
    )
    .bind(k.until)
    .bind(k.token)
    .bind(k.connection_id)
    .bind(k.now)
    .bind(k.due_before)
    .bind(k.version)
    .execute(c)
    .await?;
    Ok(claimed.rows_affected() == 1)
}

/// What a check that began at `checked_at` found, written by the holder of the claim (`token`),
/// which it releases. `since` moves only when the state changed.
pub async fn record_claimed(
    c: &mut Conn,
    connection_id: &str,
    token: &str,
    version: &str,
    health: &str,
    message: &str,
    checked_at: i64,
) -> DbResult<bool> {
    let written = sqlx::query(
        "UPDATE sandbox_host_checks SET \
           since = CASE WHEN health = $1 THEN since ELSE $2 END, \
           health = $1, message = $3, version = $4, checked_at = $2, claimed_until = 0, claim_token = NULL \
         WHERE connection_id = $5 AND claim_token = $6",
    )
    .bind(health)
    .bind(checked_at)
    .bind(message)
    .bind(version)
    .bind(connection_id)
    .bind(token)
    .execute(c)
    .await?;
    Ok(written.rows_affected() == 1)
}

/// What a check outside the schedule found (the Connections table's, a save's): kept as the last
/// known state unless a newer check is already stored. Takes no claim and leaves one alone.
pub async fn record_seen(
    c: &mut Conn,
    org_id: &str,
    connection_id: &str,
    version: &str,
    health: &str,
    message: &str,
    checked_at: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO sandbox_host_checks (connection_id, organization_id, version) VALUES ($1, $2, '') \
         ON CONFLICT (connection_id) DO NOTHING",
    )
    .bind(connection_id)
    .bind(org_id)
    .execute(&mut *c)
    .await?;
    sqlx::query(
        "UPDATE sandbox_host_checks SET \
           since = CASE WHEN health = $1 THEN since ELSE $2 END, \
           health = $1, message = $3, version = $4, checked_at = $2 \
         WHERE connection_id = $5 AND (checked_at IS NULL OR checked_at <= $2)",
    )
    .bind(health)
    .bind(checked_at)
    .bind(message)
    .bind(version)
    .bind(connection_id)
    .execute(c)
    .await?;
    Ok(())
}
