//! SQL for workspace rows and the state backend's document.

use super::model::{Workspace, WorkspaceState};
use crate::db::{Conn, DbResult};
use crate::vocabulary::scope::Scope;

#[derive(sqlx::FromRow)]
pub(super) struct Row {
    id: String,
    session_key: String,
    backend: String,
    scope: String,
    connection_id: Option<String>,
    agent_id: Option<String>,
    conversation_id: Option<String>,
    run_id: Option<String>,
    user_id: Option<String>,
    runtime: Option<String>,
    session_ref: Option<String>,
    state: String,
    lost_run_id: Option<String>,
    recovery_of: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl From<Row> for Workspace {
    fn from(r: Row) -> Self {
        Workspace {
            id: r.id,
            session_key: r.session_key,
            backend: r.backend,
            scope: Scope::parse(&r.scope).unwrap_or(Scope::Conversation),
            connection_id: r.connection_id,
            agent_id: r.agent_id,
            conversation_id: r.conversation_id,
            run_id: r.run_id,
            user_id: r.user_id,
            runtime: r.runtime,
            session_ref: r.session_ref,
            state: WorkspaceState::parse(&r.state),
            lost_run_id: r.lost_run_id,
            recovery_of: r.recovery_of,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

pub(super) const COLUMNS: &str =
    "id, session_key, backend, scope, connection_id, agent_id, conversation_id, run_id, user_id, runtime, \
                       session_ref, state, lost_run_id, recovery_of, created_at, updated_at";

/// The values a new workspace row gets.
pub struct NewWorkspace<'a> {
    pub session_key: &'a str,
    pub backend: &'a str,
    pub scope: Scope,
    pub connection_id: Option<&'a str>,
    pub agent_id: &'a str,
    pub conversation_id: Option<&'a str>,
    pub run_id: Option<&'a str>,
    pub user_id: Option<&'a str>,
    pub owner_label: Option<&'a str>,
    pub channel_key: Option<&'a str>,
}

/// Creates the row for `session_key` unless it exists; returns the row either way. The common
/// case (it exists) is one read and takes no write lock.
pub async fn upsert(c: &mut Conn, org_id: &str, w: &NewWorkspace<'_>, now: i64) -> DbResult<Option<Workspace>> {
    if let Some(existing) = by_key(&mut *c, org_id, w.session_key).await? {
        return Ok(Some(existing));
    }
    sqlx::query(
        "INSERT INTO sandbox_workspaces (id, organization_id, session_key, backend, scope, connection_id, agent_id, \
         conversation_id, run_id, user_id, owner_label, channel_key, state, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'not_opened', $13, $13) ON CONFLICT (session_key) DO NOTHING",
    )
    .bind(crate::db::new_id())
    .bind(org_id)
    .bind(w.session_key)
    .bind(w.backend)
    .bind(w.scope.as_str())
    .bind(w.connection_id)
    .bind(w.agent_id)
    .bind(w.conversation_id)
    .bind(w.run_id)
    .bind(w.user_id)
    .bind(w.owner_label)
    .bind(w.channel_key)
    .bind(now)
    .execute(&mut *c)
    .await?;
    by_key(c, org_id, w.session_key).await
}

/// Keeps who attached `path` (workspace-relative) to workspace `id`: the latest attachment at a
/// path wins (`workspace_uploads`, docs/design.md §9).
pub async fn record_upload(c: &mut Conn, org_id: &str, id: &str, path: &str, user_id: &str, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO workspace_uploads (workspace_id, path, organization_id, user_id, attached_at) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (workspace_id, path) DO UPDATE SET user_id = excluded.user_id, attached_at = excluded.attached_at",
    )
    .bind(id)
    .bind(path)
    .bind(org_id)
    .bind(user_id)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn by_key(c: &mut Conn, org_id: &str, key: &str) -> DbResult<Option<Workspace>> {
    let row: Option<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND session_key = $2"
    ))
    .bind(org_id)
    .bind(key)
    .fetch_optional(c)
    .await?;
    Ok(row.map(Workspace::from))
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Workspace>> {
    let row: Option<Row> =
        sqlx::query_as(&format!("SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND id = $2"))
            .bind(org_id)
            .bind(id)
            .fetch_optional(c)
            .await?;
    Ok(row.map(Workspace::from))
}

pub async fn set_state(c: &mut Conn, id: &str, state: WorkspaceState, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_workspaces SET state = $1, updated_at = $2 WHERE id = $3")
        .bind(state.as_str())
        .bind(now)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// Puts a `preparing` row back to `back` (an open that was abandoned midway).
pub async fn reset_preparing(c: &mut Conn, id: &str, back: WorkspaceState, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_workspaces SET state = $1, updated_at = $2 WHERE id = $3 AND state = 'preparing'")
        .bind(back.as_str())
        .bind(now)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// How a workspace was opened: by which session, on which runtime, for which run.
pub struct Opened<'a> {
    pub session_ref: &'a str,
    pub runtime: Option<&'a str>,
    /// The run whose operation opened (or attached to) it: the one the Running tab names.
    pub run_id: &'a str,
}

/// The workspace is open by `session_ref`. A loss mark stays: the run that met the loss keeps
/// being told, even when another run opened the workspace fresh meanwhile.
pub async fn set_open(c: &mut Conn, id: &str, o: &Opened<'_>, now: i64) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_workspaces SET state = 'open', session_ref = $1, runtime = COALESCE($2, runtime), \
         last_run_id = $3, updated_at = $4 WHERE id = $5",
    )
    .bind(o.session_ref)
    .bind(o.runtime)
    .bind(o.run_id)
    .bind(now)
    .bind(id)
    .execute(c)
    .await?;
    Ok(())
}

/// What a host session's workspace row says about whose it is.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub id: String,
    pub session_key: String,
    pub session_ref: Option<String>,
    pub scope: String,
    pub agent_id: Option<String>,
    pub conversation_id: Option<String>,
    pub run_id: Option<String>,
    pub last_run_id: Option<String>,
    pub user_id: Option<String>,
    pub owner_label: Option<String>,
}

/// The `sandboxd` workspace of `org_id` on `connection_id` whose session is `session_id` on its
/// host: the one opened by that reference, else the one of that key that has no reference yet (a
/// workspace is opened by its key, so the two agree unless a host named the session otherwise).
/// One statement, so one snapshot: read as two, a row whose reference was written between them
/// (`NULL` to its key, the moment an open commits) matched neither, and the orphan purge
/// destroyed a live session (issue 45). Both columns are indexed.
pub async fn by_session(
    c: &mut Conn,
    org_id: &str,
    connection_id: &str,
    session_id: &str,
) -> DbResult<Option<SessionRow>> {
    Ok(sqlx::query_as(
        "SELECT id, session_key, session_ref, scope, agent_id, conversation_id, run_id, last_run_id, user_id, \
         owner_label FROM sandbox_workspaces WHERE organization_id = $1 AND connection_id = $2 \
         AND backend <> 'state' AND (session_ref = $3 OR (session_key = $3 AND session_ref IS NULL)) \
         ORDER BY CASE WHEN session_ref = $3 THEN 0 ELSE 1 END, updated_at DESC LIMIT 1",
    )
    .bind(org_id)
    .bind(connection_id)
    .bind(session_id)
    .fetch_optional(c)
    .await?)
}

pub async fn set_lost(c: &mut Conn, id: &str, run_id: &str, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_workspaces SET state = 'lost', lost_run_id = $1, updated_at = $2 WHERE id = $3")
        .bind(run_id)
        .bind(now)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// (organization, connection, sandbox id) of every open Daytona workspace whose last run is still
/// running: the sandboxes to keep awake.
pub async fn open_daytona_sandboxes(c: &mut Conn) -> DbResult<Vec<(String, String, String)>> {
    Ok(sqlx::query_as(
        "SELECT DISTINCT w.organization_id, w.connection_id, w.session_ref FROM sandbox_workspaces w \
         JOIN runs r ON r.id = w.last_run_id \
         JOIN sandbox_connections k ON k.id = w.connection_id AND k.organization_id = w.organization_id \
         WHERE k.kind = 'daytona' AND w.state = 'open' AND w.session_ref IS NOT NULL AND r.status = 'running'",
    )
    .fetch_all(c)
    .await?)
}

/// A lost workspace another run met (and never finished): this run opens it by name, fresh; the
/// loss stays reported to the run that met it.
pub async fn start_fresh(c: &mut Conn, id: &str, now: i64) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_workspaces SET session_ref = NULL, state = 'not_opened', updated_at = $1 WHERE id = $2 AND state = 'lost'",
    )
    .bind(now)
    .bind(id)
    .execute(c)
    .await?;
    Ok(())
}

