//! What taking a snapshot is made of, below both the on-demand path (`service`) and the
//! background one (`pending`): reading a workspace from its host into an archive, storing the
//! archive and its row, retention, and deleting an object. It reads workspaces it is given and
//! never asks the workspaces service, so neither snapshot module joins that service's import loop.

use std::path::PathBuf;
use std::time::Duration;

use super::model::{Settings, Snapshot};
use super::objects::Objects;
use super::store::{self, Pending};
use super::{reading, reading_batched, reading_packed};
use crate::db::{self, Db};
use crate::sandbox::connections::model::ConnectionKind;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::workspaces::stored::{self, Start, Stored};
use crate::sandbox::hosts::kind::is_at_a_host;
use crate::sandbox::hosts::sandboxd::client::SandboxdClient;
use crate::sandbox::tombstones::model::pause_after;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Workspace;
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// What an upload needs, without a request's state: a background task holds it.
#[derive(Clone)]
pub struct Uploader {
    pub db: Db,
    pub objects: Objects,
    pub pending_dir: PathBuf,
    /// How long an attempt may take (the whole-snapshot deadline).
    pub deadline: Duration,
    /// The console's test hook (unarmed outside tests).
    pub hold: super::hold::SnapshotHold,
}

impl Uploader {
    pub fn of(st: &AppState) -> Uploader {
        Uploader {
            db: st.db.clone(),
            objects: st.snapshots.clone(),
            pending_dir: st.config.snapshots.pending_dir.clone(),
            deadline: st.config.snapshots.snapshot_timeout,
            hold: st.snapshot_hold.clone(),
        }
    }

    /// `pending/<workspace id>.<snapshot id>.tar.gz`: a deleted workspace's are found by name.
    pub(super) fn file(&self, p: &Pending) -> PathBuf {
        self.pending_dir.join(format!("{}.{}.tar.gz", p.workspace_id, p.id))
    }

    /// An attempt holds its row this long: its deadline and a minute.
    pub(super) fn lease_ms(&self) -> i64 {
        i64::try_from(self.deadline.as_millis()).unwrap_or(i64::MAX / 4) + 60_000
    }
}

/// Where a workspace's files are read from: a sandboxd host's stored session, or a Daytona
/// sandbox (through the Daytona backend's stored files).
pub(super) enum Source {
    Sandboxd(SandboxdClient, String),
    Daytona(Stored, String),
}

/// The workspace's host and the session (or sandbox) whose files are saved. A Daytona sandbox
/// Daytona stopped is started for it.
pub(super) async fn source(st: &AppState, org_id: &str, w: &Workspace) -> Result<Source> {
    if !is_at_a_host(&w.backend) {
        return Err(WorkspaceError::Refused(
            "This workspace is a document kept in our database (the state backend): snapshots save sandbox workspaces."
                .into(),
        ));
    }
    let session_id = w.session_ref.clone().ok_or_else(|| {
        WorkspaceError::Refused(
            "This workspace has no files at its host yet (nothing was opened): nothing to save.".into(),
        )
    })?;
    let connection_id = w
        .connection_id
        .as_deref()
        .ok_or_else(|| WorkspaceError::Refused("This workspace has no sandbox host.".into()))?;
    let conn = connections::for_org(st, org_id, connection_id)
        .await
        .map_err(|e| WorkspaceError::Internal(e.into()))?
        .ok_or_else(|| WorkspaceError::Refused("This workspace's sandbox host was removed.".into()))?;
    match conn.kind {
        ConnectionKind::Daytona => match stored::open(st, org_id, &conn, &session_id, Start::IfStopped).await {
            Ok(files) => Ok(Source::Daytona(files, session_id)),
            Err(WorkspaceError::Lost) => {
                Err(WorkspaceError::Refused("Daytona no longer has this workspace's sandbox: nothing to save.".into()))
            }
            Err(e) => Err(e),
        },
        ConnectionKind::Sandboxd => {
            let client = connections::client_for(st, org_id, &conn).await?;
            Ok(Source::Sandboxd(client, session_id))
        }
    }
}

