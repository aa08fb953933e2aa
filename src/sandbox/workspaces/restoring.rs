//! Writing a snapshot into a workspace being opened (instead of the manifest's files), each entry
//! recorded like any other write. The same for every container backend: each says only how it
//! makes a folder, writes a file and removes one ([`SnapshotWrites`]). The archive is checked
//! whole against its manifest before anything is written (`snapshots::restore`), then
//! `WRITES_IN_FLIGHT` entries are written at once. A write that fails stops the restore; in a
//! new workspace (nothing was there before) what was written is removed again, so a workspace is
//! never left half-restored.

use std::collections::BTreeSet;
use std::sync::Mutex;

use futures_util::future::BoxFuture;

use super::backend::Result;
use super::model::Resolved;
use super::recorded::{bytes_detail, record, RowKeys};
use crate::sandbox::recording::Operation;
use crate::sandbox::snapshots::archive::Item;
use crate::sandbox::snapshots::model::Snapshot;
use crate::sandbox::snapshots::restore;
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

/// How a backend's open workspace (a sandboxd session, a Daytona sandbox's toolbox) makes a
/// folder, writes a file and removes what a failed restore wrote.
pub(super) trait SnapshotWrites: Sync {
    fn mkdir<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
    fn write<'a>(&self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>>;
    fn remove<'a>(&self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>>;
}

/// Writes the snapshot `s` into `to`, each entry recorded as a `mkdir` or a `write` of the run
/// `r`. The first entry that fails stops it; when `is_new_workspace`, the top-level folders and
/// files written are removed again (best effort: a host that is gone has nothing to remove, and
/// the workspace is not marked open, so the next open restores anew).
pub(super) async fn write_snapshot(
    st: &AppState,
    r: &Resolved,
    to: &impl SnapshotWrites,
    s: &Snapshot,
    is_new_workspace: bool,
) -> Result<()> {
    let keys = RowKeys::of(r);
    let rx = restore::entries(st, s).await?;
    let written: Mutex<BTreeSet<String>> = Mutex::default();
    let outcome = restore::write_entries(rx, |item| {
        let (keys, written) = (&keys, &written);
        async move {
            let (Item::Dir(path) | Item::File(path, _)) = &item;
            if let Some(top) = path.relative().split('/').next() {
                written.lock().unwrap_or_else(|p| p.into_inner()).insert(top.to_string());
            }
            match &item {
                Item::Dir(p) => {
                    record(&st.recorder, keys, Operation::Mkdir, p.display(), to.mkdir(p), |_| (true, String::new()))
                        .await
                }
                Item::File(p, bytes) => {
                    let n = bytes.len();
                    record(&st.recorder, keys, Operation::Write, p.display(), to.write(p, bytes), |_| bytes_detail(n))
                        .await
                }
            }
        }
    })
    .await;
    if let Err(e) = outcome {
        if is_new_workspace {
            let tops = written.into_inner().unwrap_or_else(|p| p.into_inner());
            for top in tops {
                let Ok(p) = crate::vocabulary::paths::normalise(&top) else { continue };
                if let Err(gone) = to.remove(&p).await {
                    tracing::warn!(error = %gone, path = %p.display(), "a failed restore's file could not be removed");
                }
            }
        }
        return Err(e);
    }
    Ok(())
}