/// Drops the loss mark of a run that ended.
pub async fn clear_lost_run(c: &mut Conn, id: &str, run_id: &str, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_workspaces SET lost_run_id = NULL, updated_at = $1 WHERE id = $2 AND lost_run_id = $3")
        .bind(now)
        .bind(id)
        .bind(run_id)
        .execute(c)
        .await?;
    Ok(())
}

/// Forgets the host's reference: the next run opens by name, fresh.
pub async fn forget_ref(c: &mut Conn, id: &str, now: i64) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_workspaces SET session_ref = NULL, state = 'not_opened', lost_run_id = NULL, updated_at = $1 WHERE id = $2",
    )
    .bind(now)
    .bind(id)
    .execute(c)
    .await?;
    Ok(())
}

/// The state backend's document and its version.
pub async fn document(c: &mut Conn, id: &str) -> DbResult<(Option<String>, i64)> {
    Ok(sqlx::query_as("SELECT document, document_version FROM sandbox_workspaces WHERE id = $1")
        .bind(id)
        .fetch_one(c)
        .await?)
}

/// Writes the document if nobody changed it since `version` was read; false means retry.
pub async fn replace_document(c: &mut Conn, id: &str, version: i64, document: &str, now: i64) -> DbResult<bool> {
    let n = sqlx::query(
        "UPDATE sandbox_workspaces SET document = $1, document_version = document_version + 1, state = 'open', updated_at = $2 \
         WHERE id = $3 AND document_version = $4",
    )
    .bind(document)
    .bind(now)
    .bind(id)
    .bind(version)
    .execute(c)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Empties a state document (a finished run-scoped workspace).
pub async fn clear_document(c: &mut Conn, id: &str, now: i64) -> DbResult<()> {
    sqlx::query("UPDATE sandbox_workspaces SET document = NULL, document_version = document_version + 1, updated_at = $1 WHERE id = $2")
        .bind(now)
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

/// The workspaces conversation `id` has alone: its own `conversation` workspace and its runs'
/// (`run`). A `channel` workspace belongs to the channel, not to one of its threads: see
/// [`of_channel`].
pub async fn of_conversation(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Vec<Workspace>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND ((conversation_id = $2 \
         AND scope <> 'channel') \
         OR run_id IN (SELECT id FROM runs WHERE organization_id = $1 AND conversation_id = $2)) ORDER BY created_at, id"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(Workspace::from).collect())
}

/// The `channel` workspaces agent `agent_id` keeps for channel `channel_key` (one per host it was
/// opened on), whichever of the channel's conversations opened them.
pub async fn of_channel(c: &mut Conn, org_id: &str, agent_id: &str, channel_key: &str) -> DbResult<Vec<Workspace>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND scope = 'channel' \
         AND agent_id = $2 AND channel_key = $3 ORDER BY created_at, id"
    ))
    .bind(org_id)
    .bind(agent_id)
    .bind(channel_key)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(Workspace::from).collect())
}

