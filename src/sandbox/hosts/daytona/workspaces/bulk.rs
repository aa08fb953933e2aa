//! Many files a toolbox request (issue 50): a snapshot reads a Daytona workspace's files with
//! `POST /files/bulk-download` ([`Stored::read_many`]) and a restore writes a checked archive with
//! `POST /files/bulk-upload` ([`unpack`]), each request at most [`BULK_FILES`] files and
//! [`BULK_BYTES`] bytes, [`BULK_IN_FLIGHT`] at once, within the snapshot's bytes in flight. A
//! daemon without the bulk download (404) is read file by file, as before.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Mutex;

use futures_util::stream::{self, StreamExt, TryStreamExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::files::file_error;
use super::root::Rooted;
use super::stored::Stored;
use crate::sandbox::hosts::daytona::client::{DaytonaError, Fetched, BULK_BYTES, BULK_FILES, BULK_IN_FLIGHT};
use crate::sandbox::snapshots::archive::{self, Budget, Budgeted, Item, BYTES_IN_FLIGHT};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::Unpacked;
use crate::validate::FieldErrors;
use crate::vocabulary::paths::WorkspacePath;

/// Files read one by one at once, on a daemon without the bulk download.
const SINGLE_READS: usize = 6;
/// Folders made at once.
const FOLDERS_IN_FLIGHT: usize = 6;

impl Stored {
    /// The bytes of each file of `rels` (relative to the workspace root), in their order, in one
    /// bulk download: one over `max` is [`WorkspaceError::TooLarge`], one removed meanwhile
    /// [`WorkspaceError::NotFound`], one the daemon could not read its error. The request's own
    /// failure is the error.
    pub async fn read_many(&self, rels: &[&str], max: usize) -> Result<Vec<Result<Vec<u8>>>> {
        if !self.no_bulk.load(Ordering::Relaxed) {
            let paths: Vec<String> = rels.iter().map(|r| self.tb.at(r)).collect();
            match self.tb.toolbox().download_many(&paths, max).await {
                Ok(got) => return Ok(got.into_iter().map(one).collect()),
                Err(DaytonaError::NotFound { .. }) => {
                    tracing::info!(target: "daytona", "a toolbox without the bulk download: files are read one by one");
                    self.no_bulk.store(true, Ordering::Relaxed);
                }
                Err(e) => return Err(super::files::host_error(e)),
            }
        }
        let reads: Vec<_> = rels.iter().map(|r| self.read(r, max)).collect();
        Ok(stream::iter(reads).buffered(SINGLE_READS).collect().await)
    }
}

impl Stored {
    /// Writes the checked archive at `archive` into the workspace as a restore does ([`unpack`]):
    /// what the snapshots bench times with no run around it.
    pub async fn unpack(&self, archive: &std::path::Path) -> Result<Unpacked> {
        unpack(&self.tb, archive).await
    }
}

fn one(f: Fetched) -> Result<Vec<u8>> {
    match f {
        Fetched::Bytes(b) => Ok(b),
        Fetched::Gone => Err(WorkspaceError::NotFound("No such file or folder.".into())),
        Fetched::TooLarge => Err(WorkspaceError::TooLarge(format!(
            "The file is larger than {} MiB.",
            crate::sandbox::workspaces::backend::READ_MAX / 1024 / 1024
        ))),
        Fetched::Failed(e) => Err(file_error(e)),
    }
}

/// A batch of files to upload, each holding its share of the bytes in flight.
type Batch = Vec<(WorkspacePath, Vec<u8>, Option<OwnedSemaphorePermit>)>;

/// Writes the checked archive at `archive` into the workspace: its files in bulk uploads (their
/// folders made with them), then each folder no file is in. The first failure stops it.
pub(super) async fn unpack(tb: &Rooted, archive: &std::path::Path) -> Result<Unpacked> {
    let rx = archive::entries_at(archive.to_path_buf(), Budget::new(BYTES_IN_FLIGHT));
    let folders: Mutex<Vec<WorkspacePath>> = Mutex::default();
    let batches = stream::unfold((rx, None::<Budgeted>), |(mut rx, mut carry)| {
        let folders = &folders;
        async move {
            match gather(&mut rx, &mut carry, folders).await {
                Ok(batch) if batch.is_empty() => None,
                next => Some((next, (rx, carry))),
            }
        }
    });
    let filled: Mutex<BTreeSet<String>> = Mutex::default();
    batches
        .try_for_each_concurrent(BULK_IN_FLIGHT, |batch| {
            let filled = &filled;
            async move {
                {
                    let mut f = filled.lock().unwrap_or_else(|p| p.into_inner());
                    for (p, _, _) in &batch {
                        f.extend(parents(p.relative()));
                    }
                }
                upload(tb, &batch).await
            }
        })
        .await?;
    let filled = filled.into_inner().unwrap_or_else(|p| p.into_inner());
    let folders = folders.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut inner: BTreeSet<String> = filled;
    for f in &folders {
        inner.extend(parents(f.relative()));
    }
    let leaves: Vec<WorkspacePath> = folders.into_iter().filter(|f| !inner.contains(f.relative())).collect();
    let made: Vec<_> = leaves.iter().map(|f| make_folder(tb, tb.at(f.relative()))).collect();
    stream::iter(made).buffer_unordered(FOLDERS_IN_FLIGHT).try_collect::<Vec<()>>().await?;
    Ok(Unpacked::Done)
}

async fn make_folder(tb: &Rooted, at: String) -> Result<()> {
    tb.toolbox().create_folder(&at).await.map_err(file_error)
}

/// The next batch of the archive's files (at most [`BULK_FILES`] and [`BULK_BYTES`], fewer when
/// the reader has no more ready), its folders noted in `folders`; empty at the end.
async fn gather(
    rx: &mut mpsc::Receiver<std::io::Result<Budgeted>>,
    carry: &mut Option<Budgeted>,
    folders: &Mutex<Vec<WorkspacePath>>,
) -> Result<Batch> {
    let mut batch = Batch::new();
    let mut bytes = 0u64;
    loop {
        let next = match carry.take() {
            Some(b) => b,
            // A batch goes as soon as the archive's reader has nothing ready: the reader may be
            // waiting for the batch's own share of the bytes in flight (a large file next).
            None => match if batch.is_empty() { rx.recv().await } else { rx.try_recv().ok() } {
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    return Err(WorkspaceError::Internal(anyhow::Error::from(e).context("reading a snapshot")))
                }
                None => return Ok(batch),
            },
        };
        match next {
            Budgeted(Item::Dir(p), _) => folders.lock().unwrap_or_else(|p| p.into_inner()).push(p),
            Budgeted(Item::File(p, b), permit) => {
                let size = b.len() as u64;
                if !batch.is_empty() && (batch.len() == BULK_FILES || bytes + size > BULK_BYTES) {
                    *carry = Some(Budgeted(Item::File(p, b), permit));
                    return Ok(batch);
                }
                bytes += size;
                batch.push((p, b, permit));
            }
        }
    }
}

