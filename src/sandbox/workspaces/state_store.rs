//! SQL for the `state` backend under concurrency (docs/design.md §11): each run's view of a shared
//! document (`state_run_views`), recovery copies (`sandbox_workspaces.recovery_of`) and who may
//! open one.

use super::model::Workspace;
use super::store::{Row, COLUMNS};
use crate::db::{Conn, DbResult};

/// A run's view: the shared document at the run's first operation, and the run's own document.
#[derive(Debug, sqlx::FromRow)]
pub struct View {
    pub base_document: Option<String>,
    pub document: Option<String>,
    pub version: i64,
}

pub async fn view(c: &mut Conn, org_id: &str, run_id: &str, workspace_id: &str) -> DbResult<Option<View>> {
    Ok(sqlx::query_as(
        "SELECT base_document, document, version FROM state_run_views \
         WHERE organization_id = $1 AND run_id = $2 AND workspace_id = $3",
    )
    .bind(org_id)
    .bind(run_id)
    .bind(workspace_id)
    .fetch_optional(c)
    .await?)
}

/// Starts the run's view from the shared document as it is now, unless it has one (another of the
/// run's requests may start it at the same moment: the first one counts).
pub async fn start_view(c: &mut Conn, org_id: &str, run_id: &str, workspace_id: &str, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO state_run_views (run_id, workspace_id, organization_id, base_document, base_version, document, \
         version, created_at, updated_at) \
         SELECT $1, id, organization_id, document, document_version, document, 0, $4, $4 FROM sandbox_workspaces \
         WHERE id = $2 AND organization_id = $3 ON CONFLICT (run_id) DO NOTHING",
    )
    .bind(run_id)
    .bind(workspace_id)
    .bind(org_id)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

/// Writes the run's document if none of its other requests changed it since `version`; false
/// means retry.
pub async fn replace_view(
    c: &mut Conn,
    org_id: &str,
    run_id: &str,
    version: i64,
    document: &str,
    now: i64,
) -> DbResult<bool> {
    let n = sqlx::query(
        "UPDATE state_run_views SET document = $1, version = version + 1, updated_at = $2 \
         WHERE organization_id = $3 AND run_id = $4 AND version = $5",
    )
    .bind(document)
    .bind(now)
    .bind(org_id)
    .bind(run_id)
    .bind(version)
    .execute(c)
    .await?
    .rows_affected();
    Ok(n == 1)
}

pub async fn delete_view(c: &mut Conn, org_id: &str, run_id: &str) -> DbResult<()> {
    sqlx::query("DELETE FROM state_run_views WHERE organization_id = $1 AND run_id = $2")
        .bind(org_id)
        .bind(run_id)
        .execute(c)
        .await?;
    Ok(())
}

/// A recovery copy of `source_id` holding `document`, a workspace of its own with the source's
/// scope and subject, under a session key nothing resolves to (`dv-<org>-<32 hex>`). None when the
/// source is gone.
pub async fn insert_copy(
    c: &mut Conn,
    org_id: &str,
    source_id: &str,
    run_id: &str,
    document: &str,
    now: i64,
) -> DbResult<Option<String>> {
    let id = crate::db::new_id();
    let org8: String = org_id.chars().filter(char::is_ascii_hexdigit).take(8).collect();
    let key = format!("dv-{org8}-{}", uuid::Uuid::new_v4().simple());
    let n = sqlx::query(
        "INSERT INTO sandbox_workspaces (id, organization_id, session_key, backend, scope, agent_id, conversation_id, \
         user_id, owner_label, channel_key, state, document, document_version, recovery_of, last_run_id, created_at, \
         updated_at) \
         SELECT $1, organization_id, $2, 'state', scope, agent_id, conversation_id, user_id, owner_label, channel_key, \
         'open', $3, 1, id, $4, $5, $5 FROM sandbox_workspaces WHERE id = $6 AND organization_id = $7",
    )
    .bind(&id)
    .bind(&key)
    .bind(document)
    .bind(run_id)
    .bind(now)
    .bind(source_id)
    .bind(org_id)
    .execute(c)
    .await?
    .rows_affected();
    Ok((n == 1).then_some(id))
}

/// A recovery copy of `org_id` and what decides who may open it: its source's scope and subject,
/// whether the source's agent still exists, and whether `user_id` is in the source's conversation
/// and in any conversation with the source's agent.
#[derive(Debug)]
pub struct CopyAccess {
    pub copy: Workspace,
    pub source_scope: String,
    pub source_user_id: Option<String>,
    pub agent_exists: bool,
    pub in_conversation: bool,
    pub talks_to_agent: bool,
}

#[derive(sqlx::FromRow)]
struct AccessRow {
    #[sqlx(flatten)]
    copy: Row,
    source_scope: String,
    source_user_id: Option<String>,
    agents: i64,
    in_conversation: i64,
    talks_to_agent: i64,
}

pub async fn copy_access(c: &mut Conn, org_id: &str, copy_id: &str, user_id: &str) -> DbResult<Option<CopyAccess>> {
    let columns: String = COLUMNS.split(',').map(|col| format!("w.{}", col.trim())).collect::<Vec<_>>().join(", ");
    let row: Option<AccessRow> = sqlx::query_as(&format!(
        "SELECT {columns}, s.scope AS source_scope, s.user_id AS source_user_id, \
         (SELECT COUNT(*) FROM agents a WHERE a.id = s.agent_id AND a.organization_id = s.organization_id) AS agents, \
         (SELECT COUNT(*) FROM conversation_members m WHERE m.conversation_id = s.conversation_id AND m.user_id = $3) \
           AS in_conversation, \
         (SELECT COUNT(*) FROM conversation_members m JOIN conversations v ON v.id = m.conversation_id \
           WHERE v.agent_id = s.agent_id AND v.organization_id = s.organization_id AND m.user_id = $3) AS talks_to_agent \
         FROM sandbox_workspaces w JOIN sandbox_workspaces s ON s.id = w.recovery_of AND s.organization_id = w.organization_id \
         WHERE w.organization_id = $1 AND w.id = $2"
    ))
    .bind(org_id)
    .bind(copy_id)
    .bind(user_id)
    .fetch_optional(c)
    .await?;
    Ok(row.map(|r| CopyAccess {
        copy: Workspace::from(r.copy),
        source_scope: r.source_scope,
        source_user_id: r.source_user_id,
        agent_exists: r.agents > 0,
        in_conversation: r.in_conversation > 0,
        talks_to_agent: r.talks_to_agent > 0,
    }))
}

/// The recovery copies of a workspace, newest first.
pub async fn copies_of(c: &mut Conn, org_id: &str, source_id: &str) -> DbResult<Vec<Workspace>> {
    let rows: Vec<Row> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sandbox_workspaces WHERE organization_id = $1 AND recovery_of = $2 \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(org_id)
    .bind(source_id)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(Workspace::from).collect())
}
