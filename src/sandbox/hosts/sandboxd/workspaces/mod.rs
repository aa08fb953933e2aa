//! The `sandboxd` backend: the workspace is a session on the connection's sandbox host, opened
//! on the run's first operation (docs/design.md §7) and named by its session key, so every run of a
//! scope finds the same one. A session the host closed meanwhile is attached again; one whose files
//! are gone is reported lost, never silently replaced; a `run`-scoped one is purged at the end.

mod files;
mod open;
/// A live session's workspace packed by its sandbox for a snapshot (the snapshot's fast path).
pub mod pack;
/// A checked snapshot archive unpacked by the sandbox itself (the restore's fast path).
pub mod restore;
mod scripts;
mod shell;

use futures_util::future::BoxFuture;

use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::error::HostError;
use crate::sandbox::hosts::sandboxd::client::{FileErrorKind, SandboxdClient, SandboxdError};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::sandbox::workspaces::on_host::{HostWorkspace, OnOpen};
use crate::sandbox::workspaces::opening;
use crate::state::AppState;

/// sandboxd's failure in the workspace's words: a native file route's path errors are the
/// workspace's own (as Daytona's are in `daytona/files.rs`), the rest the host-neutral error.
impl From<SandboxdError> for WorkspaceError {
    fn from(e: SandboxdError) -> Self {
        match e {
            SandboxdError::File { kind: FileErrorKind::NotFound, .. } => {
                WorkspaceError::NotFound("No such file or folder.".into())
            }
            SandboxdError::File { kind: FileErrorKind::IsADirectory, .. } => {
                WorkspaceError::IsADirectory("This is a folder.".into())
            }
            SandboxdError::File { kind: FileErrorKind::NotADirectory, .. } => {
                WorkspaceError::NotADirectory("A part of this path is a file, not a folder.".into())
            }
            SandboxdError::File { kind: FileErrorKind::AlreadyExists, .. } => {
                WorkspaceError::AlreadyExists("Something else is already at this path.".into())
            }
            other => WorkspaceError::from(HostError::from(other)),
        }
    }
}

pub struct SandboxdBackend<'a> {
    st: &'a AppState,
    r: Resolved,
}

/// An open session: where operations go.
#[derive(Clone)]
pub struct Session {
    client: SandboxdClient,
    id: String,
}

impl<'a> SandboxdBackend<'a> {
    pub(crate) fn new(st: &'a AppState, r: Resolved) -> Self {
        SandboxdBackend { st, r }
    }

    async fn client(&self) -> Result<SandboxdClient> {
        let conn = opening::connection(&self.r)?;
        connections::client_for(self.st, &self.r.org_id, conn).await.map_err(WorkspaceError::from)
    }
}

impl HostWorkspace for SandboxdBackend<'_> {
    type Open = Session;

    /// Runs `op` on the open session; a session the host closed meanwhile (idle, restart) may
    /// still have its files, so it is attached again, once. A sandbox the host reports gone
    /// (410) took its files with it: the workspace is lost.
    fn on_open<'a, T: Send + 'a>(&'a mut self, op: OnOpen<'a, Session, T>) -> BoxFuture<'a, Result<T>> {
        Box::pin(async move {
            let session = self.ensure_open().await?;
            let answer = match op(session).await {
                Err(WorkspaceError::Host(HostError::NotFound { detail })) if detail.starts_with("No such session") => {
                    opening::not_opened_for_this_run(self.st, &mut self.r).await?;
                    let session = self.ensure_open().await?;
                    op(session).await
                }
                other => other,
            };
            match answer {
                // A 410 from the host (`From<SandboxdError>`).
                Err(WorkspaceError::Lost) => {
                    let dead = self.r.workspace.session_ref.clone();
                    self.mark_lost().await?;
                    // Close the dead session, so the run that starts fresh gets a new one by name.
                    if let Some(dead) = dead {
                        if let Err(e) = self.client().await?.delete_session(&dead, false).await {
                            tracing::warn!(error = %e, workspace_id = %self.r.workspace.id, "closing a lost session failed");
                        }
                    }
                    Err(WorkspaceError::Lost)
                }
                other => other,
            }
        })
    }

    fn run(&self) -> (&AppState, &Resolved) {
        (self.st, &self.r)
    }

    /// Purges the session and its files; one already gone is fine. A host or key that fails is
    /// the error (the run ends either way; the caller leaves a tombstone for the sweep).
    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let Some(reference) = self.r.workspace.session_ref.clone() else { return Ok(()) };
            let client = self.client().await?;
            match client.delete_session(&reference, true).await {
                Ok(()) | Err(SandboxdError::NotFound { .. }) => Ok(()),
                Err(e) => Err(WorkspaceError::Host(e.into())),
            }
        })
    }
}