/// Takes the write lock on the channel's workspace rows for the caller's transaction (a row lock
/// on PostgreSQL, the database's on SQLite): two deletes of a channel's last conversations at once
/// then decide one after the other, so the second sees the first's conversation gone.
pub async fn lock_channel(c: &mut Conn, org_id: &str, agent_id: &str, channel_key: &str) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_workspaces SET updated_at = updated_at WHERE organization_id = $1 AND scope = 'channel' \
         AND agent_id = $2 AND channel_key = $3",
    )
    .bind(org_id)
    .bind(agent_id)
    .bind(channel_key)
    .execute(c)
    .await?;
    Ok(())
}

/// The channel's workspaces are shown under `conversation_id` from now on (the conversation they
/// were shown under is being deleted; the workspace stays with the channel).
pub async fn move_channel(
    c: &mut Conn,
    org_id: &str,
    agent_id: &str,
    channel_key: &str,
    conversation_id: &str,
) -> DbResult<()> {
    sqlx::query(
        "UPDATE sandbox_workspaces SET conversation_id = $1 WHERE organization_id = $2 AND scope = 'channel' \
         AND agent_id = $3 AND channel_key = $4",
    )
    .bind(conversation_id)
    .bind(org_id)
    .bind(agent_id)
    .bind(channel_key)
    .execute(c)
    .await?;
    Ok(())
}

