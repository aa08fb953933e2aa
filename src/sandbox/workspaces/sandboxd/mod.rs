//! The `sandboxd` backend: the workspace is a session on the connection's sandbox host, opened
//! on the run's first operation (DESIGN.md §7) and named by its session key, so every run of a
//! scope finds the same one. A session the host closed meanwhile is attached again; one whose files
//! are gone is reported lost, never silently replaced; a `run`-scoped one is purged at the end.

mod open;

use std::future::Future;

use futures_util::future::BoxFuture;

use super::backend::{within_read_max, Result, WorkspaceBackend};
use super::command::Command;
use super::error::WorkspaceError;
use super::model::{Entry, ExecResult, Resolved};
use super::paths::{self, WorkspacePath};
use crate::agents::runs::service as runs;
use crate::sandbox::client::{FileEntry, RunRequest, SandboxdClient, SandboxdError};
use crate::sandbox::connections::service as connections;
use crate::state::AppState;

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
    pub(in crate::sandbox::workspaces) fn new(st: &'a AppState, r: Resolved) -> Self {
        SandboxdBackend { st, r }
    }

    async fn client(&self) -> Result<SandboxdClient> {
        let conn =
            self.r.connection.as_ref().ok_or_else(|| WorkspaceError::Internal(anyhow::anyhow!("no connection")))?;
        connections::client_for(self.st, &self.r.org_id, conn).await.map_err(WorkspaceError::from)
    }

    /// Runs `op` on the open session; a session the host closed meanwhile (idle, restart) may
    /// still have its files, so it is attached again, once.
    async fn on_session<T, F, Fut>(&mut self, op: F) -> Result<T>
    where
        F: Fn(Session) -> Fut,
        Fut: Future<Output = std::result::Result<T, SandboxdError>>,
    {
        let session = self.ensure_open().await?;
        match op(session).await {
            Err(SandboxdError::NotFound { detail }) if detail.starts_with("No such session") => {
                runs::set_workspace_opened(self.st, &self.r.run.id, false).await?;
                self.st.resolve_cache.forget_workspace(&self.r.workspace.id);
                self.r.run.workspace_opened = false;
                let session = self.ensure_open().await?;
                Ok(op(session).await?)
            }
            other => Ok(other?),
        }
    }

    /// [`Self::on_session`] for a file operation, given the path as the host names it.
    async fn on_path<T, F, Fut>(&mut self, path: &WorkspacePath, op: F) -> Result<T>
    where
        F: Fn(Session, String) -> Fut,
        Fut: Future<Output = std::result::Result<T, SandboxdError>>,
    {
        let absolute = path.absolute();
        self.on_session(|s| op(s, absolute.clone())).await
    }
}

/// The host's entries, with paths relative to the workspace root.
fn entries(list: Vec<FileEntry>) -> Vec<Entry> {
    list.into_iter()
        .map(|e| {
            let rel = paths::normalise(&e.path).map(|p| p.relative().to_string()).unwrap_or(e.path);
            Entry { name: e.name, path: rel, is_dir: e.is_dir, size: e.size }
        })
        .collect()
}

fn run_request(command: &Command) -> RunRequest {
    let request = RunRequest::new(command.argv.clone()).timeout(command.timeout);
    command.env.iter().fold(request, |req, (k, v)| req.env(k.clone(), v.clone()))
}

impl WorkspaceBackend for SandboxdBackend<'_> {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        let read = self.on_path(path, |s, abs| async move { s.client.read_file(&s.id, &abs).await });
        Box::pin(async move { within_read_max(read.await?) })
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_path(path, move |s, abs| async move { s.client.write_file(&s.id, &abs, bytes).await }))
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        let list = self.on_path(path, |s, abs| async move { s.client.list(&s.id, &abs).await });
        Box::pin(async move { list.await.map(entries) })
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_path(path, |s, abs| async move { s.client.mkdir(&s.id, &abs).await }))
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_path(path, |s, abs| async move { s.client.remove(&s.id, &abs).await }))
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        let stat = self.on_path(path, |s, abs| async move { s.client.stat(&s.id, &abs).await });
        Box::pin(async move {
            let e = stat.await?;
            Ok(Entry { name: e.name, path: path.relative().to_string(), is_dir: e.is_dir, size: e.size })
        })
    }

    fn exec<'a>(&'a mut self, command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        Box::pin(async move {
            if !self.r.agent.shell_enabled {
                return Err(WorkspaceError::Refused(
                    "This agent's shell is switched off in its sandbox settings.".into(),
                ));
            }
            let request = &run_request(command);
            let o = self.on_session(|s| async move { s.client.run(&s.id, request).await }).await?;
            Ok(ExecResult {
                stdout: o.stdout,
                stderr: o.stderr,
                exit_code: o.exit_code,
                timed_out: o.timed_out,
                output_limited: o.output_limited,
            })
        })
    }

    /// Purges the session and its files; one already gone is fine, and a host that fails is
    /// logged: the run ends either way.
    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let Some(reference) = self.r.workspace.session_ref.clone() else { return Ok(()) };
            let client = self.client().await?;
            match client.delete_session(&reference, true).await {
                Ok(()) | Err(SandboxdError::NotFound { .. }) => {}
                Err(e) => {
                    tracing::warn!(error = %e, workspace_id = %self.r.workspace.id, "purging a finished run's session failed")
                }
            }
            Ok(())
        })
    }
}
