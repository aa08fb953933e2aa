//! Whose a host session is (the Running tab's rows), from the workspace row it was opened for:
//! the agent, the scope in words, the person of a `user` workspace, the run that last opened it
//! and that run's conversation. And what deleting a session's files on its host means for the
//! row: the next run starts fresh by name, never "lost".

use serde::Serialize;

use super::error::WorkspaceError;
use super::store::{self, SessionRow};
use crate::access::Caller;
use crate::agents::conversations::service as conversations;
use crate::agents::error::AgentError;
use crate::agents::runs::service as runs;
use crate::agents::service as agents;
use crate::db;
use crate::state::AppState;
use crate::vocabulary::scope::Scope;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// Whose files a host session holds, as the workspace row that opened it says.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SessionOwner {
    /// The workspace row of this session.
    pub workspace_id: String,
    /// The agent the workspace belongs to; null once the agent was deleted.
    pub agent_id: Option<String>,
    /// The agent's name; null once the agent was deleted.
    pub agent_name: Option<String>,
    /// `run`, `conversation`, `channel`, `user` or `agent`.
    pub scope: Scope,
    /// The scope in words: who shares these files ("whoever is in this conversation", …).
    #[schema(value_type = String)]
    pub access_label: &'static str,
    /// For `user` scope only: the person's e-mail address, or a channel sender's platform id.
    /// Plain text, never a link; null for every other scope.
    pub owner_name: Option<String>,
    /// The run whose operation last opened or attached this session; null when it was deleted.
    pub run_id: Option<String>,
    /// That run's conversation (or the workspace's own, for `conversation` and `channel` scope).
    pub conversation_id: Option<String>,
    /// The conversation's title.
    pub conversation_title: Option<String>,
}

impl SessionOwner {
    /// The agent's name of a session's workspace, or what is known instead.
    pub fn agent_words(owner: Option<&SessionOwner>) -> String {
        match owner {
            Some(SessionOwner { agent_name: Some(name), .. }) => name.clone(),
            Some(_) => "a deleted agent".into(),
            None => "no workspace of this organization".into(),
        }
    }
}

/// Whose session `session_id` on `connection_id` is: none when no workspace of the caller's
/// organization names it (a session opened by hand, or one whose row is gone). For operators and
/// above, who may open every conversation of the organization.
pub async fn owner_of(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
) -> Result<Option<SessionOwner>> {
    if !caller.role.can_see_sandboxes() {
        return Err(WorkspaceError::Forbidden("Only operators and above see whose a sandbox session is.".into()));
    }
    let mut c = st.db.conn().await?;
    let Some(row) = store::by_session(&mut c, &caller.org_id, connection_id, session_id).await? else {
        return Ok(None);
    };
    drop(c);
    describe(st, caller, row).await.map(Some)
}

async fn describe(st: &AppState, caller: &Caller, row: SessionRow) -> Result<SessionOwner> {
    let scope = Scope::parse(&row.scope).unwrap_or(Scope::Conversation);
    let agent_name = match &row.agent_id {
        Some(id) => found(agents::get(st, caller, id).await)?.map(|a| a.name),
        None => None,
    };
    let run_id = row.last_run_id.clone().or_else(|| row.run_id.clone());
    let run = match &run_id {
        Some(id) => found(runs::get(st, caller, id).await)?,
        None => None,
    };
    let conversation_id = row.conversation_id.clone().or_else(|| run.as_ref().and_then(|r| r.conversation_id.clone()));
    let conversation_title = match &conversation_id {
        Some(id) => found(conversations::get(st, caller, id).await)?.map(|c| c.title),
        None => None,
    };
    let owner_name = match (scope, &row.user_id) {
        (Scope::User, Some(user_id)) => runs::email_of(st, user_id).await?.or(row.owner_label.clone()),
        (Scope::User, None) => row.owner_label.clone(),
        _ => None,
    };
    Ok(SessionOwner {
        workspace_id: row.id,
        agent_id: row.agent_id,
        agent_name,
        scope,
        access_label: scope.access_label(),
        owner_name,
        run_id: run.as_ref().map(|r| r.id.clone()),
        conversation_id: conversation_title.as_ref().and(conversation_id),
        conversation_title,
    })
}

/// A deleted agent, run or conversation is simply not named.
fn found<T>(r: std::result::Result<T, AgentError>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(AgentError::NotFound) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The host deleted session `session_id`'s files on purpose (the Running tab's "Close and delete
/// files"): its workspace row forgets the reference, so the next run opens a fresh session by
/// name instead of finding the files lost.
pub async fn files_deleted(st: &AppState, org_id: &str, connection_id: &str, session_id: &str) -> Result<()> {
    let mut c = st.db.conn().await?;
    if let Some(row) = store::by_session(&mut c, org_id, connection_id, session_id).await? {
        store::forget_ref(&mut c, &row.id, db::now_ms()).await?;
        st.resolve_cache.forget_workspace(&row.id);
    }
    Ok(())
}
