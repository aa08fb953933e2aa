//! Snapshots taken when a run finishes, on their way to the object store (issue 25): a finish
//! does not wait on the store. The workspace is read from its host at once (a `run`-scoped
//! session is purged right after), the archive waits in the snapshot folder's `pending/`, and one
//! upload is tried in the background; what fails is retried by the `sandbox-destroy-retry` sweep
//! (the pause doubling, as the tombstones'), and the last error shows on the workspace's page. An
//! archive that could not be read (a host down), or that waits on another replica's disk, is read
//! from the host again by the sweep.

use std::path::Path;

use super::keep::{self, object_key, stored, within_deadline, Uploader};
use super::model::{Snapshot, TakenBy};
use super::objects::make_private;
use super::store::{self, Pending};
use super::uploads::Uploads;
use crate::db;
use crate::sandbox::tombstones::model::pause_after;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::{Resolved, Workspace};
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// Waits until the background upload of `run_id`'s snapshot (if one is under way) has ended, in
/// success or failure. For tests and an orderly stop; a finish never waits on it.
pub async fn wait_for_run(st: &AppState, run_id: &str) {
    for mut rx in st.snapshot_uploads.of_run(run_id) {
        // The sender is dropped when the upload ends.
        while rx.changed().await.is_ok() {}
    }
}

/// The snapshot at a run's end: read now, stored in the background. Never fails the finish: what
/// goes wrong is recorded on the pending row (shown on the workspace's page) and retried.
pub async fn hand_over(st: &AppState, r: &Resolved) -> Result<()> {
    let up = Uploader::of(st);
    let now = db::now_ms();
    let id = db::new_id();
    let mut p = Pending {
        id: id.clone(),
        organization_id: r.org_id.clone(),
        workspace_id: r.workspace.id.clone(),
        agent_id: r.workspace.agent_id.clone(),
        run_id: Some(r.run.id.clone()),
        created_at: now,
        has_archive: 0,
        size_bytes: 0,
        file_count: 0,
        attempts: 0,
        // Claimed by this replica's background upload.
        next_attempt_at: now + up.lease_ms(),
        last_error: None,
    };
    match read_into_pending(st, &up, &p, Some(&r.workspace)).await {
        Ok((size, files)) => (p.has_archive, p.size_bytes, p.file_count) = (1, size, files),
        Err(e) => {
            tracing::warn!(event = "snapshot_failed", run_id = %r.run.id, workspace_id = %r.workspace.id, error = %e,
                "the snapshot at a run's end could not read the workspace; the sweep retries it");
            p.attempts = 1;
            p.next_attempt_at = now + pause_after(1);
            p.last_error = Some(words(&e));
        }
    }
    {
        let mut c = st.db.conn().await?;
        store::insert_pending(&mut c, &p).await?;
    }
    if p.has_archive == 1 {
        spawn_upload(&st.snapshot_uploads, up, p);
    }
    Ok(())
}

/// Reads the workspace from its host into its pending file: (size, files).
async fn read_into_pending(st: &AppState, up: &Uploader, p: &Pending, w: Option<&Workspace>) -> Result<(i64, i64)> {
    let Some(w) = w else {
        return Err(WorkspaceError::NotFound("The workspace was deleted.".into()));
    };
    let built = within_deadline(st.config.snapshots.snapshot_timeout, keep::read(st, &p.organization_id, w)).await?;
    keep_file(&built.file.0, &up.pending_dir, &up.file(p)).map_err(|e| WorkspaceError::Internal(e.into()))?;
    Ok((built.size as i64, built.files as i64))
}

/// Moves a temporary archive into the pending folder (copied when on another file system),
/// readable by this user only.
fn keep_file(from: &Path, dir: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    make_private(dir, true)?;
    if std::fs::rename(from, to).is_err() {
        std::fs::copy(from, to)?;
        let _ = std::fs::remove_file(from);
    }
    make_private(to, false)
}

fn spawn_upload(uploads: &Uploads, up: Uploader, p: Pending) {
    let done = uploads.begin(p.run_id.clone().unwrap_or_default(), p.id.clone());
    let uploads = uploads.clone();
    tokio::spawn(async move {
        attempt(&up, &p).await;
        uploads.end(&p.id);
        drop(done);
    });
}

