//! Deleting what has workspaces (docs/design.md §10): a conversation, an agent, a member's `user`
//! workspaces. The workspace rows go and, **in the same transaction**, one tombstone per sandbox
//! that may still run at its host (a `state` workspace is only its row); after the commit the
//! destroy is attempted at once, and whatever fails stays for the `sandbox-destroy-retry` sweep.

use std::collections::HashMap;

use serde::Serialize;

use super::error::WorkspaceError;
use super::model::{Workspace, WorkspaceState};
use super::store;
use crate::access::Caller;
use crate::agents::conversations::service as conversations;
use crate::agents::error::AgentError;
use crate::agents::model::Conversation;
use crate::agents::service as agents;
use crate::audit::service as audit;
use crate::db::{self, Conn, DbError};
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::kind::is_at_a_host;
use crate::sandbox::snapshots::lifecycle as snapshots;
use crate::sandbox::tombstones::model::Reason;
use crate::sandbox::tombstones::service::{self as tombstones, Removed};
use crate::sandbox::tombstones::sweep;
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// What a delete removed, and where its sandboxes stand.
#[derive(Debug, Clone, Default, Serialize, utoipa::ToSchema)]
pub struct Removal {
    /// Workspace rows deleted (of every backend).
    pub workspaces: usize,
    /// Sandboxes at a host among them (each got a tombstone).
    pub sandboxes: usize,
    /// Of those, destroyed at their host right away.
    pub destroyed: usize,
    /// Of those, still waiting: the `sandbox-destroy-retry` sweep retries them (the connection's
    /// row shows them as pending removal).
    pub pending: usize,
    /// The tombstones written, for the attempt after the commit.
    #[serde(skip)]
    pub tombstone_ids: Vec<String>,
}

/// Whether a workspace row stands for a session at a host that it opened (or is opening).
fn has_session(w: &Workspace) -> bool {
    is_at_a_host(&w.backend)
        && w.connection_id.is_some()
        && (w.session_ref.is_some() || w.state == WorkspaceState::Preparing)
}

/// Whether a workspace row stands for a session at a host (opened, or being opened). On a Daytona
/// connection it always may: its sandbox is created by name before it has an id here (a create
/// whose sandbox then failed to start leaves one at Daytona), so its tombstone names it by name,
/// and a 404 by name is done.
async fn has_sandbox(c: &mut Conn, org_id: &str, w: &Workspace) -> Result<bool> {
    if has_session(w) {
        return Ok(true);
    }
    let Some(connection_id) = w.connection_id.as_deref().filter(|_| is_at_a_host(&w.backend)) else {
        return Ok(false);
    };
    Ok(connections::creates_before_opened_in(&mut *c, org_id, connection_id).await?)
}

/// Deletes `rows` and writes a tombstone for each sandbox among them, in the caller's transaction.
pub async fn remove_in(c: &mut Conn, org_id: &str, rows: &[Workspace], reason: Reason, now: i64) -> Result<Removal> {
    let mut removal = Removal::default();
    for w in rows {
        if let (true, Some(connection_id)) = (has_sandbox(&mut *c, org_id, w).await?, w.connection_id.as_deref()) {
            let removed = Removed {
                connection_id,
                session_key: &w.session_key,
                session_id: w.session_ref.as_deref().unwrap_or(&w.session_key),
                reason,
            };
            let id = tombstones::record_in(&mut *c, org_id, &removed, now).await.map_err(internal)?;
            removal.tombstone_ids.push(id);
            removal.sandboxes += 1;
        }
        store::delete(&mut *c, org_id, &w.id).await?;
        // Its snapshots go with it: each row stays as a tombstone until the store deleted it.
        snapshots::doom_with_workspace(&mut *c, org_id, &w.id, now).await?;
        removal.workspaces += 1;
    }
    Ok(removal)
}

/// After the commit: forgets the cached rows and tries each destroy once now.
pub async fn destroy_now(st: &AppState, rows: &[Workspace], mut removal: Removal, now: i64) -> Removal {
    for w in rows {
        st.resolve_cache.forget_workspace(&w.id);
    }
    removal.pending = removal.sandboxes;
    snapshots::delete_now(st, &rows.iter().map(|w| w.id.clone()).collect::<Vec<_>>()).await;
    if removal.tombstone_ids.is_empty() {
        return removal;
    }
    match sweep::attempt(st, &removal.tombstone_ids, now).await {
        Ok(report) => {
            removal.destroyed = report.destroyed;
            removal.pending = removal.sandboxes - report.destroyed;
        }
        // The tombstones are committed: the sweep retries them.
        Err(e) => tracing::warn!(error = %e, "destroying removed sandboxes failed; the sweep retries them"),
    }
    removal
}

