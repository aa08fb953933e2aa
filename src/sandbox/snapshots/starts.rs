//! What `POST /api/v1/runs` may say about a run's start: `snapshot_id` (its workspace starts from
//! that snapshot) or `session_state` (it continues in the workspace a finished run of the same
//! agent named). Checked in the transaction that creates the run, and kept beside it.

use super::session_state;
use super::store::{self, RunStart};
use crate::agents::error::AgentError;
use crate::agents::model::Agent;
use crate::db::Conn;
use crate::state::AppState;
use crate::validate::FieldErrors;

/// The most characters a `session_state` may have.
const STATE_MAX: usize = 2048;

/// Checks the two fields against the run's agent: a snapshot of another organization or another
/// agent's workspace is a field error (422); a session state that is not ours (tampered) is a
/// field error (422); one naming another organization, another agent, or a deleted workspace is
/// 404, as anything of another organization is.
pub async fn check(
    st: &AppState,
    c: &mut Conn,
    org_id: &str,
    agent: Option<&Agent>,
    snapshot_id: Option<&str>,
    state: Option<&str>,
    errors: &mut FieldErrors,
) -> Result<RunStart, AgentError> {
    let mut start = RunStart::default();
    let snapshot_id = snapshot_id.map(str::trim).filter(|s| !s.is_empty());
    let state = state.map(str::trim).filter(|s| !s.is_empty());
    if snapshot_id.is_some() && state.is_some() {
        errors.add("session_state", "Name a snapshot or a session state, not both.");
        return Ok(start);
    }
    if let Some(id) = snapshot_id {
        match store::get(c, org_id, id).await.map_err(|e| AgentError::Internal(e.into()))? {
            Some(s) if agent.is_some_and(|a| s.agent_id.as_deref() == Some(a.id.as_str())) => {
                start.snapshot_id = Some(s.id)
            }
            Some(_) => errors.add("snapshot_id", "This snapshot is of another agent's workspace."),
            None => errors.add("snapshot_id", "There is no such snapshot in this organization."),
        }
    }
    if let Some(token) = state {
        let claims = (token.len() <= STATE_MAX).then(|| session_state::verify(st.vault_key.bytes(), token)).flatten();
        let Some(claims) = claims else {
            errors.add("session_state", "This is not a session state this platform issued.");
            return Ok(start);
        };
        let Some(agent) = agent else { return Ok(start) };
        if claims.o != org_id || claims.a != agent.id {
            return Err(AgentError::NotFound);
        }
        let exists = store::workspace_exists(c, org_id, &claims.w).await.map_err(|e| AgentError::Internal(e.into()))?;
        if !exists {
            return Err(AgentError::NotFound);
        }
        start.workspace_id = Some(claims.w);
    }
    Ok(start)
}

/// Keeps the run's start beside it (nothing when the run names neither).
pub async fn keep(c: &mut Conn, org_id: &str, run_id: &str, start: &RunStart, now: i64) -> Result<(), AgentError> {
    if start.snapshot_id.is_none() && start.workspace_id.is_none() {
        return Ok(());
    }
    store::insert_start(c, org_id, run_id, start, now).await.map_err(|e| AgentError::Internal(e.into()))
}
