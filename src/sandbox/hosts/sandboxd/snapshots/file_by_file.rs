//! A sandboxd session's stored workspace read file by file into a snapshot's archive, through the
//! host's stored-workspace routes (`ls` per folder, `read_bytes` per file), which work for a
//! closed session and a finished run too; the reads and the archive are the shared reader's
//! (`snapshots/reading.rs`).

use std::collections::VecDeque;

use tokio::sync::mpsc;

use crate::documents::exclusions::is_excluded;
use crate::sandbox::hosts::sandboxd::client::{SandboxdClient, SandboxdError};
use crate::sandbox::snapshots::hold::SnapshotHold;
use crate::sandbox::snapshots::reading::{self, Built, Listed, Read};
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths::{self, WorkspacePath};

type Result<T> = std::result::Result<T, WorkspaceError>;

/// The stored workspace of session `session_id` as an archive, read file by file through the
/// stored-workspace routes (a closed session's, a finished run's; a live one's is packed by its
/// sandbox, `packed.rs`), leaving out what Documents leaves out (the agent's skills, our own
/// folders, toolchain folders at any depth). Symbolic links are not listed by the host, so never
/// followed.
pub async fn file_by_file(hold: &SnapshotHold, client: &SandboxdClient, session_id: &str) -> Result<Built> {
    let walk = |tx| async move { walk_sandboxd(client, session_id, tx).await };
    let read = |p: WorkspacePath| async move {
        match client.workspace_read_bytes(session_id, p.relative()).await {
            Ok(bytes) => Ok(Read::Bytes(bytes)),
            Err(SandboxdError::Invalid { detail }) if detail.contains("read limit") => Ok(Read::TooLarge),
            Err(SandboxdError::NotFound { .. }) => Ok(Read::Gone),
            Err(e) => Err(WorkspaceError::Host(e.into())),
        }
    };
    reading::build(hold, session_id, walk, read).await
}

/// Breadth-first over the folders, one listing at a time (the reads go on meanwhile); excluded
/// folders are never opened.
async fn walk_sandboxd(client: &SandboxdClient, session_id: &str, tx: mpsc::Sender<Listed>) -> Result<()> {
    let mut folders = VecDeque::from([String::from(".")]);
    let mut is_root = true;
    while let Some(folder) = folders.pop_front() {
        let entries = match client.workspace_ls(session_id, &folder).await {
            Ok(e) => e,
            Err(SandboxdError::NotFound { detail }) if is_root && detail.starts_with("No workspace") => {
                return Err(WorkspaceError::Lost)
            }
            // A folder removed while we walked: nothing to keep of it.
            Err(SandboxdError::NotFound { .. }) if !is_root => continue,
            Err(e) => return Err(WorkspaceError::Host(e.into())),
        };
        is_root = false;
        for e in entries {
            let rel = e.path.trim_start_matches("./").trim_start_matches('/').to_string();
            if rel.is_empty() || is_excluded(&rel) {
                continue;
            }
            let Ok(path) = paths::normalise(&rel) else { continue };
            let listed = if e.is_dir {
                folders.push_back(rel);
                Listed::Dir(path)
            } else {
                Listed::File(path, e.size)
            };
            tx.send(listed).await.map_err(|_| reading::stopped())?;
        }
    }
    Ok(())
}
