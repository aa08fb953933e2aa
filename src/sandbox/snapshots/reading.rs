//! Reading a workspace from its host into an archive (issue 50: at disk speed), whatever the host:
//! a kind's walk lists the folders (excluded ones never opened) and hands each file on;
//! [`READS_IN_FLIGHT`] files are read at once through the kind's per-file read (sandboxd's
//! stored-workspace `read_bytes`, `hosts/sandboxd/snapshots/file_by_file.rs`; a Daytona sandbox's
//! files are read in batches instead, `reading_batched`), in the walk's order, within
//! [`BYTES_IN_FLIGHT`](super::archive::BYTES_IN_FLIGHT) of contents; the archive is written
//! meanwhile on a blocking thread. A failure anywhere drops the temporary file: nothing
//! half-written is kept. What the readers share lives here too: [`Keeper`], [`archived`].

use futures_util::stream::{self, StreamExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

use super::archive::{Budget, Budgeted, Item, TempFile, Writer, BYTES_IN_FLIGHT};
use super::hold::{Point, SnapshotHold};
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths::WorkspacePath;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// Files read from a host at once: enough to keep a host's request handling and the archive's
/// compression busy together, few enough that the host's other sessions keep their latency
/// (docs/benchmarks.md measures both).
pub const READS_IN_FLIGHT: usize = 6;

/// An archive written to a temporary file.
pub struct Built {
    pub file: TempFile,
    pub size: u64,
    pub files: u64,
    /// Files over the host's read limit, left out (logged).
    pub skipped: u64,
}

/// What a walk found: a folder, or a file and its size when listed.
pub enum Listed {
    Dir(WorkspacePath),
    File(WorkspacePath, Option<u64>),
}

/// One file's read.
pub enum Read {
    Bytes(Vec<u8>),
    /// Over the host's read limit: left out, logged.
    TooLarge,
    /// Removed while the walk went on: nothing to keep.
    Gone,
}

pub fn stopped() -> WorkspaceError {
    WorkspaceError::Internal(anyhow::anyhow!("the snapshot's reader stopped"))
}

/// The walk and the reads together, the archive written as they go.
pub async fn build<W, WF, R, RF>(hold: &SnapshotHold, source: &str, walk: W, read: R) -> Result<Built>
where
    W: FnOnce(mpsc::Sender<Listed>) -> WF,
    WF: std::future::Future<Output = Result<()>>,
    R: Fn(WorkspacePath) -> RF,
    RF: std::future::Future<Output = Result<Read>>,
{
    let writer = Writer::start();
    let budget = Budget::new(BYTES_IN_FLIGHT);
    let (listed_tx, listed_rx) = mpsc::channel::<Listed>(256);
    let out = writer.tx.clone();
    let reads = async {
        let listed = stream::unfold(listed_rx, |mut rx| async move { rx.recv().await.map(|l| (l, rx)) });
        // The budget is taken in the walk's order, before a read starts: the oldest read always
        // holds its share, so the reads never wait on each other.
        let done = listed
            .then(|l| {
                let budget = budget.clone();
                async move {
                    match l {
                        Listed::File(p, size) => {
                            let permit = budget.take(size.unwrap_or(0)).await;
                            (Listed::File(p, size), Some(permit))
                        }
                        dir => (dir, None),
                    }
                }
            })
            .map(|(l, permit)| {
                let read = &read;
                async move {
                    match l {
                        Listed::Dir(p) => Ok((Some(Item::Dir(p)), permit, None)),
                        Listed::File(p, _) => {
                            let got = read(p.clone()).await?;
                            Ok::<_, WorkspaceError>(match got {
                                Read::Bytes(bytes) => (Some(Item::File(p, bytes)), permit, None),
                                Read::TooLarge => (None, None, Some(p)),
                                Read::Gone => (None, None, None),
                            })
                        }
                    }
                }
            })
            .buffered(READS_IN_FLIGHT);
        let mut done = std::pin::pin!(done);
        let mut keeper = Keeper::new(out, hold, source);
        while let Some(next) = done.next().await {
            keeper.keep(next?).await?;
        }
        Ok::<u64, WorkspaceError>(keeper.skipped)
    };
    archived(writer, async move { walk(listed_tx).await }, reads).await
}

/// What one read became: an item to archive (with its share of the bytes in flight), or a file
/// left out because it is over the host's read limit.
pub type Done = (Option<Item>, Option<OwnedSemaphorePermit>, Option<WorkspacePath>);

/// Hands the reads' items to the archive in the walk's order, counting the files left out and
/// marking the first file written (the snapshot's hold point).
pub struct Keeper<'a> {
    out: mpsc::Sender<Budgeted>,
    hold: &'a SnapshotHold,
    source: &'a str,
    first_file: bool,
    pub skipped: u64,
}

impl<'a> Keeper<'a> {
    pub fn new(out: mpsc::Sender<Budgeted>, hold: &'a SnapshotHold, source: &'a str) -> Self {
        Keeper { out, hold, source, first_file: true, skipped: 0 }
    }

    pub async fn keep(&mut self, (item, permit, too_large): Done) -> Result<()> {
        if let Some(p) = too_large {
            tracing::warn!(event = "snapshot_file_skipped", path = %p.display(), "a file over the host's read limit is left out of the snapshot");
            self.skipped += 1;
        }
        let Some(item) = item else { return Ok(()) };
        let is_file = matches!(item, Item::File(..));
        self.out.send(Budgeted(item, permit)).await.map_err(|_| stopped())?;
        if is_file && self.first_file {
            self.first_file = false;
            self.hold.at(Point::FirstFile, self.source).await;
        }
        Ok(())
    }
}

/// The walk and the reads run together (the reads give the count of files left out), then the
/// archive is finished; a failure of either drops the temporary file.
pub async fn archived(
    writer: Writer,
    walked: impl std::future::Future<Output = Result<()>>,
    reads: impl std::future::Future<Output = Result<u64>>,
) -> Result<Built> {
    let outcome = tokio::try_join!(walked, reads);
    let skipped = outcome?.1;
    let (file, size, files) = writer
        .finish()
        .await
        .map_err(|e| WorkspaceError::Internal(anyhow::Error::from(e).context("writing the snapshot archive")))?;
    Ok(Built { file, size, files, skipped })
}