fn internal(e: impl Into<anyhow::Error>) -> WorkspaceError {
    WorkspaceError::Internal(e.into())
}

fn agent_error(e: AgentError, what: &str) -> WorkspaceError {
    match e {
        AgentError::NotFound => WorkspaceError::NotFound(format!("There is no such {what}.")),
        AgentError::Forbidden => {
            WorkspaceError::Forbidden(format!("Your role in this organization may not delete this {what}."))
        }
        AgentError::Invalid(f) => WorkspaceError::Invalid(f),
        AgentError::Internal(e) => WorkspaceError::Internal(e),
    }
}

/// "2 workspaces removed, 1 sandbox to destroy at its host"
fn detail(r: &Removal) -> String {
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{} removed, {} to destroy at its host",
        plural(r.workspaces, "workspace", "workspaces"),
        plural(r.sandboxes, "sandbox", "sandboxes")
    )
}

/// Deletes a conversation (operators and above, or its owner) with its runs and workspaces.
pub async fn delete_conversation(st: &AppState, caller: &Caller, id: &str) -> Result<Removal> {
    let (rows, removal, now) = delete_conversation_rows(st, caller, id).await?;
    Ok(destroy_now(st, &rows, removal, now).await)
}

/// Operators and above, or the conversation's owner; a conversation the caller may not see is
/// not found.
async fn ensure_may_delete_conversation(st: &AppState, caller: &Caller, id: &str) -> Result<()> {
    let conversation = conversations::get(st, caller, id).await.map_err(|e| agent_error(e, "conversation"))?;
    let owns = conversation.owner_user_id.as_deref() == Some(caller.user_id.as_str());
    if !caller.role.can_see_sandboxes() && !owns {
        return Err(WorkspaceError::Forbidden(
            "Only its owner, or operators and above, may delete a conversation.".into(),
        ));
    }
    Ok(())
}

/// The transaction of [`delete_conversation`] alone: the rows go, the tombstones are written, the
/// conversation is deleted and audited — and nothing is destroyed yet. Public so a test can stop
/// where a crash would.
pub async fn delete_conversation_rows(
    st: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<(Vec<Workspace>, Removal, i64)> {
    ensure_may_delete_conversation(st, caller, id).await?;
    let now = db::now_ms();
    let mut tx = st.db.begin().await?;
    let conversation =
        conversations::get_in(&mut tx, &caller.org_id, id).await.map_err(|e| agent_error(e, "conversation"))?;
    let rows = conversation_rows(&mut tx, &caller.org_id, &conversation, true).await?;
    let removal = remove_in(&mut tx, &caller.org_id, &rows, Reason::ConversationDeleted, now).await?;
    conversations::delete_in(&mut tx, &caller.org_id, id).await.map_err(|e| agent_error(e, "conversation"))?;
    audit::record(
        &mut tx,
        &caller.org_id,
        &caller.actor(),
        "conversation.deleted",
        &conversation.title,
        &detail(&removal),
    )
    .await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok((rows, removal, now))
}

/// The workspaces deleting `conversation` takes: its own and its runs', and its channel's shared
/// workspace only when no other conversation of the channel (same agent, same channel key) is
/// left; while one is, the shared workspace stays and is shown under the oldest of them. With
/// `lock`, the channel's workspace rows are write-locked first (in the caller's transaction), so
/// two deletes of its last conversations at once cannot both leave it behind.
async fn conversation_rows(
    c: &mut Conn,
    org_id: &str,
    conversation: &Conversation,
    lock: bool,
) -> Result<Vec<Workspace>> {
    let mut rows = store::of_conversation(&mut *c, org_id, &conversation.id).await?;
    let Some(key) = conversation.channel_key.as_deref() else { return Ok(rows) };
    if lock {
        store::lock_channel(&mut *c, org_id, &conversation.agent_id, key).await?;
    }
    let others = conversations::others_in_channel_in(&mut *c, org_id, conversation)
        .await
        .map_err(|e| agent_error(e, "conversation"))?;
    match others.first() {
        None => rows.extend(store::of_channel(&mut *c, org_id, &conversation.agent_id, key).await?),
        Some(next) if lock => store::move_channel(&mut *c, org_id, &conversation.agent_id, key, next).await?,
        Some(_) => {}
    }
    Ok(rows)
}

/// Deletes an agent (builders and above) with its conversations, runs and workspaces of every
/// scope.
pub async fn delete_agent(st: &AppState, caller: &Caller, id: &str) -> Result<Removal> {
    let now = db::now_ms();
    let mut tx = st.db.begin().await?;
    let rows = store::of_agent(&mut tx, &caller.org_id, id).await?;
    let removal = remove_in(&mut tx, &caller.org_id, &rows, Reason::AgentDeleted, now).await?;
    let agent = agents::delete_in(&mut tx, caller, id).await.map_err(|e| agent_error(e, "agent"))?;
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "agent.deleted", &agent.name, &detail(&removal)).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(destroy_now(st, &rows, removal, now).await)
}

