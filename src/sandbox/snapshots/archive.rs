//! A workspace as one archive (tar + gzip), streamed: the files are read from the host one at a
//! time through the stored-workspace routes (`/workspaces/{id}/ls`, `read_bytes`: they work for a
//! closed session and a finished run too) and handed to a blocking writer that appends them to a
//! temporary file (a Daytona workspace's through its sandbox's toolbox, by the Daytona backend's
//! stored files); restoring reads the archive back the same way, one entry at a time. Memory
//! stays flat: at most a few files in flight, never the archive or the workspace.

use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use tokio::sync::mpsc;

use crate::documents::exclusions::is_excluded;
use crate::sandbox::client::{SandboxdClient, SandboxdError};
use crate::sandbox::workspaces::backend::READ_MAX;
use crate::sandbox::workspaces::daytona::stored::Stored;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::vocabulary::paths::{self, WorkspacePath};

type Result<T> = std::result::Result<T, WorkspaceError>;

/// Entries in flight between the reader and the writer.
const IN_FLIGHT: usize = 4;

/// One entry of an archive.
pub enum Item {
    Dir(WorkspacePath),
    File(WorkspacePath, Vec<u8>),
}

/// A temporary file, removed when dropped.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new() -> TempFile {
        TempFile(std::env::temp_dir().join(format!("agenticos-snapshot-{}.tar.gz", crate::db::new_id())))
    }
}

