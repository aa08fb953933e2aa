//! Listing workspaces' files: a `state` workspace from its document (no host cost), `sandboxd`
//! workspaces through their host's archive routes, which never start a container. One `trees`
//! request per host for up to 100 workspaces (one `tree` each on a host older than 0.2.37), at
//! most 6 levels and 2,000 entries each. The host has no exclude parameter, so when excluded
//! folders used up a cut listing, the top-level folders that are not excluded are asked again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt};

use super::exclusions::is_excluded;
use serde::Deserialize;

use super::model::ListingStatus;
use super::stamp::{self, Stamp};
use crate::sandbox::hosts::sandboxd::client::{SandboxdClient, SandboxdError, Tree, TreeOptions, MAX_TREES};

/// Levels the host lists below the workspace root.
pub const MAX_DEPTH: u32 = 6;
/// Entries the host lists per workspace, and the most we keep.
pub const MAX_ENTRIES: usize = 2000;
/// Requests to one host at once when a listing falls back to one request per workspace or folder.
const CONCURRENCY: usize = 6;

/// A listed entry, excluded ones already dropped. Decoded straight from the host's answer with
/// only what Documents uses: the name is the path's last part, the time is kept inline.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    pub path: String,
    pub is_dir: bool,
    /// Bytes; none for directories.
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default, deserialize_with = "stamp::optional")]
    pub modified_at: Option<Stamp>,
}

impl Entry {
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// A workspace's listing and how complete it is.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub entries: Vec<Entry>,
    pub status: ListingStatus,
}

impl Listing {
    pub fn empty() -> Listing {
        Listing { entries: Vec::new(), status: ListingStatus { complete: true, ..Default::default() } }
    }

    pub fn unreadable(reason: impl Into<String>) -> Listing {
        let reason = reason.into();
        Listing {
            entries: Vec::new(),
            status: ListingStatus {
                unreadable: Some(reason.clone()),
                note: Some(format!("This workspace could not be read: {reason}")),
                ..Default::default()
            },
        }
    }

    /// Entries without the excluded ones, at most [`MAX_ENTRIES`], and the status the cut says.
    pub fn from_entries(raw: Vec<Entry>, truncated: bool) -> Listing {
        let deepest_dir = raw.iter().filter(|e| e.is_dir).map(|e| e.path.split('/').count()).max().unwrap_or(0);
        let hit_entries = raw.len() >= MAX_ENTRIES;
        let hit_depth = deepest_dir >= MAX_DEPTH as usize;
        let mut entries: Vec<Entry> = raw.into_iter().filter(|e| !is_excluded(&e.path)).collect();
        let over = entries.len() > MAX_ENTRIES;
        entries.truncate(MAX_ENTRIES);
        let limited = over || (truncated && (hit_entries || hit_depth));
        let incomplete = truncated && !limited;
        Listing { entries, status: status(limited, incomplete) }
    }
}

impl Listing {
    /// A listing walked folder by folder (Daytona's): excluded entries already left out, `cut`
    /// when a limit stopped the walk, `failed` when a folder could not be read.
    pub fn from_walk(entries: Vec<Entry>, cut: bool, failed: bool) -> Listing {
        Listing { entries, status: status(cut, failed) }
    }
}

fn status(limited: bool, incomplete: bool) -> ListingStatus {
    let note = if limited {
        Some(format!(
            "This is not every file: a listing stops at {MAX_DEPTH} levels of folders and {} entries.",
            thousands(MAX_ENTRIES)
        ))
    } else if incomplete {
        Some("This is not every file: a folder could not be read and was skipped.".to_string())
    } else {
        None
    };
    ListingStatus { complete: !limited && !incomplete, limited, incomplete, unreadable: None, note }
}

fn thousands(n: usize) -> String {
    if n >= 1000 {
        format!("{},{:03}", n / 1000, n % 1000)
    } else {
        n.to_string()
    }
}

