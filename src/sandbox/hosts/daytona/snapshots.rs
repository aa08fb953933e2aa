//! A Daytona workspace's snapshot (docs/daytona.md): its sandbox's files, the sandbox started if
//! Daytona stopped it, read in batches into the archive (`snapshots/reading_batched.rs`).

use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::daytona::workspaces::stored::{self, Start};
use crate::sandbox::snapshots::reading::Built;
use crate::sandbox::snapshots::reading_batched;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;

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
    reading_batched::from_daytona(&st.snapshot_hold, &files, sandbox_id).await
}
