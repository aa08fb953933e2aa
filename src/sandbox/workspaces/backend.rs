//! The one interface every workspace backend implements (docs/design.md §1): [`crate::sandbox::hosts::state::workspaces`] (a
//! document in our database), [`crate::sandbox::hosts::sandboxd::workspaces`] (a session on a sandbox host), later Daytona.
//! The service reaches a backend only through [`super::recorded::Recorded`], so no operation can
//! skip the record.

use futures_util::future::BoxFuture;

use super::command::Command;
use super::error::WorkspaceError;
use super::model::{Entry, ExecResult};
use crate::vocabulary::paths::WorkspacePath;

pub type Result<T> = std::result::Result<T, WorkspaceError>;

/// The most a read returns.
pub const READ_MAX: usize = 8 * 1024 * 1024;
/// The most one file write takes (the request body of `PUT …/workspace/files`): the pinned
/// sandboxd's default native limit (`max_read_bytes`, 8 MiB), for every backend alike.
pub const WRITE_MAX: usize = 8 * 1024 * 1024;

/// The files (and, where the backend has one, the shell) of one run's workspace. Paths arrive
/// normalised and confined to the workspace; a command arrives checked.
pub trait WorkspaceBackend: Send {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>>;
    /// Writes a file, creating its parent folders.
    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>>;
    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>>;
    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    /// A question, not an operation: the recording wrapper lets it pass unrecorded.
    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>>;
    fn exec<'a>(&'a mut self, command: &'a Command) -> BoxFuture<'a, Result<ExecResult>>;
    /// The run a `run`-scoped workspace belongs to has ended: drop what the backend keeps of it.
    fn finish(&mut self) -> BoxFuture<'_, Result<()>>;
}

/// A read's bytes, or the refusal of a file over [`READ_MAX`].
pub fn within_read_max(bytes: Vec<u8>) -> Result<Vec<u8>> {
    if bytes.len() > READ_MAX {
        Err(WorkspaceError::TooLarge(format!("The file is larger than {} MiB.", READ_MAX / 1024 / 1024)))
    } else {
        Ok(bytes)
    }
}
