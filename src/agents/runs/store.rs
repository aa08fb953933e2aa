//! SQL for runs.

use crate::agents::manifest::Manifest;
use crate::agents::model::{Run, StartedBy};
use crate::agents::store::{fetch_all, fetch_optional};
use crate::db::{Conn, DbResult};

#[derive(sqlx::FromRow)]
struct RunRow {
    id: String,
    agent_id: String,
    conversation_id: Option<String>,
    started_by: String,
    user_id: Option<String>,
    user_name: Option<String>,
    agent_name: Option<String>,
    trigger_as_creator: i64,
    channel_sender: Option<String>,
    status: String,
    workspace_opened: i64,
    created_at: i64,
    finished_at: Option<i64>,
    workspace_error: Option<String>,
    recovery_workspace_id: Option<String>,
    manifest: Option<String>,
}

impl From<RunRow> for Run {
    fn from(r: RunRow) -> Self {
        Run {
            id: r.id,
            agent_id: r.agent_id,
            conversation_id: r.conversation_id,
            started_by: StartedBy::parse(&r.started_by).unwrap_or(StartedBy::Api),
            user_id: r.user_id,
            user_name: r.user_name,
            agent_name: r.agent_name,
            trigger_as_creator: r.trigger_as_creator == 1,
            channel_sender: r.channel_sender,
            status: r.status,
            workspace_opened: r.workspace_opened == 1,
            created_at: r.created_at,
            finished_at: r.finished_at,
            workspace_error: r.workspace_error,
            recovery_workspace_id: r.recovery_workspace_id,
            manifest: r.manifest.as_deref().map(Manifest::from_json),
        }
    }
}

/// A run's columns, with its person's name (only while they are a member of the run's
/// organization: docs/design.md §4, "Who is named") and its agent's.
const RUN_COLUMNS: &str = "id, agent_id, conversation_id, started_by, user_id, \
     (SELECT u.email FROM users u JOIN memberships m ON m.user_id = u.id \
      WHERE u.id = runs.user_id AND m.organization_id = runs.organization_id) AS user_name, \
     (SELECT a.name FROM agents a WHERE a.id = runs.agent_id AND a.organization_id = runs.organization_id) AS agent_name, \
     trigger_as_creator, channel_sender, \
     status, workspace_opened, created_at, finished_at, workspace_error, recovery_workspace_id, manifest";

/// The values a new run is written with.
pub struct NewRun<'a> {
    pub id: &'a str,
    pub agent_id: &'a str,
    pub conversation_id: Option<&'a str>,
    pub started_by: StartedBy,
    pub user_id: Option<&'a str>,
    pub trigger_as_creator: bool,
    pub channel_sender: Option<&'a str>,
    /// The run's own manifest (JSON), replacing its agent's for its new workspace.
    pub manifest: Option<String>,
}

pub async fn insert(c: &mut Conn, org_id: &str, v: &NewRun<'_>, now: i64) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO runs (id, organization_id, agent_id, conversation_id, started_by, user_id, trigger_as_creator, \
         channel_sender, status, created_at, manifest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, $10)",
    )
    .bind(v.id)
    .bind(org_id)
    .bind(v.agent_id)
    .bind(v.conversation_id)
    .bind(v.started_by.as_str())
    .bind(v.user_id)
    .bind(i64::from(v.trigger_as_creator))
    .bind(v.channel_sender)
    .bind(now)
    .bind(v.manifest.as_deref())
    .execute(c)
    .await?;
    Ok(())
}

pub async fn get(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Run>> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE organization_id = $1 AND id = $2");
    let row: Option<RunRow> = fetch_optional(c, &sql, &[org_id, id]).await?;
    Ok(row.map(Run::from))
}

/// The runs of a conversation, newest first (at most 200).
pub async fn list_of_conversation(c: &mut Conn, org_id: &str, conversation_id: &str) -> DbResult<Vec<Run>> {
    let sql = format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE organization_id = $1 AND conversation_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT 200"
    );
    let rows: Vec<RunRow> = fetch_all(c, &sql, &[org_id, conversation_id]).await?;
    Ok(rows.into_iter().map(Run::from).collect())
}

/// Marks whether the run's workspace is opened (the host may close it: the next operation then
/// attaches again).
pub async fn set_workspace_opened(c: &mut Conn, id: &str, opened: bool) -> DbResult<()> {
    sqlx::query("UPDATE runs SET workspace_opened = $1 WHERE id = $2 AND workspace_opened <> $1")
        .bind(i64::from(opened))
        .bind(id)
        .execute(c)
        .await?;
    Ok(())
}

pub async fn finish(c: &mut Conn, org_id: &str, id: &str, now: i64) -> DbResult<u64> {
    Ok(sqlx::query(
        "UPDATE runs SET status = 'finished', finished_at = $1 WHERE organization_id = $2 AND id = $3 AND status = 'running'",
    )
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(c)
    .await?
    .rows_affected())
}

/// Records what finishing could not do with the run's workspace, and the copy that keeps its files.
pub async fn set_workspace_error(c: &mut Conn, org_id: &str, id: &str, error: &str, copy_id: &str) -> DbResult<()> {
    sqlx::query(
        "UPDATE runs SET workspace_error = $1, recovery_workspace_id = $2 WHERE organization_id = $3 AND id = $4",
    )
    .bind(error)
    .bind(copy_id)
    .bind(org_id)
    .bind(id)
    .execute(c)
    .await?;
    Ok(())
}

/// What a runs list is narrowed to (each `None` is no narrowing).
pub struct RunFilter<'a> {
    pub agent_id: Option<&'a str>,
    pub conversation_id: Option<&'a str>,
    pub status: Option<&'a str>,
    /// Only runs of conversations this person is a member of.
    pub member: Option<&'a str>,
}

/// One page of the organization's runs, newest first. `limit` and `offset` are numbers the
/// service bounded, written into the SQL as such.
pub async fn page(c: &mut Conn, org_id: &str, f: &RunFilter<'_>, limit: u32, offset: u32) -> DbResult<Vec<Run>> {
    let mut sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE organization_id = $1");
    let mut binds = vec![org_id];
    for (column, value) in [("agent_id", f.agent_id), ("conversation_id", f.conversation_id), ("status", f.status)] {
        if let Some(v) = value {
            binds.push(v);
            sql.push_str(&format!(" AND {column} = ${}", binds.len()));
        }
    }
    if let Some(user_id) = f.member {
        binds.push(user_id);
        sql.push_str(&format!(
            " AND conversation_id IN (SELECT conversation_id FROM conversation_members WHERE user_id = ${})",
            binds.len()
        ));
    }
    sql.push_str(&format!(" ORDER BY created_at DESC, id DESC LIMIT {limit} OFFSET {offset}"));
    let rows: Vec<RunRow> = fetch_all(c, &sql, &binds).await?;
    Ok(rows.into_iter().map(Run::from).collect())
}