/// `fut`, or a 504 once `limit` passed (reading the workspace and storing it took too long).
pub async fn within_deadline<T>(
    limit: std::time::Duration,
    fut: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r,
        Err(_) => Err(WorkspaceError::StoreNoAnswer {
            message: format!(
                "The snapshot did not finish within {} s (reading the workspace from its host and storing it in the snapshot store); nothing was saved. Try again later.",
                limit.as_secs()
            ),
            source: anyhow::anyhow!("the whole-snapshot deadline of {limit:?} passed"),
        }),
    }
}

/// Where a snapshot's archive is kept in the store.
pub fn object_key(org_id: &str, workspace_id: &str, id: &str) -> String {
    format!("{org_id}/{workspace_id}/{id}.tar.gz")
}

/// Reads the workspace from its host into an archive (a temporary file).
pub async fn read(st: &AppState, org_id: &str, w: &Workspace) -> Result<reading::Built> {
    match source(st, org_id, w).await? {
        Source::Sandboxd(client, session_id) => {
            reading_packed::from_sandboxd(&st.snapshot_hold, &client, &session_id).await
        }
        Source::Daytona(files, sandbox_id) => {
            reading_batched::from_daytona(&st.snapshot_hold, &files, &sandbox_id).await
        }
    }
}

/// Uploads the archive at `file` as snapshot `s`, records its row (and, for a snapshot that waited
/// as `pending_id`, removes that row in the same transaction), then applies the agent's
/// retention. A pending snapshot whose workspace was deleted meanwhile is doomed at once: the
/// sweep deletes its object.
pub async fn stored(up: &Uploader, s: &Snapshot, file: &std::path::Path, pending_id: Option<&str>) -> Result<Snapshot> {
    up.objects.put_file(&s.object_key, file, &up.hold).await.map_err(|e| up.objects.refusal(e))?;
    let mut tx = up.db.begin().await?;
    store::insert(&mut tx, s).await?;
    let is_kept = match pending_id {
        Some(id) => store::remove_pending(&mut tx, id).await?,
        None => true,
    };
    if !is_kept {
        store::doom(&mut tx, &s.id, db::now_ms()).await?;
    }
    let settings = match &s.agent_id {
        Some(a) => store::settings(&mut tx, a).await?,
        None => Settings::default(),
    };
    tx.commit().await.map_err(db::DbError::from)?;
    tracing::info!(event = "snapshot_taken", snapshot_id = %s.id, workspace_id = %s.workspace_id, size = s.size_bytes,
        files = s.file_count, taken_by = %s.taken_by, "a workspace snapshot was saved");
    if is_kept {
        keep_last(up, &s.organization_id, &s.workspace_id, settings.keep_last).await?;
    } else {
        delete_object(up, &s.id, &s.object_key, 0, db::now_ms()).await?;
    }
    Ok(s.clone())
}

/// Deletes all but the newest `n` snapshots of the workspace (from the store, then their rows; a
/// store failure leaves the row doomed for the sweep).
pub(super) async fn keep_last(up: &Uploader, org_id: &str, workspace_id: &str, n: i64) -> Result<()> {
    let now = db::now_ms();
    let mut c = up.db.conn().await?;
    let all = store::of_workspace(&mut c, org_id, workspace_id).await?;
    let old: Vec<&Snapshot> = all.iter().skip(n.max(1) as usize).collect();
    for s in &old {
        store::doom(&mut c, &s.id, now).await?;
    }
    drop(c);
    for s in old {
        delete_object(up, &s.id, &s.object_key, 0, now).await?;
    }
    Ok(())
}

/// Deletes the object, then the row; a store failure reschedules the row (the pause doubling as
/// the sandbox tombstones'). Whether it was deleted.
pub(super) async fn delete_object(up: &Uploader, id: &str, key: &str, attempts: i64, now: i64) -> Result<bool> {
    let outcome = up.objects.delete(key).await;
    let mut c = up.db.conn().await?;
    match outcome {
        Ok(()) => {
            store::remove(&mut c, id).await?;
            Ok(true)
        }
        Err(e) => {
            tracing::warn!(event = "snapshot_delete_failed", snapshot_id = %id, error = %e, "the store refused a snapshot's delete");
            let why = if e.is_no_answer() {
                "The snapshot store did not answer in time."
            } else {
                "The snapshot store could not delete it."
            };
            store::reschedule(&mut c, id, now + pause_after(attempts + 1), why).await?;
            Ok(false)
        }
    }
}
