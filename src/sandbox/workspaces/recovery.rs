//! Recovery copies (docs/design.md §11): who may open one. A copy keeps a run's files that could not be
//! merged into a shared `state` workspace; it may be opened only by someone who may both **view**
//! its source (docs/design.md §9: operators and above every workspace of the organization; a member
//! those of conversations they are in, their own `user` workspaces and `agent` workspaces of
//! agents they talk to) and **use** it (run its agent: the agent still exists, and a member talks
//! to it). Anyone else — and another organization — gets 404, as for a copy that does not exist.
//! Documents lists a copy as [`super::model::recovery_label`] of its source (`recovery_of`).

use super::error::WorkspaceError;
use super::model::Workspace;
use super::state_store;
use crate::access::{Caller, Role};
use crate::state::AppState;
use crate::vocabulary::scope::Scope;

/// The recovery copy `copy_id`, if the caller may open it.
pub async fn recovery_copy(st: &AppState, caller: &Caller, copy_id: &str) -> Result<Workspace, WorkspaceError> {
    let missing = || WorkspaceError::NotFound("There is no such recovery copy.".into());
    let mut c = st.db.conn().await?;
    let a = state_store::copy_access(&mut c, &caller.org_id, copy_id, &caller.user_id).await?.ok_or_else(missing)?;
    let operator = caller.role.at_least(Role::Operator);
    let may_view = operator
        || match Scope::parse(&a.source_scope) {
            Some(Scope::Conversation | Scope::Channel) => a.in_conversation,
            Some(Scope::User) => a.source_user_id.as_deref() == Some(caller.user_id.as_str()),
            Some(Scope::Agent) => a.talks_to_agent,
            Some(Scope::Run) | None => false,
        };
    let may_use = a.agent_exists && (operator || a.in_conversation || a.talks_to_agent);
    if may_view && may_use {
        Ok(a.copy)
    } else {
        Err(missing())
    }
}

/// The recovery copies of `source_id` the caller may open, newest first.
pub async fn copies_of(st: &AppState, caller: &Caller, source_id: &str) -> Result<Vec<Workspace>, WorkspaceError> {
    let mut c = st.db.conn().await?;
    let all = state_store::copies_of(&mut c, &caller.org_id, source_id).await?;
    drop(c);
    let mut out = Vec::new();
    for w in all {
        if recovery_copy(st, caller, &w.id).await.is_ok() {
            out.push(w);
        }
    }
    Ok(out)
}
