//! Reading a workspace in batches (issue 50 on Daytona: its bulk download takes many files a
//! request). The walk's entries are gathered into batches of at most [`BULK_FILES`] files and
//! [`BULK_BYTES`] bytes (by their listed sizes), each file taking its share of
//! [`BYTES_IN_FLIGHT`] as it joins a batch; [`BULK_IN_FLIGHT`] batches are read at once and
//! archived in the walk's order. A file listed over the host's read limit is left out without
//! being read. A failure anywhere drops the temporary file: nothing half-written is kept.

use futures_util::stream::{self, StreamExt};
use tokio::sync::mpsc;
use tokio::sync::OwnedSemaphorePermit;

use super::archive::{Budget, Item, Writer, BYTES_IN_FLIGHT};
use super::hold::SnapshotHold;
use super::reading::{archived, stopped, Built, Done, Keeper, Listed, Read};
use crate::documents::exclusions::is_excluded;
use crate::sandbox::hosts::daytona::client::{BULK_BYTES, BULK_FILES, BULK_IN_FLIGHT};
use crate::sandbox::hosts::daytona::workspaces::stored::Stored;
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths::{self, WorkspacePath};

type Result<T> = std::result::Result<T, WorkspaceError>;

/// The files of a Daytona workspace's sandbox as an archive, leaving out what Documents leaves
/// out; links and special files are never followed or read. The files are read many a request
/// (the toolbox's bulk download: `reading_batched`).
pub async fn from_daytona(hold: &SnapshotHold, stored: &Stored, sandbox_id: &str) -> Result<Built> {
    let walk = |tx: mpsc::Sender<Listed>| async move {
        stored
            .walk(is_excluded, |e| {
                let tx = tx.clone();
                async move {
                    let Ok(p) = paths::normalise(&e.path) else { return Ok(()) };
                    let listed = if e.is_dir { Listed::Dir(p) } else { Listed::File(p, e.size) };
                    tx.send(listed).await.map_err(|_| stopped())
                }
            })
            .await
    };
    let read_batch = |ps: Vec<WorkspacePath>| async move {
        let rels: Vec<&str> = ps.iter().map(|p| p.relative()).collect();
        let mut out = Vec::with_capacity(ps.len());
        for got in stored.read_many(&rels, READ_MAX).await? {
            out.push(match got {
                Ok(bytes) => Read::Bytes(bytes),
                Err(WorkspaceError::TooLarge(_)) => Read::TooLarge,
                Err(WorkspaceError::NotFound(_)) => Read::Gone,
                Err(e) => return Err(e),
            });
        }
        Ok(out)
    };
    build(hold, sandbox_id, walk, read_batch).await
}

/// One entry of a batch: a folder, a file to read (with its share of the budget), or a file
/// listed over the read limit.
enum Entry {
    Dir(WorkspacePath),
    File(WorkspacePath, OwnedSemaphorePermit),
    Over(WorkspacePath),
}

/// Walks with `walk` and reads the files of each batch with one `read_batch` (its answers in the
/// order of the paths given), writing the archive as they go.
pub async fn build<W, WF, R, RF>(hold: &SnapshotHold, source: &str, walk: W, read_batch: R) -> Result<Built>
where
    W: FnOnce(mpsc::Sender<Listed>) -> WF,
    WF: std::future::Future<Output = Result<()>>,
    R: Fn(Vec<WorkspacePath>) -> RF,
    RF: std::future::Future<Output = Result<Vec<Read>>>,
{
    let writer = Writer::start_giving_way();
    let budget = Budget::new(BYTES_IN_FLIGHT);
    let (listed_tx, listed_rx) = mpsc::channel::<Listed>(256);
    let out = writer.tx.clone();
    let reads = async {
        let batches = stream::unfold((listed_rx, None::<Listed>), |(mut rx, mut carry)| {
            let budget = budget.clone();
            async move {
                let batch = gather(&mut rx, &mut carry, &budget).await;
                (!batch.is_empty()).then_some((batch, (rx, carry)))
            }
        });
        let read_batch = &read_batch;
        let done = batches.map(|batch| read_one(batch, read_batch)).buffered(BULK_IN_FLIGHT);
        let mut done = std::pin::pin!(done);
        let mut keeper = Keeper::new(out, hold, source);
        while let Some(batch) = done.next().await {
            for one in batch? {
                keeper.keep(one).await?;
            }
        }
        Ok::<u64, WorkspaceError>(keeper.skipped)
    };
    archived(writer, async move { walk(listed_tx).await }, reads).await
}

/// The next batch of the walk: its folders and files in order, up to [`BULK_FILES`] files and
/// [`BULK_BYTES`] bytes (a file that does not fit waits in `carry` for the next batch). Empty
/// when the walk is over.
async fn gather(rx: &mut mpsc::Receiver<Listed>, carry: &mut Option<Listed>, budget: &Budget) -> Vec<Entry> {
    let mut batch = Vec::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    loop {
        let next = match carry.take() {
            Some(l) => l,
            None => match rx.recv().await {
                Some(l) => l,
                None => return batch,
            },
        };
        match next {
            Listed::Dir(p) => batch.push(Entry::Dir(p)),
            Listed::File(p, size) if size.is_some_and(|s| s > READ_MAX as u64) => batch.push(Entry::Over(p)),
            Listed::File(p, size) => {
                let size = size.unwrap_or(0);
                if files > 0 && (files == BULK_FILES || bytes + size > BULK_BYTES) {
                    *carry = Some(Listed::File(p, Some(size)));
                    return batch;
                }
                let permit = budget.take(size).await;
                batch.push(Entry::File(p, permit));
                files += 1;
                bytes += size;
            }
        }
    }
}

/// Reads a batch's files in one go and pairs each with its answer.
async fn read_one<R, RF>(batch: Vec<Entry>, read_batch: &R) -> Result<Vec<Done>>
where
    R: Fn(Vec<WorkspacePath>) -> RF,
    RF: std::future::Future<Output = Result<Vec<Read>>>,
{
    let paths: Vec<WorkspacePath> =
        batch.iter().filter_map(|e| if let Entry::File(p, _) = e { Some(p.clone()) } else { None }).collect();
    let mut reads = if paths.is_empty() { Vec::new() } else { read_batch(paths).await? }.into_iter();
    let mut done = Vec::with_capacity(batch.len());
    for e in batch {
        done.push(match e {
            Entry::Dir(p) => (Some(Item::Dir(p)), None, None),
            Entry::Over(p) => (None, None, Some(p)),
            Entry::File(p, permit) => match reads.next() {
                Some(Read::Bytes(bytes)) => (Some(Item::File(p, bytes)), Some(permit), None),
                Some(Read::TooLarge) => (None, None, Some(p)),
                Some(Read::Gone) => (None, None, None),
                None => return Err(WorkspaceError::Internal(anyhow::anyhow!("a batch read answered fewer files"))),
            },
        });
    }
    Ok(done)
}
