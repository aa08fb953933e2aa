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
    /// still have its files, so it is attached again, once. A sandbox the host reports gone
    /// (410) took its files with it: the workspace is lost.
    async fn on_session<T, F, Fut>(&mut self, op: F) -> Result<T>
    where
        F: Fn(Session) -> Fut,
        Fut: Future<Output = std::result::Result<T, SandboxdError>>,
    {
        let session = self.ensure_open().await?;
        let answer = match op(session).await {
            Err(SandboxdError::NotFound { detail }) if detail.starts_with("No such session") => {
                self.not_opened_for_this_run().await?;
                let session = self.ensure_open().await?;
                op(session).await
            }
            other => other,
        };
        match answer {
            Err(SandboxdError::Gone { .. }) => {
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
            other => Ok(other?),
        }
    }

    /// The next operation of this run opens (attaches to) the session again.
    async fn not_opened_for_this_run(&mut self) -> Result<()> {
        runs::set_workspace_opened(self.st, &self.r.run.id, false).await?;
        self.st.resolve_cache.forget_workspace(&self.r.workspace.id);
        self.r.run.workspace_opened = false;
        Ok(())
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

/// Lists `$1` one entry a record (`<kind>/<size>/<name>` then NUL; kind `d`, `f` or `l` for a
/// link), exiting 2 when it does not exist and 3 when it is not a folder.
const LS_SCRIPT: &str = r#"[ -e "$1" ] || [ -L "$1" ] || exit 2; [ -d "$1" ] || exit 3; cd -- "$1" || exit 2
for f in * .[!.]* ..?*; do
  [ -e "$f" ] || [ -L "$f" ] || continue
  if [ -L "$f" ]; then t=l; s=; elif [ -d "$f" ]; then t=d; s=; else t=f; s=$(wc -c < "$f" | tr -d ' '); fi
  printf '%s/%s/%s\0' "$t" "$s" "$f"
done"#;

impl SandboxdBackend<'_> {
    async fn ls_in_shell(&mut self, path: &WorkspacePath) -> Result<Vec<Entry>> {
        let argv = ["/bin/sh", "-c", LS_SCRIPT, "sh"].into_iter().map(str::to_string).chain([path.absolute()]);
        let request = &RunRequest::new(argv.collect::<Vec<_>>()).timeout(SHELL_FALLBACK_TIMEOUT);
        let o = self.on_session(|s| async move { s.client.run(&s.id, request).await }).await?;
        match o.exit_code {
            Some(0) => Ok(shell_entries(&o.stdout, path)),
            Some(2) => Err(WorkspaceError::NotFound("No such file or folder.".into())),
            Some(3) => Err(WorkspaceError::NotADirectory("A part of this path is a file, not a folder.".into())),
            _ => Err(WorkspaceError::Host(SandboxdError::Status {
                status: 500,
                detail: "listing the folder through the sandbox failed".into(),
            })),
        }
    }
}

/// How long a file operation done through the sandbox's shell may take.
const SHELL_FALLBACK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// [`LS_SCRIPT`]'s records as entries, sorted by name.
fn shell_entries(out: &str, dir: &WorkspacePath) -> Vec<Entry> {
    let mut list: Vec<Entry> = out
        .split('\0')
        .filter_map(|record| {
            let mut parts = record.splitn(3, '/');
            let (kind, size, name) = (parts.next()?, parts.next()?, parts.next()?);
            if name.is_empty() {
                return None;
            }
            let path = if dir.is_root() { name.to_string() } else { format!("{}/{name}", dir.relative()) };
            Some(Entry {
                name: name.to_string(),
                path,
                is_dir: kind == "d",
                size: if kind == "f" { size.parse().ok() } else { None },
                is_link: kind == "l",
            })
        })
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

/// The host's entries, with paths relative to the workspace root.
fn entries(list: Vec<FileEntry>) -> Vec<Entry> {
    list.into_iter()
        .map(|e| {
            let rel = paths::normalise(&e.path).map(|p| p.relative().to_string()).unwrap_or(e.path);
            Entry { name: e.name, path: rel, is_dir: e.is_dir, size: e.size, is_link: false }
        })
        .collect()
}

fn run_request(command: &Command) -> RunRequest {
    let request = RunRequest::new(command.host_argv()).timeout(command.timeout);
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

    /// A folder the host hands back (a symbolic link in it, native files off) is listed through
    /// the sandbox's shell, as the client library does; links are marked, not followed.
    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        Box::pin(async move {
            match self.on_path(path, |s, abs| async move { s.client.list(&s.id, &abs).await }).await {
                Err(WorkspaceError::Host(SandboxdError::NotNative { .. })) => self.ls_in_shell(path).await,
                other => other.map(entries),
            }
        })
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
            Ok(Entry {
                name: e.name,
                path: path.relative().to_string(),
                is_dir: e.is_dir,
                size: e.size,
                is_link: false,
            })
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
            Ok(command.result(o.stdout, o.stderr, o.exit_code, o.timed_out, o.output_limited))
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
