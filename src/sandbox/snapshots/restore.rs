//! What a new session starts from: the snapshot the run names (`snapshot_id` at
//! `POST /api/v1/runs`), else — for a workspace whose session is gone (lost at its host, or purged)
//! — its latest snapshot, else the agent's manifest. What opening did is noted on the run
//! ("restored from the snapshot of …", "started empty") and shown in its workspace state.

use futures_util::stream::{self, StreamExt, TryStreamExt};
use tokio::sync::mpsc;

use super::archive::{self, Budget, Budgeted, Item, TempFile, BYTES_IN_FLIGHT};
use super::manifest::Verdict;
use super::model::Snapshot;
use super::objects::Objects;
use super::store;
use crate::db;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::state::AppState;

type Result<T> = std::result::Result<T, WorkspaceError>;

/// The snapshot a session being opened starts from, if any.
pub async fn plan(st: &AppState, r: &Resolved, is_new_workspace: bool) -> Result<Option<Snapshot>> {
    let mut c = st.db.conn().await?;
    let start = store::start_of(&mut c, &r.run.id).await?.unwrap_or_default();
    if let Some(id) = start.snapshot_id {
        return match store::get(&mut c, &r.org_id, &id).await? {
            Some(s) => Ok(Some(s)),
            None => Err(WorkspaceError::Refused("The snapshot this run starts from was deleted.".into())),
        };
    }
    if !is_new_workspace {
        return Ok(None);
    }
    Ok(store::of_workspace(&mut c, &r.org_id, &r.workspace.id).await?.into_iter().next())
}

/// Whether a session being opened new had one before (its files are gone: lost, or purged).
pub fn had_files(r: &Resolved) -> bool {
    r.workspace.runtime.is_some()
}

/// A snapshot's archive, downloaded and checked.
pub struct Fetched {
    pub file: TempFile,
    /// Checked against its manifest: a plain archive any `tar` may unpack.
    pub checked: bool,
    /// Its folders and files in order (path, bytes; none for a folder), when checked.
    pub entries: Vec<(String, Option<u64>)>,
}

impl Fetched {
    /// Its entries, one at a time, each with its share of the bytes in flight.
    pub fn into_entries(self) -> mpsc::Receiver<std::io::Result<Budgeted>> {
        archive::entries(self.file, Budget::new(BYTES_IN_FLIGHT))
    }
}

/// What checking a downloaded archive found ([`check`]).
pub struct Check {
    /// It matches its manifest: a plain archive any `tar` may unpack.
    pub checked: bool,
    /// Its folders and files in order (path, bytes; none for a folder), when checked.
    pub entries: Vec<(String, Option<u64>)>,
}

/// The snapshot's archive, downloaded to a temporary file (see [`check`]).
pub async fn download(st: &AppState, s: &Snapshot) -> Result<TempFile> {
    download_from(&st.snapshots, &s.object_key).await
}

/// The archive at `key`, downloaded to a temporary file: a store that fails midway restores
/// nothing.
pub async fn download_from(objects: &Objects, key: &str) -> Result<TempFile> {
    let file = TempFile::new();
    objects.get_to_file(key, &file.0).await.map_err(|e| objects.read_refusal(e, "nothing was restored"))?;
    Ok(file)
}

/// The archive of snapshot `id`, downloaded and checked ([`check`]).
pub async fn fetch_checked(objects: &Objects, id: &str, key: &str) -> Result<Fetched> {
    let file = download_from(objects, key).await?;
    let Check { checked, entries } = check(id, &file.0).await?;
    Ok(Fetched { file, checked, entries })
}

/// Checks the downloaded archive of snapshot `id` whole against its manifest: one whose files
/// differ from its manifest (each named) restores nothing.
pub async fn check(id: &str, file: &std::path::Path) -> Result<Check> {
    let checked = archive::verify(file).await.map_err(|e| {
        WorkspaceError::Refused(format!("The snapshot's archive could not be read ({e}): nothing was restored."))
    })?;
    match checked.verdict {
        Verdict::Matches => Ok(Check { checked: true, entries: checked.entries }),
        Verdict::Unchecked => {
            tracing::info!(snapshot_id = %id, "a snapshot taken before manifests is restored unchecked");
            Ok(Check { checked: false, entries: Vec::new() })
        }
        Verdict::Differs(paths) => {
            tracing::warn!(event = "snapshot_tampered", snapshot_id = %id, files = paths.len(),
                "a snapshot's archive does not match its manifest; nothing was restored");
            Err(WorkspaceError::Refused(format!(
                "The snapshot's archive does not match its manifest: {} differ{}. Nothing was restored.",
                Verdict::named(&paths),
                if paths.len() == 1 { "s" } else { "" }
            )))
        }
    }
}

/// Entries written at once (the host's other sessions keep their latency: docs/benchmarks.md).
pub const WRITES_IN_FLIGHT: usize = 6;

/// Hands each entry of `rx` to `each`, [`WRITES_IN_FLIGHT`] at once; an entry's share of the
/// bytes in flight is given back once it is written. The first failure stops it.
pub async fn write_entries<F, Fut>(rx: mpsc::Receiver<std::io::Result<Budgeted>>, each: F) -> Result<()>
where
    F: Fn(Item) -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let entries = stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|i| (i, rx)) });
    entries
        .map(|item| item.map_err(|e| WorkspaceError::Internal(anyhow::Error::from(e).context("reading a snapshot"))))
        .try_for_each_concurrent(WRITES_IN_FLIGHT, |Budgeted(item, permit)| {
            let written = each(item);
            async move {
                written.await?;
                drop(permit);
                Ok(())
            }
        })
        .await
}

/// "restored from the snapshot of 2026-12-01 20:10:05 UTC"
pub fn restored_note(s: &Snapshot) -> String {
    format!("restored from the snapshot of {}", s.time_label())
}

pub const STARTED_EMPTY: &str = "started empty";

/// Notes on the run what its workspace started from.
pub async fn note(st: &AppState, r: &Resolved, note: &str) -> Result<()> {
    let mut c = st.db.conn().await?;
    store::set_note(&mut c, &r.org_id, &r.run.id, note, db::now_ms()).await?;
    Ok(())
}

/// What the run's workspace started from, if opening noted it.
pub async fn note_of(st: &AppState, run_id: &str) -> Result<Option<String>> {
    let mut c = st.db.conn().await?;
    Ok(store::start_of(&mut c, run_id).await?.and_then(|s| s.note))
}
