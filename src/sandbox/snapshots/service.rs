//! Taking, listing, fetching and deleting snapshots. A snapshot reads the workspace from its host
//! through the stored-workspace routes (so a finished run's workspace, or a closed session, can be
//! saved too), writes the archive to a temporary file and uploads it in parts; then the row, then
//! retention (the agent's `keep_last`: older ones are deleted from the store and their rows).
//! This service reads workspace rows through the workspaces service; what the workspaces service
//! needs of snapshots (a run's end, a bound run, a delete) is `lifecycle.rs`, below both.

use super::keep::{self, Uploader};
use super::model::{Mode, Settings, Snapshot, TakenBy, KEEP_MAX};
use super::pending;
use super::settings;
use super::store;
use crate::access::Caller;
use crate::db;
use crate::documents::error::DocumentError;
use crate::documents::service as documents;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Workspace;
use crate::sandbox::workspaces::service as workspaces;
use crate::state::AppState;
use crate::validate::FieldErrors;

type Result<T> = std::result::Result<T, WorkspaceError>;

const NOT_VISIBLE: &str = "There is no such workspace, or you may not see it.";

/// The workspace, when the caller may see it (404 otherwise, also across organizations): its
/// agent and conversation.
pub async fn visible(st: &AppState, caller: &Caller, workspace_id: &str) -> Result<(Option<String>, Option<String>)> {
    documents::may_see(st, caller, workspace_id).await.map_err(|e| match e {
        DocumentError::NotFound(_) => WorkspaceError::NotFound(NOT_VISIBLE.into()),
        other => WorkspaceError::Internal(anyhow::anyhow!(other.to_string())),
    })
}

/// The live snapshots of a workspace the caller may see, newest first.
pub async fn list(st: &AppState, caller: &Caller, workspace_id: &str) -> Result<Vec<Snapshot>> {
    visible(st, caller, workspace_id).await?;
    let mut c = st.db.conn().await?;
    Ok(store::of_workspace(&mut c, &caller.org_id, workspace_id).await?)
}

/// A snapshot whose workspace the caller may see.
pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Snapshot> {
    let gone = || WorkspaceError::NotFound("There is no such snapshot, or you may not see it.".into());
    let s = {
        let mut c = st.db.conn().await?;
        store::get(&mut c, &caller.org_id, id).await?.ok_or_else(gone)?
    };
    visible(st, caller, &s.workspace_id).await.map_err(|_| gone())?;
    Ok(s)
}

/// Takes a snapshot now, for someone who may see the workspace.
pub async fn take_on_demand(st: &AppState, caller: &Caller, workspace_id: &str) -> Result<Snapshot> {
    visible(st, caller, workspace_id).await?;
    let w = workspaces::row(st, &caller.org_id, workspace_id)
        .await?
        .ok_or_else(|| WorkspaceError::NotFound(NOT_VISIBLE.into()))?;
    take(st, &caller.org_id, &w, TakenBy::OnDemand).await
}

/// Reads the workspace from its host into an archive, uploads it, records the row, then applies
/// the agent's retention, all within the whole-snapshot deadline. A store that does not answer is
/// a 504 naming it, one that fails a 502.
pub async fn take(st: &AppState, org_id: &str, w: &Workspace, by: TakenBy) -> Result<Snapshot> {
    keep::within_deadline(st.config.snapshots.snapshot_timeout, async {
        let built = keep::read(st, org_id, w).await?;
        let id = db::new_id();
        let s = Snapshot {
            object_key: keep::object_key(org_id, &w.id, &id),
            id,
            organization_id: org_id.to_string(),
            workspace_id: w.id.clone(),
            agent_id: w.agent_id.clone(),
            created_at: db::now_ms(),
            size_bytes: built.size as i64,
            file_count: built.files as i64,
            taken_by: by.as_str().to_string(),
        };
        tracing::info!(event = "snapshot_read", snapshot_id = %s.id, workspace_id = %w.id, skipped = built.skipped,
            "a workspace was read for a snapshot");
        keep::stored(&Uploader::of(st), &s, &built.file.0, None).await
    })
    .await
}

/// The snapshots taken when a run finished that have not reached the store yet (with the last
/// error of each), for someone who may see the workspace; oldest first.
pub async fn pending_of(st: &AppState, caller: &Caller, workspace_id: &str) -> Result<Vec<store::Pending>> {
    visible(st, caller, workspace_id).await?;
    let mut c = st.db.conn().await?;
    Ok(store::pending_of(&mut c, &caller.org_id, workspace_id).await?)
}

/// An agent's snapshot settings.
pub async fn settings(st: &AppState, agent_id: &str) -> Result<Settings> {
    let mut c = st.db.conn().await?;
    Ok(store::settings(&mut c, agent_id).await?)
}

/// Saves an agent's snapshot settings (the agent is the caller's organization's: checked by the
/// caller), naming a field that is wrong.
pub async fn put_settings(
    st: &AppState,
    org_id: &str,
    agent_id: &str,
    mode: &str,
    keep_last: Option<i64>,
) -> Result<Settings> {
    let s = check_settings(mode, keep_last).map_err(WorkspaceError::Invalid)?;
    save_settings(st, org_id, agent_id, &s).await?;
    Ok(s)
}

/// Settings checked, each wrong field named (`snapshots`, `keep_last`); `keep_last` none: the
/// default.
pub fn check_settings(mode: &str, keep_last: Option<i64>) -> std::result::Result<Settings, FieldErrors> {
    let mut errors = FieldErrors::new();
    let snapshots = Mode::parse(mode);
    if snapshots.is_none() {
        errors.add("snapshots", "Choose never, on_finish or on_finish_when_changed.");
    }
    let keep_last = keep_last.unwrap_or(super::model::KEEP_DEFAULT);
    if !(1..=KEEP_MAX).contains(&keep_last) {
        errors.add("keep_last", keep_last_message());
    }
    errors.into_result()?;
    Ok(Settings { snapshots: snapshots.unwrap_or_default(), keep_last })
}

/// What a `keep_last` out of range (or not a number) is told.
pub fn keep_last_message() -> String {
    format!("Keep 1 to {KEEP_MAX} snapshots.")
}

/// Saves settings already checked, for an agent of `org_id`.
pub async fn save_settings(st: &AppState, org_id: &str, agent_id: &str, s: &Settings) -> Result<()> {
    let mut c = st.db.conn().await?;
    settings::save_in(&mut c, org_id, agent_id, s).await?;
    Ok(())
}

/// The sweep: every doomed snapshot due at `now`, and every snapshot taken at a run's end still
/// waiting for the store. Returns how many doomed ones were deleted.
pub async fn sweep(st: &AppState, now: i64) -> Result<usize> {
    // The sweep re-reads a workspace whose archive is not on this disk: it is looked up here, so
    // the background path (`pending`, which `lifecycle.rs` hands over to, which the workspaces
    // service calls) never asks the workspaces service itself.
    let row_of = |org: String, id: String| async move { workspaces::row(st, &org, &id).await };
    match pending::retry(st, now, row_of).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(snapshots_stored = n, "snapshots taken at a run's end reached the store"),
        Err(e) => tracing::warn!(error = %e, "retrying snapshots that wait for the store failed"),
    }
    let up = Uploader::of(st);
    let due = {
        let mut c = st.db.conn().await?;
        store::due(&mut c, now, 200).await?
    };
    let mut deleted = 0;
    for (id, key, attempts) in due {
        if keep::delete_object(&up, &id, &key, attempts, now).await? {
            deleted += 1;
        }
    }
    Ok(deleted)
}
