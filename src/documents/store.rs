//! SQL for Documents: the workspaces a caller may see (docs/design.md §9), each with the names it is
//! shown under, and a `state` workspace's document. Read-only; every query is confined to the
//! caller's organization.

use crate::db::{Conn, DbResult};

/// A workspace row with what it is shown under.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VisibleRow {
    pub id: String,
    pub backend: String,
    pub scope: String,
    pub connection_id: Option<String>,
    pub connection_name: Option<String>,
    pub agent_id: Option<String>,
    pub agent_name: Option<String>,
    pub conversation_id: Option<String>,
    pub conversation_title: Option<String>,
    pub user_id: Option<String>,
    pub owner_label: Option<String>,
    pub owner_email: Option<String>,
    pub session_key: String,
    pub session_ref: Option<String>,
    pub state: String,
    pub updated_at: i64,
    /// For a recovery copy of a `state` workspace: its source's id.
    pub recovery_of: Option<String>,
}

/// The columns and joins every query shares. A workspace's conversation is its own (for the
/// `conversation` and `channel` scopes) or, for `run` scope, its run's.
const SELECT: &str = "SELECT w.id, w.backend, w.scope, w.connection_id, sc.name AS connection_name, \
    w.agent_id, a.name AS agent_name, cv.id AS conversation_id, cv.title AS conversation_title, w.user_id, \
    w.owner_label, u.email AS owner_email, w.session_key, w.session_ref, w.state, w.updated_at, w.recovery_of \
    FROM sandbox_workspaces w \
    LEFT JOIN sandbox_connections sc ON sc.id = w.connection_id AND sc.organization_id = w.organization_id \
    LEFT JOIN agents a ON a.id = w.agent_id AND a.organization_id = w.organization_id \
    LEFT JOIN runs r ON r.id = w.run_id AND r.organization_id = w.organization_id \
    LEFT JOIN conversations cv ON cv.organization_id = w.organization_id \
        AND cv.id = COALESCE(w.conversation_id, r.conversation_id) \
    LEFT JOIN users u ON u.id = w.user_id \
    WHERE w.organization_id = $1";

/// What a member may see: the workspaces of conversations they are in (a `run` workspace by its
/// run's conversation, a `channel` workspace by any conversation of its channel), their own `user`
/// workspaces, and `agent` workspaces of agents they talk to.
const MEMBER: &str = " AND ( \
    cv.id IN (SELECT m.conversation_id FROM conversation_members m WHERE m.user_id = $2) \
    OR (w.scope = 'channel' AND EXISTS (SELECT 1 FROM conversations c3 \
        JOIN conversation_members m3 ON m3.conversation_id = c3.id \
        WHERE m3.user_id = $2 AND c3.organization_id = $1 AND c3.agent_id = w.agent_id \
        AND c3.channel_key = w.channel_key)) \
    OR (w.scope = 'user' AND w.user_id = $2) \
    OR (w.scope = 'agent' AND w.agent_id IN (SELECT c2.agent_id FROM conversations c2 \
        JOIN conversation_members m2 ON m2.conversation_id = c2.id \
        WHERE m2.user_id = $2 AND c2.organization_id = $1)))";

/// Where a page of workspaces starts: after (`updated_at`, `id`) of the last one shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct After {
    pub updated_at: i64,
    pub id: String,
}

/// One page of the workspaces `member` may see (all of the organization's when `member` is none),
/// newest first.
pub async fn visible(
    c: &mut Conn,
    org_id: &str,
    member: Option<&str>,
    after: Option<&After>,
    limit: i64,
) -> DbResult<Vec<VisibleRow>> {
    let mut sql = SELECT.to_string();
    let mut n = 1;
    if member.is_some() {
        sql.push_str(MEMBER);
        n = 2;
    }
    if after.is_some() {
        sql.push_str(&format!(
            " AND (w.updated_at < ${a} OR (w.updated_at = ${a} AND w.id < ${b}))",
            a = n + 1,
            b = n + 2
        ));
        n += 2;
    }
    sql.push_str(&format!(" ORDER BY w.updated_at DESC, w.id DESC LIMIT ${}", n + 1));
    let mut q = sqlx::query_as::<_, VisibleRow>(&sql).bind(org_id);
    if let Some(m) = member {
        q = q.bind(m);
    }
    if let Some(a) = after {
        q = q.bind(a.updated_at).bind(&a.id);
    }
    Ok(q.bind(limit).fetch_all(c).await?)
}

