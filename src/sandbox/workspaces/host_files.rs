//! The files of an open container workspace (a sandboxd session, a Daytona sandbox's toolbox), as
//! every host kind gives them: what the run's operations ([`super::on_host`]), a snapshot's
//! restore ([`super::restoring`]) and a manifest ([`super::manifest`]) do with them is written
//! once, above the kinds. Each kind implements this on its handle of the open workspace.

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::backend::Result;
use super::command::Command;
use super::manifest;
use super::model::{Entry, ExecResult};
use crate::vocabulary::paths::WorkspacePath;

/// One operation on the open workspace. The handle is cheap to clone (a client and an id): each
/// operation takes its own copy, so none borrows the handle.
pub trait HostFiles: Clone + Send + Sync + 'static {
    fn read<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>>;
    /// Writes a file, creating its parent folders.
    fn write<'a>(&self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>>;
    fn ls<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>>;
    fn mkdir<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    fn remove<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    fn stat<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>>;
    /// Runs a checked command with `env` (the manifest's environment under the command's own).
    fn exec<'a>(
        &self,
        command: &'a Command,
        env: std::collections::BTreeMap<String, String>,
    ) -> BoxFuture<'a, Result<ExecResult>>;

    /// Clones a repository in the sandbox (a runtime with network): `Err` with git's words.
    fn clone_repo<'a>(&self, argv: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>>;

    /// How a command in the sandbox names `path` ([`manifest::Target::command_path`]).
    fn command_path(&self, path: &WorkspacePath) -> String {
        path.absolute()
    }

    /// Unpacks a checked snapshot archive (plain folders and files only) in one go, where the
    /// kind can; [`Unpacked::NoShell`] (the default): the entries are written one by one.
    fn unpack<'a>(&'a self, archive: &'a std::path::Path) -> BoxFuture<'a, Result<Unpacked>> {
        let _ = archive;
        Box::pin(async { Ok(Unpacked::NoShell) })
    }

    /// [`HostFiles::unpack`], started while the archive is still being checked against its
    /// manifest: `checked` says, once done, whether it matched. A kind that stages the archive
    /// before unpacking it (sandboxd) stages it meanwhile and unpacks only on a yes; the default
    /// waits for the check, then unpacks. A no is [`Unpacked::NoShell`], nothing written.
    fn unpack_once_checked<'a>(
        &'a self,
        archive: &'a std::path::Path,
        checked: oneshot::Receiver<bool>,
    ) -> BoxFuture<'a, Result<Unpacked>> {
        Box::pin(async move {
            if !checked.await.unwrap_or(false) {
                return Ok(Unpacked::NoShell);
            }
            self.unpack(archive).await
        })
    }
}

impl<T: HostFiles> manifest::Target for T {
    fn mkdir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        HostFiles::mkdir(self, path)
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        HostFiles::write(self, path, bytes)
    }
    fn clone_repo<'a>(&'a self, argv: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>> {
        HostFiles::clone_repo(self, argv)
    }
    fn command_path(&self, path: &WorkspacePath) -> String {
        HostFiles::command_path(self, path)
    }
}

/// What unpacking in one go did.
pub enum Unpacked {
    Done,
    /// The backend cannot (no shell, no `tar`, native writes handed back): nothing was written.
    NoShell,
}
