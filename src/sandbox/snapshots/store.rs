//! SQL for snapshots, agents' snapshot settings and what a run starts from.

use super::model::{Mode, Settings, Snapshot};
use crate::db::{Conn, DbResult};

const COLUMNS: &str =
    "id, organization_id, workspace_id, agent_id, created_at, size_bytes, file_count, object_key, taken_by";

pub async fn insert(c: &mut Conn, s: &Snapshot) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO snapshots (id, organization_id, workspace_id, agent_id, created_at, size_bytes, file_count, \
         object_key, taken_by, attempts) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 0)",
    )
    .bind(&s.id)
    .bind(&s.organization_id)
    .bind(&s.workspace_id)
    .bind(&s.agent_id)
    .bind(s.created_at)
    .bind(s.size_bytes)
    .bind(s.file_count)
    .bind(&s.object_key)
    .bind(&s.taken_by)
    .execute(c)
    .await?;
    Ok(())
}

/// A workspace's live snapshots, newest first.
pub async fn of_workspace(c: &mut Conn, org_id: &str, workspace_id: &str) -> DbResult<Vec<Snapshot>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM snapshots WHERE organization_id = $1 AND workspace_id = $2 AND doomed_at IS NULL \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(org_id)
    .bind(workspace_id)
    .fetch_all(c)
    .await?)
}

/// One live snapshot of the organization.
pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Snapshot>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM snapshots WHERE organization_id = $1 AND id = $2 AND doomed_at IS NULL"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_optional(c)
    .await?)
}

/// Marks snapshots for deletion from the store (a tombstone each), due at once: `ids`, or every
/// one of the workspace.
pub async fn doom_workspace(c: &mut Conn, org_id: &str, workspace_id: &str, now: i64) -> DbResult<u64> {
    Ok(sqlx::query(
        "UPDATE snapshots SET doomed_at = $1, next_attempt_at = $1 \
         WHERE organization_id = $2 AND workspace_id = $3 AND doomed_at IS NULL",
    )
    .bind(now)
    .bind(org_id)
    .bind(workspace_id)
    .execute(c)
    .await?
    .rows_affected())
}

pub async fn doom(c: &mut Conn, id: &str, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE snapshots SET doomed_at = $1, next_attempt_at = $1 WHERE id = $2 AND doomed_at IS NULL")
        .bind(now)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// Doomed snapshots due at `now`: (id, object key, attempts).
pub async fn due(c: &mut Conn, now: i64, limit: i64) -> DbResult<Vec<(String, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT id, object_key, attempts FROM snapshots WHERE doomed_at IS NOT NULL AND next_attempt_at <= $1 \
         ORDER BY next_attempt_at, id LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(c)
    .await?)
}

/// Doomed snapshots of the workspace (after its delete), due or not: (id, object key, attempts).
pub async fn doomed_of(c: &mut Conn, workspace_id: &str) -> DbResult<Vec<(String, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT id, object_key, attempts FROM snapshots WHERE workspace_id = $1 AND doomed_at IS NOT NULL",
    )
    .bind(workspace_id)
    .fetch_all(c)
    .await?)
}

pub async fn remove(c: &mut Conn, id: &str) -> DbResult<()> {
    sqlx::query("DELETE FROM snapshots WHERE id = $1 AND doomed_at IS NOT NULL").bind(id).execute(c).await?;
    Ok(())
}

pub async fn reschedule(c: &mut Conn, id: &str, next: i64, error: &str) -> DbResult<()> {
    sqlx::query("UPDATE snapshots SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2 WHERE id = $3")
        .bind(next)
        .bind(error)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// How many doomed snapshots of the organization wait for the store.
pub async fn pending(c: &mut Conn, org_id: &str) -> DbResult<i64> {
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM snapshots WHERE organization_id = $1 AND doomed_at IS NOT NULL")
            .bind(org_id)
            .fetch_one(c)
            .await?;
    Ok(n)
}

/// Whether the workspace had a write, mkdir, remove or command recorded after `since`.
pub async fn changed_since(c: &mut Conn, org_id: &str, workspace_id: &str, since: i64) -> DbResult<bool> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT id FROM sandbox_operations WHERE organization_id = $1 AND workspace_id = $2 AND created_at >= $3 \
         AND operation IN ('write', 'mkdir', 'remove', 'execute') LIMIT 1",
    )
    .bind(org_id)
    .bind(workspace_id)
    .bind(since)
    .fetch_optional(c)
    .await?;
    Ok(row.is_some())
}

