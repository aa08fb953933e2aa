//! Reading a sandboxd workspace: packed by its sandbox when the session is live (issue 50: the
//! host's other sessions keep their latency), else file by file (`file_by_file.rs`). The parts of the
//! sandbox's `tar` (`hosts/sandboxd/workspaces/pack.rs`) are read one ahead of a reader that takes
//! the tar apart, and each folder and file is handed to the archive as the per-file reads hand
//! theirs (the same [`Keeper`], the same manifest of sizes and SHA-256), within a budget of bytes
//! in flight, on threads that give way. What Documents leaves out is left out again here, and so
//! is what the per-file reads never see: links, special files, a file over [`READ_MAX`] (logged).
//! A failure anywhere drops the temporary file: nothing half-written is kept.

use std::io::{Cursor, Read};

use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::file_by_file;
use crate::documents::exclusions::is_excluded;
use crate::sandbox::hosts::sandboxd::client::SandboxdClient;
use crate::sandbox::hosts::sandboxd::workspaces::pack::{self, Packed, PART};
use crate::sandbox::snapshots::archive::{in_background, Budget, Item, Writer};
use crate::sandbox::snapshots::hold::SnapshotHold;
use crate::sandbox::snapshots::reading::{archived, stopped, Built, Done, Keeper};
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// Entries taken apart and not yet handed to the archive.
const QUEUED: usize = 16;

/// Bytes of files taken apart and not yet archived: taking a tar apart outruns compressing it, so
/// what waits for the archive is kept to two parts' worth (the per-file reads' whole budget,
/// [`BYTES_IN_FLIGHT`](crate::sandbox::snapshots::archive::BYTES_IN_FLIGHT), would only fill up here).
const TAKEN_AHEAD: usize = 2 * PART;

/// The workspace of session `session_id` as an archive: packed by its sandbox when the session is
/// live, else read file by file ([`file_by_file::file_by_file`]).
pub async fn from_sandboxd(hold: &SnapshotHold, client: &SandboxdClient, session_id: &str) -> Result<Built> {
    match pack::pack(client, session_id).await? {
        Some((packed, first)) => from_packed(hold, session_id, packed, first).await,
        None => file_by_file::file_by_file(hold, client, session_id).await,
    }
}

/// The packed workspace (its first part already read) as an archive; the stage removed before it
/// returns.
async fn from_packed(hold: &SnapshotHold, source: &str, packed: Packed, first: Vec<u8>) -> Result<Built> {
    let writer = Writer::start_giving_way();
    let out = writer.tx.clone();
    let (tx, mut rx) = mpsc::channel::<Done>(QUEUED);
    let stage = packed.clone();
    let parts = Parts::new(packed, first, Handle::current());
    let taken = in_background(move || take_apart(parts, Budget::new(TAKEN_AHEAD), tx));
    let taken = async { taken.await.map_err(|_| stopped())? };
    let kept = async {
        let mut keeper = Keeper::new(out, hold, source);
        while let Some(done) = rx.recv().await {
            keeper.keep(done).await?;
        }
        Ok::<u64, WorkspaceError>(keeper.skipped)
    };
    let built = archived(writer, taken, kept).await;
    stage.remove_stage().await;
    built
}

/// The sandbox's tar, entry by entry, handed on in order until the receiver is gone.
fn take_apart(parts: Parts, budget: Budget, tx: mpsc::Sender<Done>) -> Result<()> {
    let mut archive = tar::Archive::new(parts);
    let outcome = each_entry(&mut archive, &budget, &tx);
    if let Some(e) = archive.into_inner().failed {
        return Err(e);
    }
    outcome.map_err(|e| WorkspaceError::Internal(anyhow::Error::from(e).context("reading the sandbox's archive")))
}

fn each_entry(archive: &mut tar::Archive<Parts>, budget: &Budget, tx: &mpsc::Sender<Done>) -> std::io::Result<()> {
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path()?.to_string_lossy().to_string();
        let rel = raw.strip_prefix("./").unwrap_or(&raw).trim_end_matches('/');
        if rel.is_empty() || is_excluded(rel) {
            continue;
        }
        let Ok(p) = paths::normalise(rel) else { continue };
        let done = match entry.header().entry_type() {
            tar::EntryType::Directory => (Some(Item::Dir(p)), None, None),
            tar::EntryType::Regular if entry.size() > READ_MAX as u64 => (None, None, Some(p)),
            tar::EntryType::Regular => {
                let permit = budget.take_blocking(entry.size());
                let mut bytes = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut bytes)?;
                (Some(Item::File(p, bytes)), Some(permit), None)
            }
            _ => continue,
        };
        if tx.blocking_send(done).is_err() {
            return Ok(());
        }
    }
    Ok(())
}

/// The parts as one stream of bytes, the next part read while this one is taken apart (one
/// ahead: memory stays two parts). A part that cannot be read ends the stream with its error kept.
struct Parts {
    packed: Packed,
    rt: Handle,
    next: usize,
    ahead: Option<JoinHandle<Result<Vec<u8>>>>,
    current: Cursor<Vec<u8>>,
    failed: Option<WorkspaceError>,
}

impl Parts {
    fn new(packed: Packed, first: Vec<u8>, rt: Handle) -> Parts {
        let mut parts = Parts { packed, rt, next: 1, ahead: None, current: Cursor::new(first), failed: None };
        parts.read_ahead();
        parts
    }

    fn read_ahead(&mut self) {
        if self.next < self.packed.parts() {
            let (packed, i) = (self.packed.clone(), self.next);
            self.ahead = Some(self.rt.spawn(async move { packed.part(i).await }));
            self.next += 1;
        }
    }
}

impl Read for Parts {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.current.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let Some(ahead) = self.ahead.take() else { return Ok(0) };
            match self.rt.block_on(ahead).map_err(std::io::Error::other)? {
                Ok(bytes) => {
                    self.current = Cursor::new(bytes);
                    self.read_ahead();
                }
                Err(e) => {
                    self.failed = Some(e);
                    return Err(std::io::Error::other("a part of the sandbox's archive could not be read"));
                }
            }
        }
    }
}