/// One bulk upload. A path that starts or ends with white space is refused first: the daemon
/// trims each path (`strings.TrimSpace`, apps/daemon/pkg/toolbox/fs/upload_files.go).
async fn upload(tb: &Rooted, batch: &Batch) -> Result<()> {
    if let Some((p, _, _)) = batch.iter().find(|(p, _, _)| p.relative().trim() != p.relative()) {
        return Err(WorkspaceError::Invalid(FieldErrors::one(
            "path",
            format!("Daytona cannot write “{}”: its name starts or ends with a space.", p.display()),
        )));
    }
    let at: Vec<String> = batch.iter().map(|(p, _, _)| tb.at(p.relative())).collect();
    let files: Vec<(&str, &[u8])> = at.iter().zip(batch).map(|(a, (_, b, _))| (a.as_str(), b.as_slice())).collect();
    tb.toolbox().upload_many(&files).await.map_err(file_error)
}

/// The folders above `rel` (`a/b/c` → `a`, `a/b`).
fn parents(rel: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = rel[at..].find('/') {
        at += i;
        out.push(rel[..at].to_string());
        at += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_every_folder_above() {
        assert_eq!(parents("a/b/c.md"), vec!["a".to_string(), "a/b".to_string()]);
        assert!(parents("top.md").is_empty());
    }
}
