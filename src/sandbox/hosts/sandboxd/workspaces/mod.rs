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

use std::future::Future;

use futures_util::future::BoxFuture;

use crate::agents::runs::service as runs;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::error::HostError;
use crate::sandbox::hosts::sandboxd::client::{FileErrorKind, RunRequest, SandboxdClient, SandboxdError};
use crate::sandbox::workspaces::backend::{Result, WorkspaceBackend};
use crate::sandbox::workspaces::command::Command;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::manifest;
use crate::sandbox::workspaces::model::{Entry, ExecResult, Resolved};
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

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
struct Session {
    client: SandboxdClient,
    id: String,
}

impl<'a> SandboxdBackend<'a> {
    pub(crate) fn new(st: &'a AppState, r: Resolved) -> Self {
        SandboxdBackend { st, r }
    }

    async fn client(&self) -> Result<SandboxdClient> {
        let conn =
            self.r.connection.as_ref().ok_or_else(|| WorkspaceError::Internal(anyhow::anyhow!("no connection")))?;
        connections::client_for(self.st, &self.r.org_id, conn).await.map_err(WorkspaceError::from)
    }

    /// Runs `op` on the open session; a session the host closed meanwhile (idle, restart) may
    /// still have its files, so it is attached again, once. A sandbox the host reports gone
    /// (410) took its files with it: the workspace is lost.
    async fn on_session<T, F, Fut>(&mut self, op: F) -> Result<T>
    where
        F: Fn(Session) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let session = self.ensure_open().await?;
        let answer = match op(session).await {
            Err(WorkspaceError::Host(HostError::NotFound { detail })) if detail.starts_with("No such session") => {
                self.not_opened_for_this_run().await?;
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
    }

    /// The next operation of this run opens (attaches to) the session again.
    async fn not_opened_for_this_run(&mut self) -> Result<()> {
        runs::set_workspace_opened(self.st, &self.r.run.id, false).await?;
        self.st.resolve_cache.forget_workspace(&self.r.workspace.id);
        self.r.run.workspace_opened = false;
        Ok(())
    }
}

/// The command's `/run` request: its own environment over the manifest's (`base`).
fn run_request(command: &Command, base: std::collections::BTreeMap<String, String>) -> RunRequest {
    let request = RunRequest::new(command.host_argv()).timeout(command.timeout);
    base.into_iter().chain(command.env.clone()).fold(request, |req, (k, v)| req.env(k, v))
}

/// A clone's longest wait.
const CLONE_TIMEOUT: std::time::Duration = manifest::git::TIMEOUT;

impl manifest::Target for Session {
    fn mkdir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::mkdir(self.clone(), path))
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::write(self.clone(), path, bytes))
    }
    fn clone_repo<'a>(&'a self, argv: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>> {
        Box::pin(async move {
            let o = self.client.run(&self.id, &RunRequest::new(argv.to_vec()).timeout(CLONE_TIMEOUT)).await?;
            if o.exit_code == Some(0) {
                return Ok(Ok(()));
            }
            let line = o.stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no reason given");
            let why = if o.timed_out { "it timed out".to_string() } else { line.chars().take(300).collect() };
            Ok(Err(format!("exit {}: {why}", o.exit_code.unwrap_or(-1))))
        })
    }
}

impl WorkspaceBackend for SandboxdBackend<'_> {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(self.on_session(move |s| files::read(s, path)))
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_session(move |s| files::write(s, path, bytes)))
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        Box::pin(self.on_session(move |s| files::ls(s, path)))
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_session(move |s| files::mkdir(s, path)))
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_session(move |s| files::remove(s, path)))
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        Box::pin(self.on_session(move |s| files::stat(s, path)))
    }

    fn exec<'a>(&'a mut self, command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        Box::pin(async move {
            if !self.r.agent.shell_enabled {
                return Err(WorkspaceError::Refused(
                    "This agent's shell is switched off in its sandbox settings.".into(),
                ));
            }
            let request = &run_request(command, manifest::env::resolve(self.st, &self.r).await?);
            let o = self.on_session(|s| async move { Ok(s.client.run(&s.id, request).await?) }).await?;
            Ok(command.result(o.stdout, o.stderr, o.exit_code, o.timed_out, o.output_limited))
        })
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
