//! One file operation on an open session: the host's native route first, and the sandbox's shell
//! ([`super::shell`]) for an operation the host hands back (409: a symbolic link on the path or
//! in the listed folder, native files off, a file over its native limit), as the client library
//! does. Either way it is one operation, with the same answers and the same errors.

use std::collections::BTreeMap;
use std::future::Future;

use futures_util::future::BoxFuture;

use super::{restore, shell, Session};
use crate::sandbox::hosts::sandboxd::client::{FileEntry, RunRequest, SandboxdError};
use crate::sandbox::workspaces::backend::{within_read_max, Result};
use crate::sandbox::workspaces::command::Command;
use crate::sandbox::workspaces::host_files::HostFiles;
use crate::sandbox::workspaces::manifest;
use crate::sandbox::workspaces::model::{Entry, ExecResult};
use crate::sandbox::workspaces::Unpacked;
use crate::vocabulary::paths::{self, WorkspacePath};

/// A clone's longest wait.
const CLONE_TIMEOUT: std::time::Duration = manifest::git::TIMEOUT;

/// `native`, else (the host handed `op` back) `shell`, which is run only then.
async fn native_else_shell<T>(
    op: &str,
    path: &WorkspacePath,
    native: impl Future<Output = std::result::Result<T, SandboxdError>>,
    shell: impl Future<Output = Result<T>>,
) -> Result<T> {
    match native.await {
        Err(SandboxdError::NotNative { detail }) => {
            tracing::debug!(op, path = %path.display(), reason = detail, "the host handed a file operation back to the shell");
            shell.await
        }
        other => Ok(other?),
    }
}

impl HostFiles for Session {
    fn read<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        let s = self.clone();
        Box::pin(async move {
            within_read_max(
                native_else_shell("read", path, s.client.read_file(&s.id, &path.absolute()), shell::read(&s, path))
                    .await?,
            )
        })
    }

    fn write<'a>(&self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        let s = self.clone();
        Box::pin(async move {
            native_else_shell(
                "write",
                path,
                s.client.write_file(&s.id, &path.absolute(), bytes),
                shell::write(&s, path, bytes),
            )
            .await
        })
    }

    fn stat<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        let s = self.clone();
        Box::pin(async move {
            let native = async {
                let e = s.client.stat(&s.id, &path.absolute()).await?;
                Ok(Entry {
                    name: e.name,
                    path: path.relative().to_string(),
                    is_dir: e.is_dir,
                    size: e.size,
                    is_link: false,
                })
            };
            native_else_shell("stat", path, native, shell::stat(&s, path)).await
        })
    }

    /// A folder holding a symbolic link (every `.venv/bin`) is listed through the shell, the link
    /// marked, not followed.
    fn ls<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        let s = self.clone();
        Box::pin(async move {
            let native = async { Ok(entries(s.client.list(&s.id, &path.absolute()).await?)) };
            native_else_shell("ls", path, native, shell::ls(&s, path)).await
        })
    }

    fn mkdir<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        let s = self.clone();
        Box::pin(async move {
            native_else_shell("mkdir", path, s.client.mkdir(&s.id, &path.absolute()), shell::mkdir(&s, path)).await
        })
    }

    fn remove<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        let s = self.clone();
        Box::pin(async move {
            native_else_shell("remove", path, s.client.remove(&s.id, &path.absolute()), shell::remove(&s, path)).await
        })
    }

    fn exec<'a>(&self, command: &'a Command, env: BTreeMap<String, String>) -> BoxFuture<'a, Result<ExecResult>> {
        let s = self.clone();
        Box::pin(async move {
            let request = RunRequest::new(command.host_argv()).timeout(command.timeout);
            let request = env.into_iter().fold(request, |req, (k, v)| req.env(k, v));
            let o = s.client.run(&s.id, &request).await?;
            Ok(command.result(o.stdout, o.stderr, o.exit_code, o.timed_out, o.output_limited))
        })
    }

    fn clone_repo<'a>(&self, argv: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>> {
        let s = self.clone();
        Box::pin(async move {
            let o = s.client.run(&s.id, &RunRequest::new(argv.to_vec()).timeout(CLONE_TIMEOUT)).await?;
            if o.exit_code == Some(0) {
                return Ok(Ok(()));
            }
            let line = o.stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no reason given");
            let why = if o.timed_out { "it timed out".to_string() } else { line.chars().take(300).collect() };
            Ok(Err(format!("exit {}: {why}", o.exit_code.unwrap_or(-1))))
        })
    }

    /// The sandbox unpacks it with its own `tar` ([`restore::unpack`]).
    fn unpack<'a>(&'a self, archive: &'a std::path::Path) -> BoxFuture<'a, Result<Unpacked>> {
        Box::pin(restore::unpack(&self.client, &self.id, archive, std::future::ready(true)))
    }

    /// Staged while it is checked, unpacked once it matches ([`restore::unpack`]).
    fn unpack_once_checked<'a>(
        &'a self,
        archive: &'a std::path::Path,
        checked: tokio::sync::oneshot::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Unpacked>> {
        Box::pin(restore::unpack(&self.client, &self.id, archive, async { checked.await.unwrap_or(false) }))
    }
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
