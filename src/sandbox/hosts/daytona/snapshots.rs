//! A Daytona workspace's snapshot (docs/daytona.md): its sandbox's files, the sandbox started if
//! Daytona stopped it, read in batches into the archive (`snapshots/reading_batched.rs`), each
//! batch one request of the toolbox's bulk download.

use tokio::sync::mpsc;

use crate::documents::exclusions::is_excluded;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::daytona::client::{BULK_BYTES, BULK_FILES, BULK_IN_FLIGHT};
use crate::sandbox::hosts::daytona::workspaces::stored::{self, Start, Stored};
use crate::sandbox::snapshots::hold::SnapshotHold;
use crate::sandbox::snapshots::reading::{self, Built, Listed, Read};
use crate::sandbox::snapshots::reading_batched::{self, Batches};
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;
use crate::vocabulary::paths::{self, WorkspacePath};

/// The bulk download's limits, as the snapshot's batches.
const BATCHES: Batches = Batches { files: BULK_FILES, bytes: BULK_BYTES, in_flight: BULK_IN_FLIGHT };

/// Sandbox `sandbox_id`'s files on `conn` as a snapshot's archive.
pub async fn archive(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    sandbox_id: &str,
) -> Result<Built, WorkspaceError> {
    let files = match stored::open(st, org_id, conn, sandbox_id, Start::IfStopped).await {
        Ok(files) => files,
        Err(WorkspaceError::Lost) => {
            return Err(WorkspaceError::Refused(
                "Daytona no longer has this workspace's sandbox: nothing to save.".into(),
            ))
        }
        Err(e) => return Err(e),
    };
    from_daytona(&st.snapshot_hold, &files, sandbox_id).await
}

/// The files of a Daytona workspace's sandbox as an archive, leaving out what Documents leaves
/// out; links and special files are never followed or read. The files are read many a request
/// (the toolbox's bulk download, in batches: `snapshots/reading_batched.rs`).
pub async fn from_daytona(hold: &SnapshotHold, stored: &Stored, sandbox_id: &str) -> Result<Built, WorkspaceError> {
    let walk = |tx: mpsc::Sender<Listed>| async move {
        stored
            .walk(is_excluded, |e| {
                let tx = tx.clone();
                async move {
                    let Ok(p) = paths::normalise(&e.path) else { return Ok(()) };
                    let listed = if e.is_dir { Listed::Dir(p) } else { Listed::File(p, e.size) };
                    tx.send(listed).await.map_err(|_| reading::stopped())
                }
            })
            .await
    };
    let read_batch = |ps: Vec<WorkspacePath>| async move {
        let rels: Vec<&str> = ps.iter().map(|p| p.relative()).collect();
        let mut out = Vec::with_capacity(ps.len());
        for got in stored.read_many(&rels, READ_MAX).await? {
            out.push(match got {
                Ok(bytes) => Read::Bytes(bytes),
                Err(WorkspaceError::TooLarge(_)) => Read::TooLarge,
                Err(WorkspaceError::NotFound(_)) => Read::Gone,
                Err(e) => return Err(e),
            });
        }
        Ok(out)
    };
    reading_batched::build(hold, sandbox_id, BATCHES, walk, read_batch).await
}
