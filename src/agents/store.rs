//! SQL for agents, conversations and runs.

use super::model::{Agent, Backend, Conversation, Run, StartedBy, WorkspaceFile};
use crate::db::{Conn, DbResult};
use crate::sandbox::workspaces::key::Scope;

#[derive(sqlx::FromRow)]
struct AgentRow {
    id: String,
    name: String,
    backend: String,
    connection_id: Option<String>,
    scope: String,
    runtime: Option<String>,
    shell_enabled: i64,
    skills: String,
    manifest_files: String,
    created_at: i64,
    updated_at: i64,
}

fn files(json: &str) -> Vec<WorkspaceFile> {
    serde_json::from_str(json).unwrap_or_default()
}

impl From<AgentRow> for Agent {
    fn from(r: AgentRow) -> Self {
        Agent {
            id: r.id,
            name: r.name,
            backend: Backend::parse(&r.backend).unwrap_or(Backend::State),
            connection_id: r.connection_id,
            scope: Scope::parse(&r.scope).unwrap_or(Scope::Conversation),
            runtime: r.runtime,
            shell_enabled: r.shell_enabled == 1,
            skills: files(&r.skills),
            manifest_files: files(&r.manifest_files),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

const AGENT_COLUMNS: &str =
    "id, name, backend, connection_id, scope, runtime, shell_enabled, skills, manifest_files, created_at, updated_at";

pub async fn list_agents(c: &mut Conn, org_id: &str) -> DbResult<Vec<Agent>> {
    let rows: Vec<AgentRow> =
        sqlx::query_as(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE organization_id = $1 ORDER BY name"))
            .bind(org_id)
            .fetch_all(c)
            .await?;
    Ok(rows.into_iter().map(Agent::from).collect())
}

pub async fn get_agent(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Agent>> {
    let row: Option<AgentRow> =
        sqlx::query_as(&format!("SELECT {AGENT_COLUMNS} FROM agents WHERE organization_id = $1 AND id = $2"))
            .bind(org_id)
            .bind(id)
            .fetch_optional(c)
            .await?;
    Ok(row.map(Agent::from))
}

/// The values an agent is written with.
pub struct AgentValues<'a> {
    pub name: &'a str,
    pub backend: Backend,
    pub connection_id: Option<&'a str>,
    pub scope: Scope,
    pub runtime: Option<&'a str>,
    pub shell_enabled: bool,
    pub skills: &'a [WorkspaceFile],
    pub manifest_files: &'a [WorkspaceFile],
}

pub async fn insert_agent(
    c: &mut Conn,
    id: &str,
    org_id: &str,
    v: &AgentValues<'_>,
    created_by: &str,
    now: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO agents (id, organization_id, name, backend, connection_id, scope, runtime, shell_enabled, skills, \
         manifest_files, created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)",
    )
    .bind(id)
    .bind(org_id)
    .bind(v.name)
    .bind(v.backend.as_str())
    .bind(v.connection_id)
    .bind(v.scope.as_str())
    .bind(v.runtime)
    .bind(i64::from(v.shell_enabled))
    .bind(serde_json::to_string(v.skills).unwrap_or_else(|_| "[]".into()))
    .bind(serde_json::to_string(v.manifest_files).unwrap_or_else(|_| "[]".into()))
    .bind(created_by)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn update_agent(c: &mut Conn, org_id: &str, id: &str, v: &AgentValues<'_>, now: i64) -> DbResult<u64> {
    Ok(sqlx::query(
        "UPDATE agents SET name = $1, backend = $2, connection_id = $3, scope = $4, runtime = $5, shell_enabled = $6, \
         skills = $7, manifest_files = $8, updated_at = $9 WHERE organization_id = $10 AND id = $11",
    )
    .bind(v.name)
    .bind(v.backend.as_str())
    .bind(v.connection_id)
    .bind(v.scope.as_str())
    .bind(v.runtime)
    .bind(i64::from(v.shell_enabled))
    .bind(serde_json::to_string(v.skills).unwrap_or_else(|_| "[]".into()))
    .bind(serde_json::to_string(v.manifest_files).unwrap_or_else(|_| "[]".into()))
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(c)
    .await?
    .rows_affected())
}

// -- conversations --------------------------------------------------------------------------

#[derive(sqlx::FromRow)]
struct ConversationRow {
    id: String,
    agent_id: String,
    title: String,
    owner_user_id: Option<String>,
    channel_key: Option<String>,
    created_at: i64,
}

#[allow(clippy::too_many_arguments)]
pub async fn insert_conversation(
    c: &mut Conn,
    id: &str,
    org_id: &str,
    agent_id: &str,
    title: &str,
    owner: Option<&str>,
    channel_key: Option<&str>,
    now: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO conversations (id, organization_id, agent_id, title, owner_user_id, channel_key, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(id)
    .bind(org_id)
    .bind(agent_id)
    .bind(title)
    .bind(owner)
    .bind(channel_key)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn add_conversation_member(c: &mut Conn, conversation_id: &str, user_id: &str) -> DbResult<()> {
    sqlx::query("INSERT INTO conversation_members (conversation_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .bind(conversation_id)
        .bind(user_id)
        .execute(c)
        .await?;
    Ok(())
}

pub async fn get_conversation(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Conversation>> {
    let row: Option<ConversationRow> = sqlx::query_as(
        "SELECT id, agent_id, title, owner_user_id, channel_key, created_at FROM conversations \
         WHERE organization_id = $1 AND id = $2",
    )
    .bind(org_id)
    .bind(id)
    .fetch_optional(&mut *c)
    .await?;
    let Some(r) = row else { return Ok(None) };
    let members: Vec<String> =
        sqlx::query_scalar("SELECT user_id FROM conversation_members WHERE conversation_id = $1 ORDER BY user_id")
            .bind(&r.id)
            .fetch_all(c)
            .await?;
    Ok(Some(Conversation {
        id: r.id,
        agent_id: r.agent_id,
        title: r.title,
        owner_user_id: r.owner_user_id,
        channel_key: r.channel_key,
        member_user_ids: members,
        created_at: r.created_at,
    }))
}

pub async fn list_conversations(c: &mut Conn, org_id: &str) -> DbResult<Vec<(String, String, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT id, agent_id, title, created_at FROM conversations WHERE organization_id = $1 ORDER BY created_at DESC LIMIT 200",
    )
    .bind(org_id)
    .fetch_all(c)
    .await?)
}

/// The conversations `user_id` is a member of, newest first (the shape of [`list_conversations`]).
pub async fn list_conversations_of_member(
    c: &mut Conn,
    org_id: &str,
    user_id: &str,
) -> DbResult<Vec<(String, String, String, i64)>> {
    Ok(sqlx::query_as(
        "SELECT c.id, c.agent_id, c.title, c.created_at FROM conversations c \
         JOIN conversation_members m ON m.conversation_id = c.id \
         WHERE c.organization_id = $1 AND m.user_id = $2 ORDER BY c.created_at DESC LIMIT 200",
    )
    .bind(org_id)
    .bind(user_id)
    .fetch_all(c)
    .await?)
}

// -- runs -----------------------------------------------------------------------------------

#[derive(sqlx::FromRow)]
struct RunRow {
    id: String,
    agent_id: String,
    conversation_id: Option<String>,
    started_by: String,
    user_id: Option<String>,
    trigger_as_creator: i64,
    channel_sender: Option<String>,
    status: String,
    workspace_opened: i64,
    created_at: i64,
    finished_at: Option<i64>,
}

impl From<RunRow> for Run {
    fn from(r: RunRow) -> Self {
        Run {
            id: r.id,
            agent_id: r.agent_id,
            conversation_id: r.conversation_id,
            started_by: StartedBy::parse(&r.started_by).unwrap_or(StartedBy::Api),
            user_id: r.user_id,
            trigger_as_creator: r.trigger_as_creator == 1,
            channel_sender: r.channel_sender,
            status: r.status,
            workspace_opened: r.workspace_opened == 1,
            created_at: r.created_at,
            finished_at: r.finished_at,
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub async fn insert_run(
    c: &mut Conn,
    id: &str,
    org_id: &str,
    agent_id: &str,
    conversation_id: Option<&str>,
    started_by: StartedBy,
    user_id: Option<&str>,
    trigger_as_creator: bool,
    channel_sender: Option<&str>,
    now: i64,
) -> DbResult<()> {
    sqlx::query(
        "INSERT INTO runs (id, organization_id, agent_id, conversation_id, started_by, user_id, trigger_as_creator, \
         channel_sender, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9)",
    )
    .bind(id)
    .bind(org_id)
    .bind(agent_id)
    .bind(conversation_id)
    .bind(started_by.as_str())
    .bind(user_id)
    .bind(i64::from(trigger_as_creator))
    .bind(channel_sender)
    .bind(now)
    .execute(c)
    .await?;
    Ok(())
}

pub async fn get_run(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Run>> {
    let row: Option<RunRow> = sqlx::query_as(
        "SELECT id, agent_id, conversation_id, started_by, user_id, trigger_as_creator, channel_sender, status, \
         workspace_opened, created_at, finished_at FROM runs WHERE organization_id = $1 AND id = $2",
    )
    .bind(org_id)
    .bind(id)
    .fetch_optional(c)
    .await?;
    Ok(row.map(Run::from))
}

/// Marks the run's workspace as opened; true when this call was the one that did it.
pub async fn mark_workspace_opened(c: &mut Conn, id: &str) -> DbResult<bool> {
    Ok(sqlx::query("UPDATE runs SET workspace_opened = 1 WHERE id = $1 AND workspace_opened = 0")
        .bind(id)
        .execute(c)
        .await?
        .rows_affected()
        == 1)
}

/// The host closed the run's session: the next operation opens (attaches) again.
pub async fn reset_workspace_opened(c: &mut Conn, id: &str) -> DbResult<()> {
    sqlx::query("UPDATE runs SET workspace_opened = 0 WHERE id = $1").bind(id).execute(c).await?;
    Ok(())
}

pub async fn finish_run(c: &mut Conn, org_id: &str, id: &str, now: i64) -> DbResult<u64> {
    Ok(sqlx::query("UPDATE runs SET status = 'finished', finished_at = $1 WHERE organization_id = $2 AND id = $3 AND status = 'running'")
        .bind(now)
        .bind(org_id)
        .bind(id)
        .execute(c)
        .await?
        .rows_affected())
}

/// The runs of a conversation, newest first (at most 200).
pub async fn list_runs_of_conversation(c: &mut Conn, org_id: &str, conversation_id: &str) -> DbResult<Vec<Run>> {
    let rows: Vec<RunRow> = sqlx::query_as(
        "SELECT id, agent_id, conversation_id, started_by, user_id, trigger_as_creator, channel_sender, status, \
         workspace_opened, created_at, finished_at FROM runs WHERE organization_id = $1 AND conversation_id = $2 \
         ORDER BY created_at DESC, id DESC LIMIT 200",
    )
    .bind(org_id)
    .bind(conversation_id)
    .fetch_all(c)
    .await?;
    Ok(rows.into_iter().map(Run::from).collect())
}

pub async fn is_org_member(c: &mut Conn, org_id: &str, user_id: &str) -> DbResult<bool> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memberships WHERE organization_id = $1 AND user_id = $2")
        .bind(org_id)
        .bind(user_id)
        .fetch_one(c)
        .await?;
    Ok(n > 0)
}

pub async fn email_of(c: &mut Conn, user_id: &str) -> DbResult<Option<String>> {
    Ok(sqlx::query_scalar("SELECT email FROM users WHERE id = $1").bind(user_id).fetch_optional(c).await?)
}
