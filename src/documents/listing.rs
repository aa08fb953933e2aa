//! A workspace's listing, whatever its host: the entries Documents keeps (excluded ones dropped,
//! at most 6 levels and 2,000 entries), how complete it is and why, and the count of what a
//! request asked of hosts. A `state` workspace is listed from its document (no host cost); a
//! host kind's own listing lives in its folder (`sandbox/hosts/<kind>/documents`), reached
//! through `hosts/dispatch/stored_files.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::exclusions::is_excluded;
use serde::Deserialize;

use super::model::ListingStatus;
use super::stamp::{self, Stamp};

/// Levels the host lists below the workspace root.
pub const MAX_DEPTH: u32 = 6;
/// Entries the host lists per workspace, and the most we keep.
pub const MAX_ENTRIES: usize = 2000;

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

/// The status of a listing `limited` by a cut or `incomplete` because a folder could not be read.
pub fn status(limited: bool, incomplete: bool) -> ListingStatus {
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
}
