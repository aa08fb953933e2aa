//! A Daytona workspace's files without a run: what Documents lists and reads, and what a snapshot
//! saves, through the sandbox's toolbox (`GET /files`, `GET /files/download`). Daytona has no
//! bounded tree, so [`Stored::tree`] walks breadth-first, one `GET /files` per folder (a few at
//! a time), at most [`TREE_DEPTH`] levels and [`TREE_ENTRIES`] entries.
//!
//! Daytona serves a sandbox's files only while it runs. Documents never starts one (an idle
//! sandbox Daytona stopped reads as unreadable until the next run opens it); a snapshot, which a
//! person or a run's end asks for, starts a stopped one and waits for it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};

use super::files::{file_error, host_error};
use super::known::KnownSandboxes;
use super::root::{self, Rooted};
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::client::{DaytonaClient, DaytonaError, FileInfo, SandboxState};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;

/// Levels listed below the workspace root (as sandboxd's `tree`).
pub const TREE_DEPTH: usize = 6;
/// Entries a tree keeps.
pub const TREE_ENTRIES: usize = 2000;
/// Folders listed at once.
const CONCURRENCY: usize = 6;
/// How long a snapshot waits for a stopped sandbox to start.
const START_WAIT: Duration = Duration::from_secs(120);

/// One entry, its path relative to the workspace root (`notes/a.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEntry {
    pub path: String,
    pub is_dir: bool,
    /// Bytes; none for folders.
    pub size: Option<u64>,
    /// RFC 3339, `+00:00` for UTC (as sandboxd writes it).
    pub modified_at: Option<String>,
}

/// A bounded tree: `cut` when a limit stopped it, `failed` when a folder could not be read.
#[derive(Debug, Default)]
pub struct Tree {
    pub entries: Vec<StoredEntry>,
    pub cut: bool,
    pub failed: bool,
    /// Folders listed (requests sent).
    pub listed: u64,
}

/// The toolbox of a Daytona workspace's sandbox, at its workspace root (`root.rs`: the
/// `workspace` folder under home; the home's own dotfiles are never reached).
pub struct Stored {
    pub(super) tb: Rooted,
    /// The daemon has no bulk download (it answered 404): files are read one by one.
    pub(super) no_bulk: std::sync::atomic::AtomicBool,
}

/// Whether opening may start a stopped sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Documents' listing: a sandbox that is not running is refused.
    Never,
    /// Documents' reads (tiles, a file): as `Never`, but a sandbox seen running in the last
    /// seconds is taken to run without asking Daytona again.
    NeverSeenRunning,
    /// A snapshot: a stopped or archived sandbox is started, and waited for.
    IfStopped,
}

/// The files of sandbox `sandbox_id` on Daytona connection `conn`. A sandbox Daytona no longer
/// has is [`WorkspaceError::Lost`].
pub async fn open(st: &AppState, org_id: &str, conn: &Connection, sandbox_id: &str, start: Start) -> Result<Stored> {
    let client = connections::daytona_client_for(st, org_id, conn).await?;
    open_with(&client, &st.daytona_sandboxes, sandbox_id, start).await
}