/// The `user` workspaces of `user_id` (a member leaving), removed in the caller's transaction.
pub async fn user_workspaces_in(
    c: &mut Conn,
    org_id: &str,
    user_id: &str,
    now: i64,
) -> Result<(Vec<Workspace>, Removal)> {
    let rows = store::of_user(&mut *c, org_id, user_id).await?;
    let removal = remove_in(c, org_id, &rows, Reason::MemberRemoved, now).await?;
    Ok((rows, removal))
}

/// How many `user` workspaces each person of the caller's organization has (by user id; people
/// with none are absent): what removing them as a member would delete.
pub async fn user_workspace_counts(st: &AppState, caller: &Caller) -> Result<HashMap<String, usize>> {
    let mut c = st.db.conn().await?;
    let rows = store::count_user_by_person(&mut c, &caller.org_id).await?;
    Ok(rows.into_iter().map(|(user, n)| (user, usize::try_from(n).unwrap_or(0))).collect())
}

/// What deleting a conversation would remove, for its confirmation: how many workspaces, how
/// many sandboxes at a host, and the names of those hosts' connections.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    pub title: String,
    pub workspaces: usize,
    pub sandboxes: usize,
    pub hosts: Vec<String>,
}

pub async fn conversation_preview(st: &AppState, caller: &Caller, id: &str) -> Result<Preview> {
    ensure_may_delete_conversation(st, caller, id).await?;
    let conversation = conversations::get(st, caller, id).await.map_err(|e| agent_error(e, "conversation"))?;
    let rows = {
        let mut c = st.db.conn().await?;
        conversation_rows(&mut c, &caller.org_id, &conversation, false).await?
    };
    preview_of(st, caller, conversation.title, &rows).await
}

/// What deleting an agent would remove (builders and above; an agent of another organization is
/// not found): its workspaces of every scope and their sandboxes' hosts.
pub async fn agent_preview(st: &AppState, caller: &Caller, id: &str) -> Result<Preview> {
    if !caller.role.can_edit_agents() {
        return Err(WorkspaceError::Forbidden("Your role in this organization may not delete agents.".into()));
    }
    let name = agents::get(st, caller, id).await.map_err(|e| agent_error(e, "agent"))?.name;
    let rows = {
        let mut c = st.db.conn().await?;
        store::of_agent(&mut c, &caller.org_id, id).await?
    };
    preview_of(st, caller, name, &rows).await
}

/// Counts `rows` and names the connections of their sandboxes (each once, in order).
async fn preview_of(st: &AppState, caller: &Caller, title: String, rows: &[Workspace]) -> Result<Preview> {
    let mut hosts = Vec::new();
    for w in rows.iter().filter(|w| has_session(w)) {
        let Some(conn) = w.connection_id.as_deref() else { continue };
        let name = match connections::for_org(st, &caller.org_id, conn).await {
            Ok(Some(c)) => c.name,
            Ok(None) => continue,
            Err(e) => return Err(e.into()),
        };
        if !hosts.contains(&name) {
            hosts.push(name);
        }
    }
    Ok(Preview { title, workspaces: rows.len(), sandboxes: rows.iter().filter(|w| has_session(w)).count(), hosts })
}