// ---------------------------------------------------------------------------------------------
// Settings

pub async fn settings(c: &mut Conn, agent_id: &str) -> DbResult<Settings> {
    let row: Option<(String, i64)> =
        sqlx::query_as("SELECT mode, keep_last FROM agent_snapshot_settings WHERE agent_id = $1")
            .bind(agent_id)
            .fetch_optional(c)
            .await?;
    Ok(row
        .map(|(mode, keep_last)| Settings { snapshots: Mode::parse(&mode).unwrap_or_default(), keep_last })
        .unwrap_or_default())
}

pub async fn put_settings(c: &mut Conn, org_id: &str, agent_id: &str, s: &Settings, now: i64) -> DbResult<()> {
    sqlx::query("DELETE FROM agent_snapshot_settings WHERE agent_id = $1").bind(agent_id).execute(&mut *c).await?;
    sqlx::query(
        "INSERT INTO agent_snapshot_settings (agent_id, organization_id, mode, keep_last, updated_at) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(agent_id)
    .bind(org_id)
    .bind(s.snapshots.as_str())
    .bind(s.keep_last)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// What a run starts from

/// A run's start: the snapshot it names, the workspace a session state bound it to, and the note
/// opening left.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct RunStart {
    pub snapshot_id: Option<String>,
    pub workspace_id: Option<String>,
    pub note: Option<String>,
}

pub async fn insert_start(c: &mut Conn, org_id: &str, run_id: &str, s: &RunStart, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO run_starts (run_id, organization_id, snapshot_id, workspace_id, note, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(run_id)
    .bind(org_id)
    .bind(&s.snapshot_id)
    .bind(&s.workspace_id)
    .bind(&s.note)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn start_of(c: &mut Conn, run_id: &str) -> DbResult<Option<RunStart>> {
    Ok(sqlx::query_as("SELECT snapshot_id, workspace_id, note FROM run_starts WHERE run_id = $1")
        .bind(run_id)
        .fetch_optional(c)
        .await?)
}

/// Opening wrote the run's start: the named snapshot is used up, the note kept.
pub async fn set_note(c: &mut Conn, org_id: &str, run_id: &str, note: &str, now: i64) -> DbResult<()> {
    let n = sqlx::query("UPDATE run_starts SET note = $1, snapshot_id = NULL WHERE run_id = $2")
        .bind(note)
        .bind(run_id)
        .execute(&mut *c)
        .await?
        .rows_affected();
    if n == 0 {
        let s = RunStart { note: Some(note.to_string()), ..Default::default() };
        insert_start(c, org_id, run_id, &s, now).await?;
    }
    Ok(())
}

/// The workspace a `session_state` bound the run to.
pub async fn bound_workspace(c: &mut Conn, run_id: &str) -> DbResult<Option<String>> {
    let row: Option<(Option<String>,)> =
        sqlx::query_as("SELECT workspace_id FROM run_starts WHERE run_id = $1").bind(run_id).fetch_optional(c).await?;
    Ok(row.and_then(|r| r.0))
}

/// Whether the organization still has the workspace (a `session_state` names one).
pub async fn workspace_exists(c: &mut Conn, org_id: &str, id: &str) -> DbResult<bool> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT id FROM sandbox_workspaces WHERE organization_id = $1 AND id = $2")
            .bind(org_id)
            .bind(id)
            .fetch_optional(c)
            .await?;
    Ok(row.is_some())
}