/// [`open`] with a client at hand, `known` what this console knows of the sandboxes (the
/// snapshots bench calls it with a client of its own).
pub async fn open_with(
    client: &DaytonaClient,
    known: &KnownSandboxes,
    sandbox_id: &str,
    start: Start,
) -> Result<Stored> {
    if start == Start::NeverSeenRunning {
        let seen = known.recently_started(sandbox_id);
        let tb = seen.and_then(|proxy| client.toolbox_at(&proxy, sandbox_id).ok());
        if let Some(tb) = tb.and_then(|tb| root::cached(known, &tb, sandbox_id)) {
            return Ok(Stored { tb, no_bulk: Default::default() });
        }
    }
    let began = Instant::now();
    let mut pause = Duration::from_millis(50);
    let mut sandbox = match client.get_sandbox(sandbox_id).await {
        Ok(s) => s,
        Err(DaytonaError::NotFound { .. }) => return Err(WorkspaceError::Lost),
        Err(e) => return Err(host_error(e)),
    };
    loop {
        let state = sandbox.state();
        if state == SandboxState::Started {
            let tb = client.toolbox(&sandbox).await.map_err(host_error)?;
            let tb = root::of(known, tb, &sandbox).await.map_err(host_error)?;
            if let Some(proxy) = &sandbox.toolbox_proxy_url {
                known.keep_started(sandbox_id, proxy);
            }
            return Ok(Stored { tb, no_bulk: Default::default() });
        }
        if state.is_failed() {
            return Err(WorkspaceError::Refused(format!(
                "The Daytona sandbox is in state “{}”: its files cannot be read.",
                state.as_str()
            )));
        }
        if start != Start::IfStopped {
            return Err(WorkspaceError::Refused(format!(
                "The Daytona sandbox is {} (Daytona stops idle sandboxes): its files can be read again once a run opens it.",
                state.as_str()
            )));
        }
        if began.elapsed() > START_WAIT {
            return Err(WorkspaceError::Refused(format!(
                "The Daytona sandbox did not start within {} s (it is {}).",
                START_WAIT.as_secs(),
                state.as_str()
            )));
        }
        if state.needs_start() {
            sandbox = match client.start_sandbox(&sandbox.id).await {
                Ok(s) => s,
                Err(DaytonaError::Conflict { .. }) => sandbox,
                Err(e) => return Err(host_error(e)),
            };
            if sandbox.state() == SandboxState::Started {
                continue;
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
        sandbox = match client.get_sandbox(&sandbox.id).await {
            Ok(s) => s,
            Err(DaytonaError::NotFound { .. }) => return Err(WorkspaceError::Lost),
            Err(e) => return Err(host_error(e)),
        };
    }
}

/// `parent/name`, or `name` at the root.
fn child(parent: &str, name: &str) -> String {
    if parent == "." {
        name.to_string()
    } else {
        format!("{parent}/{name}")
    }
}

/// An entry of folder `parent`, or none for a link or a special file (never followed or read).
fn entry_of(parent: &str, info: FileInfo) -> Option<StoredEntry> {
    if info.is_link() || info.is_special() || !super::files::is_plain_name(&info.name) {
        return None;
    }
    let size = if info.is_dir { None } else { info.size.and_then(|s| u64::try_from(s).ok()) };
    let modified_at = info.modified_at.map(|t| match t.strip_suffix('Z') {
        Some(utc) => format!("{utc}+00:00"),
        None => t,
    });
    Some(StoredEntry { path: child(parent, &info.name), is_dir: info.is_dir, size, modified_at })
}

impl Stored {
    /// One folder's entries (`.` for the root), sorted by name; links and special files left out.
    pub async fn ls(&self, folder: &str) -> Result<Vec<StoredEntry>> {
        let list = self.tb.toolbox().list(&self.tb.at(folder)).await.map_err(file_error)?;
        let mut entries: Vec<StoredEntry> = list.into_iter().filter_map(|i| entry_of(folder, i)).collect();
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    /// A file's bytes; one over `max` is [`WorkspaceError::TooLarge`].
    pub async fn read(&self, path: &str, max: usize) -> Result<Vec<u8>> {
        self.tb.toolbox().download(&self.tb.at(path), max).await.map_err(file_error)
    }

    /// A file's first `max` bytes at most (a preview).
    pub async fn read_head(&self, path: &str, max: usize) -> Result<Vec<u8>> {
        self.tb.toolbox().download_head(&self.tb.at(path), max).await.map_err(file_error)
    }

    /// Breadth-first over the folders, [`CONCURRENCY`] listings at a time, leaving out (and never
    /// opening) what `skip` says: at most [`TREE_DEPTH`] levels (a folder on the last level is
    /// not opened: the tree is cut) and [`TREE_ENTRIES`] entries. The root's failure is the
    /// error; another folder's makes the tree `failed` (one removed meanwhile is simply gone).
    pub async fn tree(&self, skip: impl Fn(&str) -> bool) -> Result<Tree> {
        let mut tree = Tree::default();
        let mut level: Vec<String> = vec![".".to_string()];
        let mut depth = 0;
        while !level.is_empty() {
            depth += 1;
            tree.listed += level.len() as u64;
            let listings: Vec<Result<Vec<StoredEntry>>> =
                stream::iter(level.iter()).map(|f| self.ls(f)).buffered(CONCURRENCY).collect().await;
            let mut next = Vec::new();
            for listing in listings {
                let entries = match listing {
                    Ok(entries) => entries,
                    Err(e) if depth == 1 => return Err(e),
                    Err(WorkspaceError::NotFound(_)) => continue,
                    Err(_) => {
                        tree.failed = true;
                        continue;
                    }
                };
                for e in entries {
                    if skip(&e.path) {
                        continue;
                    }
                    if tree.entries.len() >= TREE_ENTRIES {
                        tree.cut = true;
                        return Ok(tree);
                    }
                    if e.is_dir {
                        if depth < TREE_DEPTH {
                            next.push(e.path.clone());
                        } else {
                            tree.cut = true;
                        }
                    }
                    tree.entries.push(e);
                }
            }
            level = next;
        }
        Ok(tree)
    }

    /// Every file and folder, breadth-first, one folder at a time, leaving out what `skip` says
    /// (never opened); `each` gets each entry in turn. The root's failure is the error; a folder
    /// removed meanwhile is skipped.
    pub async fn walk<F, Fut>(&self, skip: impl Fn(&str) -> bool, mut each: F) -> Result<()>
    where
        F: FnMut(StoredEntry) -> Fut,
        Fut: std::future::Future<Output = Result<()>>,
    {
        let mut folders = VecDeque::from([String::from(".")]);
        let mut is_root = true;
        while let Some(folder) = folders.pop_front() {
            let entries = match self.ls(&folder).await {
                Ok(e) => e,
                Err(WorkspaceError::NotFound(_)) if !is_root => continue,
                Err(e) => return Err(e),
            };
            is_root = false;
            for e in entries {
                if skip(&e.path) {
                    continue;
                }
                if e.is_dir {
                    folders.push_back(e.path.clone());
                }
                each(e).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, mode: &str, is_dir: bool) -> FileInfo {
        FileInfo {
            name: name.into(),
            size: Some(3),
            is_dir,
            mode: Some(mode.into()),
            modified_at: Some("2026-12-01T10:00:00.5Z".into()),
            path: None,
        }
    }

    #[test]
    fn entries_carry_their_path_and_a_utc_offset_and_links_are_left_out() {
        let e = entry_of("notes", info("a.md", "-rw-r--r--", false)).expect("a file");
        assert_eq!(e.path, "notes/a.md");
        assert_eq!(e.modified_at.as_deref(), Some("2026-12-01T10:00:00.5+00:00"));
        assert_eq!(e.size, Some(3));
        let d = entry_of(".", info("docs", "drwxr-xr-x", true)).expect("a folder");
        assert_eq!((d.path.as_str(), d.size), ("docs", None));
        assert!(entry_of(".", info("l", "Lrwxrwxrwx", false)).is_none());
        assert!(entry_of(".", info("fifo", "prw-r--r--", false)).is_none());
    }
}
