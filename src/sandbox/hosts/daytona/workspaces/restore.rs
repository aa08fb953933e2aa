//! A Daytona sandbox being opened from a snapshot: its folders and files are made through the
//! sandbox's toolbox, below the workspace root ([`crate::sandbox::workspaces::restoring`] writes and records them).
//! A checked archive goes in bulk uploads of many files each (`bulk.rs`).

use futures_util::future::BoxFuture;

use super::root::Rooted;
use super::{bulk, files};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::restoring::{SnapshotWrites, Unpacked};
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

    /// Many files a request (the toolbox's bulk upload): `bulk::unpack`.
    fn unpack<'a>(&'a self, archive: &'a std::path::Path) -> BoxFuture<'a, Result<Unpacked>> {
        Box::pin(bulk::unpack(self, archive))
    }
}