impl Default for TempFile {
    fn default() -> Self {
        TempFile::new()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An archive written to a temporary file.
pub struct Built {
    pub file: TempFile,
    pub size: u64,
    pub files: u64,
    /// Files over the host's read limit, left out (logged).
    pub skipped: u64,
}

/// Writes the stored workspace of session `session_id` into an archive, leaving out what
/// Documents leaves out (the agent's skills, our own folders, toolchain folders at any depth).
/// Symbolic links are not listed by the host, so never followed.
pub async fn build(client: &SandboxdClient, session_id: &str) -> Result<Built> {
    build_with(|tx| async move { walk(client, session_id, &tx).await }).await
}

/// Writes the files of a Daytona workspace's sandbox into an archive, leaving out what Documents
/// leaves out; links and special files are never followed or read.
pub async fn build_from_daytona(stored: &Stored) -> Result<Built> {
    build_with(|tx| async move { walk_daytona(stored, &tx).await }).await
}

/// An archive of what `walk` sends: (files, files skipped).
async fn build_with<F, Fut>(walk: F) -> Result<Built>
where
    F: FnOnce(mpsc::Sender<Item>) -> Fut,
    Fut: std::future::Future<Output = Result<(u64, u64)>>,
{
    let file = TempFile::new();
    let (tx, rx) = mpsc::channel::<Item>(IN_FLIGHT);
    let target = file.0.clone();
    let writer = tokio::task::spawn_blocking(move || write_archive(&target, rx));
    let walked = walk(tx).await;
    let written = writer.await.map_err(|e| WorkspaceError::Internal(e.into()))?;
    let (files, skipped) = walked?;
    written.map_err(|e| WorkspaceError::Internal(anyhow::Error::from(e).context("writing the snapshot archive")))?;
    let size = std::fs::metadata(&file.0).map_err(|e| WorkspaceError::Internal(e.into()))?.len();
    Ok(Built { file, size, files, skipped })
}

/// Breadth-first over the folders, one listing at a time; excluded folders are never opened.
async fn walk(client: &SandboxdClient, session_id: &str, tx: &mpsc::Sender<Item>) -> Result<(u64, u64)> {
    let (mut files, mut skipped) = (0u64, 0u64);
    let mut folders = VecDeque::from([String::from(".")]);
    let mut is_root = true;
    while let Some(folder) = folders.pop_front() {
        let entries = match client.workspace_ls(session_id, &folder).await {
            Ok(e) => e,
            Err(SandboxdError::NotFound { detail }) if is_root && detail.starts_with("No workspace") => {
                return Err(WorkspaceError::Lost)
            }
            // A folder removed while we walked: nothing to keep of it.
            Err(SandboxdError::NotFound { .. }) if !is_root => continue,
            Err(e) => return Err(WorkspaceError::Host(e)),
        };
        is_root = false;
        for e in entries {
            let rel = e.path.trim_start_matches("./").trim_start_matches('/').to_string();
            if rel.is_empty() || is_excluded(&rel) {
                continue;
            }
            let Ok(path) = paths::normalise(&rel) else { continue };
            if e.is_dir {
                folders.push_back(rel);
                send(tx, Item::Dir(path)).await?;
                continue;
            }
            match client.workspace_read_bytes(session_id, &rel).await {
                Ok(bytes) => {
                    files += 1;
                    send(tx, Item::File(path, bytes)).await?;
                }
                Err(SandboxdError::Invalid { detail }) if detail.contains("read limit") => {
                    tracing::warn!(event = "snapshot_file_skipped", path = %rel, "a file over the host's read limit is left out of the snapshot");
                    skipped += 1;
                }
                Err(SandboxdError::NotFound { .. }) => {}
                Err(e) => return Err(WorkspaceError::Host(e)),
            }
        }
    }
    Ok((files, skipped))
}

/// The Daytona walk: breadth-first (through [`Stored::walk`]), each file read whole; one over the
/// read limit is left out (logged), one removed meanwhile is simply gone.
async fn walk_daytona(stored: &Stored, tx: &mpsc::Sender<Item>) -> Result<(u64, u64)> {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let (files, skipped) = (&AtomicU64::new(0), &AtomicU64::new(0));
    stored
        .walk(is_excluded, |e| async move {
            let Ok(path) = paths::normalise(&e.path) else { return Ok(()) };
            if e.is_dir {
                return send(tx, Item::Dir(path)).await;
            }
            match stored.read(&e.path, READ_MAX).await {
                Ok(bytes) => {
                    files.fetch_add(1, Relaxed);
                    send(tx, Item::File(path, bytes)).await
                }
                Err(WorkspaceError::TooLarge(_)) => {
                    tracing::warn!(event = "snapshot_file_skipped", path = %e.path, "a file over the read limit is left out of the snapshot");
                    skipped.fetch_add(1, Relaxed);
                    Ok(())
                }
                Err(WorkspaceError::NotFound(_)) => Ok(()),
                Err(err) => Err(err),
            }
        })
        .await?;
    Ok((files.load(Relaxed), skipped.load(Relaxed)))
}

async fn send(tx: &mpsc::Sender<Item>, item: Item) -> Result<()> {
    tx.send(item).await.map_err(|_| WorkspaceError::Internal(anyhow::anyhow!("the archive writer stopped")))
}

fn write_archive(target: &Path, mut rx: mpsc::Receiver<Item>) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let out = std::io::BufWriter::new(options.open(target)?);
    let mut tar = tar::Builder::new(GzEncoder::new(out, Compression::new(3)));
    let mtime = (crate::db::now_ms() / 1000).max(0) as u64;
    while let Some(item) = rx.blocking_recv() {
        let mut h = tar::Header::new_gnu();
        h.set_mtime(mtime);
        match item {
            Item::Dir(p) => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                tar.append_data(&mut h, format!("{}/", p.relative()), std::io::empty())?;
            }
            Item::File(p, bytes) => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(0o644);
                h.set_size(bytes.len() as u64);
                tar.append_data(&mut h, p.relative(), bytes.as_slice())?;
            }
        }
    }
    let gz = tar.into_inner()?;
    let mut out = gz.finish()?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}

/// The archive's entries, one at a time, from a blocking reader: paths normalised and confined
/// (an entry that would leave the workspace, a link or a special file is left out).
pub fn entries(file: TempFile) -> mpsc::Receiver<std::io::Result<Item>> {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        if let Err(e) = read_archive(&file.0, &tx) {
            let _ = tx.blocking_send(Err(e));
        }
        drop(file);
    });
    rx
}

fn read_archive(path: &Path, tx: &mpsc::Sender<std::io::Result<Item>>) -> std::io::Result<()> {
    let mut archive = tar::Archive::new(GzDecoder::new(std::io::BufReader::new(std::fs::File::open(path)?)));
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path()?.to_string_lossy().trim_end_matches('/').to_string();
        let Ok(p) = paths::normalise(&raw) else { continue };
        if p.is_root() {
            continue;
        }
        let item = match entry.header().entry_type() {
            tar::EntryType::Directory => Item::Dir(p),
            tar::EntryType::Regular => {
                if entry.size() > READ_MAX as u64 {
                    continue;
                }
                let mut bytes = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut bytes)?;
                Item::File(p, bytes)
            }
            _ => continue,
        };
        if tx.blocking_send(Ok(item)).is_err() {
            return Ok(());
        }
    }
    Ok(())
}