/// The workspaces of agent `id`, of every scope (and of its conversations and runs).
pub async fn of_agent(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Vec<Workspace>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND (agent_id = $2 \
         OR run_id IN (SELECT id FROM runs WHERE organization_id = $1 AND agent_id = $2) \
         OR conversation_id IN (SELECT id FROM conversations WHERE organization_id = $1 AND agent_id = $2)) \
         ORDER BY created_at, id"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(Workspace::from).collect())
}

/// The `user` workspaces of person `user_id` in `org_id`.
pub async fn of_user(c: &mut Conn, org_id: &str, user_id: &str) -> DbResult<Vec<Workspace>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND scope = 'user' AND user_id = $2 \
         ORDER BY created_at, id"
    ))
    .bind(org_id)
    .bind(user_id)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(Workspace::from).collect())
}

/// How many `user` workspaces each person of `org_id` has: (user id, count), people with none
/// left out.
pub async fn count_user_by_person(c: &mut Conn, org_id: &str) -> DbResult<Vec<(String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT user_id, COUNT(*) FROM sandbox_workspaces WHERE organization_id = $1 AND scope = 'user' \
         AND user_id IS NOT NULL GROUP BY user_id",
    )
    .bind(org_id)
    .fetch_all(c)
    .await?)
}

/// How many workspaces at a host of `org_id` on `connection_id` hold a session.
pub async fn count_live_on(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<i64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM sandbox_workspaces WHERE organization_id = $1 AND connection_id = $2 \
         AND backend <> 'state' AND (session_ref IS NOT NULL OR state = 'preparing')",
    )
    .bind(org_id)
    .bind(connection_id)
    .fetch_one(c)
    .await?;
    Ok(n)
}

/// The session keys and references of `org_id`'s workspaces at a host on `connection_id`
/// (the Running tab's orphan check).
pub async fn session_names_on(
    c: &mut Conn,
    org_id: &str,
    connection_id: &str,
) -> DbResult<Vec<(String, Option<String>)>> {
    Ok(sqlx::query_as(
        "SELECT session_key, session_ref FROM sandbox_workspaces WHERE organization_id = $1 AND connection_id = $2 \
         AND backend <> 'state'",
    )
    .bind(org_id)
    .bind(connection_id)
    .fetch_all(c)
    .await?)
}

pub async fn delete(c: &mut Conn, org_id: &str, id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM sandbox_workspaces WHERE organization_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(c)
        .await?
        .rows_affected())
}
