//! Reading a workspace in batches, for a host whose reads take many files a request (issue 50 on
//! Daytona: its bulk download, `hosts/daytona/snapshots.rs`). The walk's entries are gathered
//! into batches of at most [`Batches::files`] files and [`Batches::bytes`] bytes (by their listed
//! sizes, the kind's limits), each file taking its share of [`BYTES_IN_FLIGHT`] as it joins a
//! batch; [`Batches::in_flight`] batches are read at once and archived in the walk's order. A file listed over the host's read limit is left out without
//! being read. A failure anywhere drops the temporary file: nothing half-written is kept.

use futures_util::stream::{self, StreamExt};
use tokio::sync::mpsc;
use tokio::sync::OwnedSemaphorePermit;

use super::archive::{Budget, Item, Writer, BYTES_IN_FLIGHT};
use super::hold::SnapshotHold;
use super::reading::{archived, Built, Done, Keeper, Listed, Read};
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths::WorkspacePath;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// How a host kind's batch reads are sized.
#[derive(Debug, Clone, Copy)]
pub struct Batches {
    /// Files a batch at most.
    pub files: usize,
    /// Listed bytes a batch at most (a larger file goes alone).
    pub bytes: u64,
    /// Batches read at once.
    pub in_flight: usize,
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
pub async fn build<W, WF, R, RF>(
    hold: &SnapshotHold,
    source: &str,
    batches: Batches,
    walk: W,
    read_batch: R,
) -> Result<Built>
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
        let gathered = stream::unfold((listed_rx, None::<Listed>), |(mut rx, mut carry)| {
            let budget = budget.clone();
            async move {
                let batch = gather(&mut rx, &mut carry, &budget, batches).await;
                (!batch.is_empty()).then_some((batch, (rx, carry)))
            }
        });
        let read_batch = &read_batch;
        let done = gathered.map(|batch| read_one(batch, read_batch)).buffered(batches.in_flight);
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

/// The next batch of the walk: its folders and files in order, up to [`Batches::files`] files and
/// [`Batches::bytes`] bytes (a file that does not fit waits in `carry` for the next batch). Empty
/// when the walk is over.
async fn gather(
    rx: &mut mpsc::Receiver<Listed>,
    carry: &mut Option<Listed>,
    budget: &Budget,
    limits: Batches,
) -> Vec<Entry> {
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
                if files > 0 && (files == limits.files || bytes + size > limits.bytes) {
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