/// One upload of a pending snapshot whose archive is on this disk: stored (the row, retention)
/// and the pending row gone, or the failure recorded and the next attempt scheduled.
async fn attempt(up: &Uploader, p: &Pending) -> bool {
    let file = up.file(p);
    let s = Snapshot {
        id: p.id.clone(),
        organization_id: p.organization_id.clone(),
        workspace_id: p.workspace_id.clone(),
        agent_id: p.agent_id.clone(),
        created_at: p.created_at,
        size_bytes: p.size_bytes,
        file_count: p.file_count,
        object_key: object_key(&p.organization_id, &p.workspace_id, &p.id),
        taken_by: TakenBy::Finish.as_str().to_string(),
    };
    let outcome = within_deadline(up.deadline, stored(up, &s, &file, Some(&p.id))).await;
    let now = db::now_ms();
    match outcome {
        Ok(_) => {
            let _ = std::fs::remove_file(&file);
            true
        }
        Err(e) => {
            tracing::warn!(event = "snapshot_upload_failed", snapshot_id = %p.id, workspace_id = %p.workspace_id,
                attempts = p.attempts + 1, error = %e, cause = ?std::error::Error::source(&e),
                "a snapshot could not be stored; the sweep retries it");
            let recorded = async {
                let mut c = up.db.conn().await?;
                store::pending_failed(&mut c, &p.id, now + pause_after(p.attempts + 1), &words(&e)).await
            };
            if let Err(e) = recorded.await {
                tracing::warn!(error = %e, snapshot_id = %p.id, "recording a snapshot's failure failed");
            }
            false
        }
    }
}

/// The sweep: every pending snapshot due at `now` this replica can claim is stored, or its
/// failure recorded. Returns how many were stored.
pub async fn retry<F, Fut>(st: &AppState, now: i64, row_of: F) -> Result<usize>
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Workspace>>>,
{
    let up = Uploader::of(st);
    let due = {
        let mut c = st.db.conn().await?;
        store::pending_due(&mut c, now, 50).await?
    };
    let mut stored_now = 0;
    for mut p in due {
        let claimed = {
            let mut c = st.db.conn().await?;
            store::claim_pending(&mut c, &p.id, p.next_attempt_at, now + up.lease_ms()).await?
        };
        if !claimed {
            continue;
        }
        // The archive is not on this disk (never read, or read on another replica): read again.
        if p.has_archive == 0 || !up.file(&p).exists() {
            let w = row_of(p.organization_id.clone(), p.workspace_id.clone()).await?;
            match read_into_pending(st, &up, &p, w.as_ref()).await {
                Ok((size, files)) => {
                    p.created_at = db::now_ms();
                    (p.has_archive, p.size_bytes, p.file_count) = (1, size, files);
                    let mut c = st.db.conn().await?;
                    store::pending_has_archive(&mut c, &p.id, p.created_at, size, files).await?;
                }
                Err(e) => {
                    let mut c = st.db.conn().await?;
                    store::pending_failed(&mut c, &p.id, now + pause_after(p.attempts + 1), &words(&e)).await?;
                    continue;
                }
            }
        }
        if attempt(&up, &p).await {
            stored_now += 1;
        }
    }
    Ok(stored_now)
}

/// A failure in the words the workspace's page shows (the cause is in the log).
fn words(e: &WorkspaceError) -> String {
    match e {
        WorkspaceError::Internal(_) => "The snapshot could not be taken (the console's log says why).".into(),
        other => other.to_string(),
    }
}

/// Whether the background upload of `run_id`'s snapshot is still under way.
pub fn is_uploading(st: &AppState, run_id: &str) -> bool {
    !st.snapshot_uploads.of_run(run_id).is_empty()
}

/// Removes the archives of deleted workspaces that were still waiting for the store (their rows
/// went with the workspaces).
pub fn forget_workspaces(st: &AppState, workspace_ids: &[String]) {
    let dir = &st.config.snapshots.pending_dir;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if workspace_ids.iter().any(|w| name.starts_with(&format!("{w}."))) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
