//! Writing a snapshot into a workspace being opened (instead of the manifest's files), each entry
//! recorded like any other write, one at a time. The same for every container backend: each says
//! only how it makes a folder and writes a file ([`SnapshotWrites`]).

use futures_util::future::BoxFuture;

use super::backend::Result;
use super::error::WorkspaceError;
use super::model::Resolved;
use super::recorded::{bytes_detail, record, RowKeys};
use crate::sandbox::recording::Operation;
use crate::sandbox::snapshots::archive::Item;
use crate::sandbox::snapshots::model::Snapshot;
use crate::sandbox::snapshots::restore;
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

/// How a backend's open workspace (a sandboxd session, a Daytona sandbox's toolbox) makes a
/// folder and writes a file.
pub(super) trait SnapshotWrites {
    fn mkdir<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    fn write<'a>(&self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>>;
}

/// Writes the snapshot `s` into `to`, entry by entry, each recorded as a `mkdir` or a `write` of
/// the run `r`. The first entry that fails stops it.
pub(super) async fn write_snapshot(st: &AppState, r: &Resolved, to: &impl SnapshotWrites, s: &Snapshot) -> Result<()> {
    let keys = RowKeys::of(r);
    let mut rx = restore::entries(st, s).await?;
    while let Some(item) = rx.recv().await {
        let item = item.map_err(|e| WorkspaceError::Internal(anyhow::Error::from(e).context("reading a snapshot")))?;
        match item {
            Item::Dir(p) => {
                record(&st.recorder, &keys, Operation::Mkdir, p.display(), to.mkdir(&p), |_| (true, String::new()))
                    .await?;
            }
            Item::File(p, bytes) => {
                let written = to.write(&p, &bytes);
                record(&st.recorder, &keys, Operation::Write, p.display(), written, |_| bytes_detail(bytes.len()))
                    .await?;
            }
        }
    }
    Ok(())
}
