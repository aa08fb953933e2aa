//! What a workspace's own life does to its snapshots, for the workspaces service (a run's end,
//! a run bound to a workspace, a workspace deleted): below it, so this file and what it calls
//! never call the workspaces service. The snapshots service (`service.rs`) is above both.

use super::keep::{self, Uploader};
use super::model::Mode;
use super::pending;
use super::store;
use crate::db;
use crate::sandbox::hosts::kind::is_at_a_host;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// What a run's end does: a snapshot when the agent says so (and, for
/// `on_finish_when_changed`, when something changed since the latest one, stored or on its way).
/// Called before the workspace is ended (a `run`-scoped session is purged after): the workspace
/// is read now, and stored in the background ([`pending`]), so a store that does not answer never
/// holds the finish. A failure is recorded and retried: the run finishes either way.
pub async fn at_finish(st: &AppState, r: &Resolved) {
    if !is_at_a_host(&r.workspace.backend) || r.workspace.session_ref.is_none() {
        return;
    }
    let decided = async {
        let mut c = st.db.conn().await?;
        let settings = store::settings(&mut c, &r.agent.id).await?;
        let take = match settings.snapshots {
            Mode::Never => false,
            Mode::OnFinish => true,
            Mode::OnFinishWhenChanged => {
                let stored =
                    store::of_workspace(&mut c, &r.org_id, &r.workspace.id).await?.first().map(|s| s.created_at);
                let waiting = store::latest_pending(&mut c, &r.org_id, &r.workspace.id).await?;
                let latest = stored.into_iter().chain(waiting).max();
                let mut log = st.log.reader().await?;
                log.changed_since(&r.org_id, &r.workspace.id, latest.unwrap_or(0)).await?
            }
        };
        Ok::<bool, WorkspaceError>(take)
    };
    let outcome = match decided.await {
        Ok(false) => return,
        Ok(true) => pending::hand_over(st, r).await,
        Err(e) => Err(e),
    };
    if let Err(e) = outcome {
        tracing::warn!(event = "snapshot_failed", run_id = %r.run.id, workspace_id = %r.workspace.id, error = %e,
            "the snapshot at a run's end could not be taken");
    }
}

/// The workspace a `session_state` bound the run to.
pub async fn bound_workspace(st: &AppState, run_id: &str) -> Result<Option<String>> {
    let mut c = st.db.conn().await?;
    Ok(store::bound_workspace(&mut c, run_id).await?)
}

// ---------------------------------------------------------------------------------------------
// Deleting: with their workspace, through tombstones (doomed rows) the sweep retries.

/// Dooms the workspace's snapshots, in the transaction that deletes the workspace.
pub async fn doom_with_workspace(c: &mut db::Conn, org_id: &str, workspace_id: &str, now: i64) -> Result<()> {
    store::doom_workspace(c, org_id, workspace_id, now).await?;
    Ok(())
}

/// After the delete's commit: each doomed snapshot of these workspaces is deleted from the store
/// once now; a failure is left to the sweep.
pub async fn delete_now(st: &AppState, workspace_ids: &[String]) {
    pending::forget_workspaces(st, workspace_ids);
    let now = db::now_ms();
    for w in workspace_ids {
        let doomed = match st.db.conn().await {
            Ok(mut c) => store::doomed_of(&mut c, w).await.unwrap_or_default(),
            Err(_) => continue,
        };
        for (id, key, attempts) in doomed {
            if let Err(e) = keep::delete_object(&Uploader::of(st), &id, &key, attempts, now).await {
                tracing::warn!(error = %e, snapshot_id = %id, "deleting a snapshot failed; the sweep retries it");
            }
        }
    }
}