/// Who attached each file of these workspaces through the console (`workspace_uploads`): the
/// workspace, the path and the person's e-mail, only while they are a member of the organization.
pub async fn uploaders(c: &mut Conn, org_id: &str, ids: &[&str]) -> DbResult<Vec<(String, String, String)>> {
    let marks: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
    let sql = format!(
        "SELECT wu.workspace_id, wu.path, u.email FROM workspace_uploads wu \
         JOIN users u ON u.id = wu.user_id \
         JOIN memberships m ON m.user_id = u.id AND m.organization_id = wu.organization_id \
         WHERE wu.organization_id = $1 AND wu.workspace_id IN ({})",
        marks.join(", ")
    );
    let mut q = sqlx::query_as::<_, (String, String, String)>(&sql).bind(org_id);
    for id in ids {
        q = q.bind(*id);
    }
    Ok(q.fetch_all(c).await?)
}

/// How many workspaces `member` may see (all of the organization's when `member` is none).
pub async fn count_visible(c: &mut Conn, org_id: &str, member: Option<&str>) -> DbResult<u64> {
    let sql = format!("SELECT COUNT(*) FROM ({SELECT}{}) seen", if member.is_some() { MEMBER } else { "" });
    let mut q = sqlx::query_as::<_, (i64,)>(&sql).bind(org_id);
    if let Some(m) = member {
        q = q.bind(m);
    }
    Ok(q.fetch_one(c).await?.0.max(0) as u64)
}

/// One workspace, when `member` may see it (any of the organization's when `member` is none).
pub async fn visible_one(c: &mut Conn, org_id: &str, member: Option<&str>, id: &str) -> DbResult<Option<VisibleRow>> {
    let sql = match member {
        Some(_) => format!("{SELECT}{MEMBER} AND w.id = $3"),
        None => format!("{SELECT} AND w.id = $2"),
    };
    let mut q = sqlx::query_as::<_, VisibleRow>(&sql).bind(org_id);
    if let Some(m) = member {
        q = q.bind(m);
    }
    Ok(q.bind(id).fetch_optional(c).await?)
}

/// The `state` workspace's document (JSON), within the organization.
pub async fn document(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<String>> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT document FROM sandbox_workspaces WHERE organization_id = $1 AND id = $2 AND backend = 'state'",
    )
    .bind(org_id)
    .bind(id)
    .fetch_optional(c)
    .await?;
    Ok(row.and_then(|r| r.0))
}

/// A workspace of conversation `$n`: shown under it, or its channel's (the same agent and channel
/// key: every thread of a channel shares it).
fn of_conversation_clause(n: u8) -> String {
    format!(
        " AND (cv.id = ${n} OR (w.scope = 'channel' AND EXISTS (SELECT 1 FROM conversations c4 \
         WHERE c4.id = ${n} AND c4.organization_id = $1 AND c4.agent_id = w.agent_id \
         AND c4.channel_key = w.channel_key))) ORDER BY w.updated_at DESC LIMIT 10"
    )
}

/// The workspaces of one conversation that `member` may see.
pub async fn of_conversation(
    c: &mut Conn,
    org_id: &str,
    member: Option<&str>,
    conversation_id: &str,
) -> DbResult<Vec<VisibleRow>> {
    let sql = match member {
        Some(_) => format!("{SELECT}{MEMBER}{}", of_conversation_clause(3)),
        None => format!("{SELECT}{}", of_conversation_clause(2)),
    };
    let mut q = sqlx::query_as::<_, VisibleRow>(&sql).bind(org_id);
    if let Some(m) = member {
        q = q.bind(m);
    }
    Ok(q.bind(conversation_id).fetch_all(c).await?)
}