/// Counts what a request asks of hosts, and how long it waited for their answers.
#[derive(Debug, Default)]
pub struct HostCounter {
    requests: AtomicU64,
    waited_micros: AtomicU64,
}

impl HostCounter {
    pub fn add(&self, n: u64) {
        self.requests.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    /// Adds time spent waiting for a host (requests waited for one after another).
    pub fn waited(&self, d: Duration) {
        self.waited_micros.fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }
    /// Times `work`, a host request, as waiting.
    pub async fn timed<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        let started = Instant::now();
        let out = work.await;
        self.waited(started.elapsed());
        out
    }
    pub fn host_time(&self) -> Duration {
        Duration::from_micros(self.waited_micros.load(Ordering::Relaxed))
    }
}

fn options(path: &str, max_depth: u32) -> TreeOptions {
    TreeOptions { path: path.to_string(), max_depth, max_entries: MAX_ENTRIES as u32 }
}

/// The listings of `sessions` (workspace id, session id) on one host, by workspace id.
pub async fn on_host(
    client: &SandboxdClient,
    sessions: &[(String, String)],
    counter: &HostCounter,
) -> HashMap<String, Listing> {
    let mut out = HashMap::new();
    for chunk in sessions.chunks(MAX_TREES) {
        let ids: Vec<&str> = chunk.iter().map(|(_, s)| s.as_str()).collect();
        counter.add(1);
        let answers: Vec<(String, Result<Tree<Entry>, Listing>)> = match client
            .workspace_trees_timed::<Entry, _>(&ids, &options(".", MAX_DEPTH))
            .await
        {
            Ok((results, waited)) => {
                counter.waited(waited);
                chunk
                    .iter()
                    .zip(results)
                    .map(|((ws, _), r)| (ws.clone(), r.into_result().map_err(|e| failed(&e))))
                    .collect()
            }
            Err(SandboxdError::VersionMismatch { missing, .. }) if missing.iter().any(|m| m == "/workspaces/trees") => {
                one_by_one(client, chunk, counter).await
            }
            Err(e) => chunk.iter().map(|(ws, _)| (ws.clone(), Err(failed(&e)))).collect(),
        };
        let finished = stream::iter(answers.into_iter().zip(chunk))
            .map(|((ws, answer), (_, session))| async move { (ws, complete(client, session, answer, counter).await) })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        out.extend(finished);
    }
    out
}

/// A host older than 0.2.37: one `tree` per workspace.
async fn one_by_one(
    client: &SandboxdClient,
    chunk: &[(String, String)],
    counter: &HostCounter,
) -> Vec<(String, Result<Tree<Entry>, Listing>)> {
    stream::iter(chunk)
        .map(|(ws, session)| async move {
            counter.add(1);
            let tree = counter.timed(client.workspace_tree_of(session, &options(".", MAX_DEPTH))).await;
            (ws.clone(), tree.map_err(|e| failed(&e)))
        })
        .buffered(CONCURRENCY)
        .collect()
        .await
}

/// One workspace's answer as a listing; a cut listing whose budget excluded folders used up is
/// completed by asking again for each top-level folder that is not excluded.
async fn complete(
    client: &SandboxdClient,
    session: &str,
    answer: Result<Tree<Entry>, Listing>,
    counter: &HostCounter,
) -> Listing {
    let tree = match answer {
        Ok(tree) => tree,
        Err(listing) => return listing,
    };
    let wasted =
        tree.truncated && tree.entries.len() >= MAX_ENTRIES && tree.entries.iter().any(|e| is_excluded(&e.path));
    if !wasted {
        return Listing::from_entries(tree.entries, tree.truncated);
    }
    let top: Vec<Entry> = tree.entries.into_iter().filter(|e| !e.path.contains('/')).collect();
    let folders: Vec<String> =
        top.iter().filter(|e| e.is_dir && !is_excluded(&e.path)).map(|e| e.path.clone()).collect();
    let parts = stream::iter(folders)
        .map(|folder| async move {
            counter.add(1);
            counter.timed(client.workspace_tree_of::<Entry>(session, &options(&folder, MAX_DEPTH - 1))).await
        })
        .buffered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let mut raw = top;
    let mut truncated = false;
    let mut deepest_cut = false;
    for part in parts {
        match part {
            Ok(t) => {
                truncated |= t.truncated;
                deepest_cut |= t.truncated && t.entries.len() >= MAX_ENTRIES;
                raw.extend(t.entries);
            }
            // A folder that does not answer is skipped; the listing is marked incomplete.
            Err(_) => truncated = true,
        }
    }
    let mut listing = Listing::from_entries(raw, truncated);
    if deepest_cut && !listing.status.limited {
        listing.status = status(true, false);
    }
    listing
}

