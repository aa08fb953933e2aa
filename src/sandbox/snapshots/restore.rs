//! What a new session starts from: the snapshot the run names (`snapshot_id` at
//! `POST /api/v1/runs`), else — for a workspace whose session is gone (lost at its host, or purged)
//! — its latest snapshot, else the agent's manifest. What opening did is noted on the run
//! ("restored from the snapshot of …", "started empty") and shown in its workspace state.

use super::archive::{self, Item, TempFile};
use super::model::Snapshot;
use super::store;
use crate::db;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// The snapshot a session being opened starts from, if any.
pub async fn plan(st: &AppState, r: &Resolved, is_new_workspace: bool) -> Result<Option<Snapshot>> {
    let mut c = st.db.conn().await?;
    let start = store::start_of(&mut c, &r.run.id).await?.unwrap_or_default();
    if let Some(id) = start.snapshot_id {
        return match store::get(&mut c, &r.org_id, &id).await? {
            Some(s) => Ok(Some(s)),
            None => Err(WorkspaceError::Refused("The snapshot this run starts from was deleted.".into())),
        };
    }
    if !is_new_workspace {
        return Ok(None);
    }
    Ok(store::of_workspace(&mut c, &r.org_id, &r.workspace.id).await?.into_iter().next())
}

/// Whether a session being opened new had one before (its files are gone: lost, or purged).
pub fn had_files(r: &Resolved) -> bool {
    r.workspace.runtime.is_some()
}

/// The snapshot's entries, one at a time (downloaded to a temporary file first).
pub async fn entries(st: &AppState, s: &Snapshot) -> Result<tokio::sync::mpsc::Receiver<std::io::Result<Item>>> {
    let file = TempFile::new();
    st.snapshots
        .get_to_file(&s.object_key, &file.0)
        .await
        .map_err(|e| st.snapshots.read_refusal(e, "nothing was restored"))?;
    Ok(archive::entries(file))
}

/// "restored from the snapshot of 2026-12-01 20:10:05 UTC"
pub fn restored_note(s: &Snapshot) -> String {
    format!("restored from the snapshot of {}", s.time_label())
}

pub const STARTED_EMPTY: &str = "started empty";

/// Notes on the run what its workspace started from.
pub async fn note(st: &AppState, r: &Resolved, note: &str) -> Result<()> {
    let mut c = st.db.conn().await?;
    store::set_note(&mut c, &r.org_id, &r.run.id, note, db::now_ms()).await?;
    Ok(())
}

/// What the run's workspace started from, if opening noted it.
pub async fn note_of(st: &AppState, run_id: &str) -> Result<Option<String>> {
    let mut c = st.db.conn().await?;
    Ok(store::start_of(&mut c, run_id).await?.and_then(|s| s.note))
}
