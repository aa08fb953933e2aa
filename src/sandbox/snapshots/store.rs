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

// ---------------------------------------------------------------------------------------------
// Snapshots taken at a run's end, waiting for the object store

/// A snapshot taken when a run finished that has not reached the store yet.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Pending {
    pub id: String,
    pub organization_id: String,
    pub workspace_id: String,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub created_at: i64,
    pub has_archive: i64,
    pub size_bytes: i64,
    pub file_count: i64,
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
}

const PENDING_COLUMNS: &str = "id, organization_id, workspace_id, agent_id, run_id, created_at, has_archive, \
    size_bytes, file_count, attempts, next_attempt_at, last_error";

/// Writes a pending snapshot (claimed by its writer until `p.next_attempt_at`).
pub async fn insert_pending(c: &mut Conn, p: &Pending) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO pending_snapshots (id, organization_id, workspace_id, agent_id, run_id, created_at, has_archive, \
         size_bytes, file_count, attempts, next_attempt_at, last_error) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&p.id)
    .bind(&p.organization_id)
    .bind(&p.workspace_id)
    .bind(&p.agent_id)
    .bind(&p.run_id)
    .bind(p.created_at)
    .bind(p.has_archive)
    .bind(p.size_bytes)
    .bind(p.file_count)
    .bind(p.attempts)
    .bind(p.next_attempt_at)
    .bind(&p.last_error)
    .execute(c)
    .await?;
    Ok(())
}

/// The pending snapshots of a workspace, oldest first.
pub async fn pending_of(c: &mut Conn, org_id: &str, workspace_id: &str) -> DbResult<Vec<Pending>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {PENDING_COLUMNS} FROM pending_snapshots WHERE organization_id = $1 AND workspace_id = $2 \
         ORDER BY created_at, id"
    ))
    .bind(org_id)
    .bind(workspace_id)
    .fetch_all(c)
    .await?)
}

/// Pending snapshots due at `now`.
pub async fn pending_due(c: &mut Conn, now: i64, limit: i64) -> DbResult<Vec<Pending>> {
    Ok(sqlx::query_as(&format!(
        "SELECT {PENDING_COLUMNS} FROM pending_snapshots WHERE next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT $2"
    ))
    .bind(now)
    .bind(limit)
    .fetch_all(c)
    .await?)
}

/// Claims a due pending snapshot until `until`; false when another attempt holds it (or it is gone).
pub async fn claim_pending(c: &mut Conn, id: &str, seen_next: i64, until: i64) -> DbResult<bool> {
    let n = sqlx::query("UPDATE pending_snapshots SET next_attempt_at = $1 WHERE id = $2 AND next_attempt_at = $3")
        .bind(until)
        .bind(id)
        .bind(seen_next)
        .execute(c)
        .await?
        .rows_affected();
    Ok(n == 1)
}

/// An attempt failed: counted, the error kept, the next one scheduled.
pub async fn pending_failed(c: &mut Conn, id: &str, next: i64, error: &str) -> DbResult<()> {
    sqlx::query(
        "UPDATE pending_snapshots SET attempts = attempts + 1, next_attempt_at = $1, last_error = $2 WHERE id = $3",
    )
    .bind(next)
    .bind(error)
    .bind(id)
    .execute(c)
    .await?;
    Ok(())
}

/// The archive was read from the host again (by the sweep) and waits in the pending folder.
pub async fn pending_has_archive(c: &mut Conn, id: &str, created_at: i64, size: i64, files: i64) -> DbResult<()> {
    sqlx::query(
        "UPDATE pending_snapshots SET has_archive = 1, created_at = $1, size_bytes = $2, file_count = $3 WHERE id = $4",
    )
    .bind(created_at)
    .bind(size)
    .bind(files)
    .bind(id)
    .execute(c)
    .await?;
    Ok(())
}

/// The pending snapshot reached the store; false when it was already gone (its workspace deleted).
pub async fn remove_pending(c: &mut Conn, id: &str) -> DbResult<bool> {
    let n = sqlx::query("DELETE FROM pending_snapshots WHERE id = $1").bind(id).execute(c).await?.rows_affected();
    Ok(n == 1)
}

/// The newest time a pending snapshot of the workspace was taken, if any.
pub async fn latest_pending(c: &mut Conn, org_id: &str, workspace_id: &str) -> DbResult<Option<i64>> {
    let row: (Option<i64>,) = sqlx::query_as(
        "SELECT MAX(created_at) FROM pending_snapshots WHERE organization_id = $1 AND workspace_id = $2",
    )
    .bind(org_id)
    .bind(workspace_id)
    .fetch_one(c)
    .await?;
    Ok(row.0)
}
