//! Writing a snapshot into a workspace being opened (instead of the manifest's files), each entry
//! recorded like any other write. The same for every container backend: each says how it makes a
//! folder, writes a file and removes one, and may unpack a whole archive in one go
//! ([`HostFiles`]). The archive is checked whole against its manifest before anything is
//! written (`snapshots::restore`; sandboxd stages it in our own folder meanwhile); a checked
//! archive is unpacked in one go where the backend can (sandboxd: by the sandbox's own `tar`;
//! Daytona: in bulk uploads), else its entries are written `WRITES_IN_FLIGHT` at a time. A restore
//! that fails stops; in a new workspace (nothing was there before) what it wrote is removed again,
//! so a workspace is never left half-restored.

use std::collections::BTreeSet;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::backend::Result;
use super::host_files::{HostFiles, Unpacked};
use super::model::Resolved;
use super::recorded::{bytes_detail, record, RowKeys};
use crate::sandbox::recording::Operation;
use crate::sandbox::snapshots::archive::Item;
use crate::sandbox::snapshots::model::Snapshot;
use crate::sandbox::snapshots::restore;
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;

/// Writes the snapshot `s` into `to`, each entry recorded as a `mkdir` or a `write` of the run
/// `r`. The first entry that fails stops it; when `is_new_workspace`, the top-level folders and
/// files written are removed again (best effort: a host that is gone has nothing to remove, and
/// the workspace is not marked open, so the next open restores anew).
pub(crate) async fn write_snapshot(
    st: &AppState,
    r: &Resolved,
    to: &impl HostFiles,
    s: &Snapshot,
    is_new_workspace: bool,
) -> Result<()> {
    let keys = RowKeys::of(r);
    let file = restore::download(st, s).await?;
    // Checked while a kind that stages the archive (sandboxd) uploads it: unpacked only once it
    // matches its manifest.
    let (tx, checked) = oneshot::channel();
    let checking = async {
        let check = restore::check(&s.id, &file.0).await;
        let _ = tx.send(check.as_ref().is_ok_and(|c| c.checked));
        check
    };
    let (check, unpacked) = tokio::join!(checking, to.unpack_once_checked(&file.0, checked));
    let restore::Check { checked, entries } = check?;
    let fetched = restore::Fetched { file, checked, entries };
    if fetched.checked {
        match unpacked {
            Ok(Unpacked::Done) => {
                record_unpacked(st, &keys, &fetched.entries).await;
                return Ok(());
            }
            Ok(Unpacked::NoShell) => {}
            Err(e) => {
                if is_new_workspace {
                    remove_tops(to, tops_of(&fetched.entries)).await;
                }
                return Err(e);
            }
        }
    }
    let rx = fetched.into_entries();
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
            remove_tops(to, written.into_inner().unwrap_or_else(|p| p.into_inner())).await;
        }
        return Err(e);
    }
    Ok(())
}

/// Removes what a failed restore wrote at the top of a new workspace (best effort: a host that is
/// gone has nothing to remove, and the workspace is not marked open, so the next open restores
/// anew).
async fn remove_tops(to: &impl HostFiles, tops: BTreeSet<String>) {
    for top in tops {
        let Ok(p) = crate::vocabulary::paths::normalise(&top) else { continue };
        if let Err(gone) = to.remove(&p).await {
            tracing::warn!(error = %gone, path = %p.display(), "a failed restore's file could not be removed");
        }
    }
}

/// The top-level names of an archive's entries.
fn tops_of(entries: &[(String, Option<u64>)]) -> BTreeSet<String> {
    let mut tops = BTreeSet::new();
    for (path, _) in entries {
        if let Some(top) = path.split('/').next() {
            tops.insert(top.to_string());
        }
    }
    tops
}

/// An archive unpacked in one go is recorded as its entries would have been written one by one
/// (a `mkdir` a folder, a `write` a file, with its size), so the log reads the same whichever way
/// the files arrived; 64 rows at once, so they commit in batches.
async fn record_unpacked(st: &AppState, keys: &RowKeys, entries: &[(String, Option<u64>)]) {
    let mut rows = Vec::new();
    for (path, size) in entries {
        let Ok(p) = crate::vocabulary::paths::normalise(path) else { continue };
        rows.push(record_one(st, keys, p, *size));
        if rows.len() == 64 {
            futures_util::future::join_all(std::mem::take(&mut rows)).await;
        }
    }
    futures_util::future::join_all(rows).await;
}

async fn record_one(st: &AppState, keys: &RowKeys, p: WorkspacePath, size: Option<u64>) {
    let done: BoxFuture<'_, Result<()>> = Box::pin(async { Ok(()) });
    let _ = match size {
        None => record(&st.recorder, keys, Operation::Mkdir, p.display(), done, |_| (true, String::new())).await,
        Some(n) => record(&st.recorder, keys, Operation::Write, p.display(), done, |_| bytes_detail(n as usize)).await,
    };
}