/// A workspace whose listing failed: one the host never stored is simply empty; anything else is
/// unreadable, with the reason.
pub fn failed(e: &SandboxdError) -> Listing {
    match e {
        SandboxdError::NotFound { detail } if detail.starts_with("No workspace for session") => Listing::empty(),
        SandboxdError::VersionMismatch { missing, .. }
            if missing.iter().any(|m| m == "/workspaces/{session_id}/tree") =>
        {
            Listing::unreadable(
                "this host is older than sandboxd 0.2.35 and cannot list a workspace's stored files; upgrade it",
            )
        }
        other => Listing::unreadable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> Entry {
        Entry { path: path.into(), is_dir: false, size: Some(1), modified_at: None }
    }

    fn dir(path: &str) -> Entry {
        Entry { is_dir: true, size: None, ..file(path) }
    }

    #[test]
    fn an_entry_is_decoded_from_the_hosts_with_its_name_from_the_path() {
        let host = r#"[{"name":"b.md","path":"notes/b.md","is_dir":false,"size":3,"modified_at":"2026-11-29T21:01:32.206251+00:00"},
            {"name":"notes","path":"notes","is_dir":true,"size":null,"modified_at":null}]"#;
        let entries: Vec<Entry> = serde_json::from_str(host).expect("entries");
        assert_eq!((entries[0].name(), entries[0].size), ("b.md", Some(3)));
        assert_eq!(
            entries[0].modified_at.map(|s| s.as_str().to_string()).as_deref(),
            Some("2026-11-29T21:01:32.206251+00:00")
        );
        assert_eq!((entries[1].name(), entries[1].is_dir, entries[1].modified_at), ("notes", true, None));
    }

    #[test]
    fn excluded_entries_are_dropped_and_not_counted() {
        let l = Listing::from_entries(
            vec![dir("node_modules"), file("node_modules/a.js"), file("a.txt"), dir(".git"), file("skills/x.md")],
            false,
        );
        assert_eq!(l.entries.iter().map(|e| e.path.as_str()).collect::<Vec<_>>(), ["a.txt"]);
        assert!(l.status.complete);
    }

    #[test]
    fn a_cut_says_why() {
        let many: Vec<Entry> = (0..MAX_ENTRIES).map(|i| file(&format!("f{i}"))).collect();
        let l = Listing::from_entries(many, true);
        assert!(l.status.limited && !l.status.incomplete && l.status.note.as_deref().unwrap_or("").contains("2,000"));
        let l = Listing::from_entries(vec![file("a"), dir("b")], true);
        assert!(l.status.incomplete && !l.status.limited, "{:?}", l.status);
        let deep = dir("a/b/c/d/e/f");
        let l = Listing::from_entries(vec![deep], true);
        assert!(l.status.limited);
    }

    #[test]
    fn a_workspace_never_stored_is_empty_and_a_refusing_one_unreadable() {
        let l = failed(&SandboxdError::NotFound { detail: "No workspace for session: x".into() });
        assert!(l.status.complete && l.entries.is_empty());
        let l = failed(&SandboxdError::Invalid { detail: "Path '.' is outside the workspace".into() });
        assert!(l.status.unreadable.is_some());
    }
}
