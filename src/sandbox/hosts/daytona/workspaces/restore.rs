//! A Daytona sandbox being opened from a snapshot: its folders and files are made through the
//! sandbox's toolbox, below the workspace root ([`crate::sandbox::workspaces::restoring`] writes and records them).

use futures_util::future::BoxFuture;

use super::files;
use super::root::Rooted;
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::restoring::SnapshotWrites;
use crate::vocabulary::paths::WorkspacePath;

impl SnapshotWrites for Rooted {
    fn mkdir<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::mkdir(self.clone(), path))
    }

    fn write<'a>(&self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::write(self.clone(), path, bytes))
    }

    fn remove<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::remove(self.clone(), path))
    }
}
