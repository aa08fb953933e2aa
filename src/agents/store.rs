//! SQL for agents, the people agents' conversations and runs name, and the query helpers
//! [`super::conversations::store`] and [`super::runs::store`] share.

use sqlx::any::AnyRow;
use sqlx::FromRow;

use super::manifest::{Manifest, WorkspaceFile};
use super::model::{Agent, AgentSummary, Backend};
use crate::db::{Conn, DbResult};
use crate::vocabulary::scope::Scope;

/// The rows `sql` selects, its `$1`, `$2`, … bound to `binds`.
pub(super) async fn fetch_all<R>(c: &mut Conn, sql: &str, binds: &[&str]) -> DbResult<Vec<R>>
where
    R: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let query = binds.iter().fold(sqlx::query_as::<_, R>(sql), |q, b| q.bind(*b));
    Ok(query.fetch_all(c).await?)
}

/// The row `sql` selects, if any (see [`fetch_all`]).
pub(super) async fn fetch_optional<R>(c: &mut Conn, sql: &str, binds: &[&str]) -> DbResult<Option<R>>
where
    R: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let query = binds.iter().fold(sqlx::query_as::<_, R>(sql), |q, b| q.bind(*b));
    Ok(query.fetch_optional(c).await?)
}

// -- agents ---------------------------------------------------------------------------------

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
    manifest: String,
    created_at: i64,
    updated_at: i64,
}

fn files(json: &str) -> Vec<WorkspaceFile> {
    serde_json::from_str(json).unwrap_or_default()
}

fn files_json(files: &[WorkspaceFile]) -> String {
    serde_json::to_string(files).unwrap_or_else(|_| "[]".into())
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
            manifest: Manifest::from_json(&r.manifest),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

const AGENT_COLUMNS: &str =
    "id, name, backend, connection_id, scope, runtime, shell_enabled, skills, manifest, created_at, updated_at";

#[derive(sqlx::FromRow)]
struct AgentSummaryRow {
    id: String,
    name: String,
    backend: String,
    connection_id: Option<String>,
    scope: String,
    runtime: Option<String>,
    shell_enabled: i64,
    created_at: i64,
    updated_at: i64,
}

impl From<AgentSummaryRow> for AgentSummary {
    fn from(r: AgentSummaryRow) -> Self {
        AgentSummary {
            id: r.id,
            name: r.name,
            backend: Backend::parse(&r.backend).unwrap_or(Backend::State),
            connection_id: r.connection_id,
            scope: Scope::parse(&r.scope).unwrap_or(Scope::Conversation),
            runtime: r.runtime,
            shell_enabled: r.shell_enabled == 1,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// The organization's agents by name, without their files (never read for a list).
pub async fn list_agents(c: &mut Conn, org_id: &str) -> DbResult<Vec<AgentSummary>> {
    let sql = "SELECT id, name, backend, connection_id, scope, runtime, shell_enabled, created_at, updated_at \
               FROM agents WHERE organization_id = $1 ORDER BY name";
    let rows: Vec<AgentSummaryRow> = fetch_all(c, sql, &[org_id]).await?;
    Ok(rows.into_iter().map(AgentSummary::from).collect())
}

pub async fn get_agent(c: &mut Conn, org_id: &str, id: &str) -> DbResult<Option<Agent>> {
    let sql = format!("SELECT {AGENT_COLUMNS} FROM agents WHERE organization_id = $1 AND id = $2");
    let row: Option<AgentRow> = fetch_optional(c, &sql, &[org_id, id]).await?;
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
    pub manifest: &'a Manifest,
}

/// The columns [`AgentValues`] fill, bound as `$1` to `$8` by [`write_agent`].
const AGENT_VALUE_COLUMNS: &str = "name, backend, connection_id, scope, runtime, shell_enabled, skills, manifest";

/// Runs `sql` with the agent's values as `$1` to `$8`, then `more` in order.
async fn write_agent(c: &mut Conn, sql: &str, v: &AgentValues<'_>, more: &[&str], now: i64) -> DbResult<u64> {
    let query = sqlx::query(sql)
        .bind(v.name)
        .bind(v.backend.as_str())
        .bind(v.connection_id)
        .bind(v.scope.as_str())
        .bind(v.runtime)
        .bind(i64::from(v.shell_enabled))
        .bind(files_json(v.skills))
        .bind(v.manifest.to_json())
        .bind(now);
    let query = more.iter().fold(query, |q, b| q.bind(*b));
    Ok(query.execute(c).await?.rows_affected())
}

pub async fn insert_agent(
    c: &mut Conn,
    id: &str,
    org_id: &str,
    v: &AgentValues<'_>,
    created_by: &str,
    now: i64,
) -> DbResult<()> {
    let sql = format!(
        "INSERT INTO agents ({AGENT_VALUE_COLUMNS}, created_at, updated_at, id, organization_id, created_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12)"
    );
    write_agent(c, &sql, v, &[id, org_id, created_by], now).await?;
    Ok(())
}

pub async fn update_agent(c: &mut Conn, org_id: &str, id: &str, v: &AgentValues<'_>, now: i64) -> DbResult<u64> {
    let sql =
        "UPDATE agents SET name = $1, backend = $2, connection_id = $3, scope = $4, runtime = $5, shell_enabled = $6, \
               skills = $7, manifest = $8, updated_at = $9 WHERE organization_id = $10 AND id = $11";
    write_agent(c, sql, v, &[org_id, id], now).await
}

// -- people ---------------------------------------------------------------------------------

pub async fn is_org_member(c: &mut Conn, org_id: &str, user_id: &str) -> DbResult<bool> {
    let sql = "SELECT COUNT(*) FROM memberships WHERE organization_id = $1 AND user_id = $2";
    let (n,): (i64,) = fetch_optional(c, sql, &[org_id, user_id]).await?.unwrap_or((0,));
    Ok(n > 0)
}

pub async fn email_of(c: &mut Conn, user_id: &str) -> DbResult<Option<String>> {
    let row: Option<(String,)> = fetch_optional(c, "SELECT email FROM users WHERE id = $1", &[user_id]).await?;
    Ok(row.map(|(e,)| e))
}

// -- pins (read by the connections service through `super::pins`) ---------------------------

/// The names of the agents of `org_id` pinned to connection `connection_id`.
pub async fn names_pinned_to(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<Vec<String>> {
    let sql = "SELECT name FROM agents WHERE organization_id = $1 AND connection_id = $2 ORDER BY name";
    let rows: Vec<(String,)> = fetch_all(c, sql, &[org_id, connection_id]).await?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}

/// Deletes an agent of `org_id` (its conversations and runs go by their foreign keys).
pub async fn delete_agent(c: &mut Conn, org_id: &str, id: &str) -> DbResult<u64> {
    Ok(sqlx::query("DELETE FROM agents WHERE organization_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(c)
        .await?
        .rows_affected())
}
