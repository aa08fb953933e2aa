//! Shaping listings: files as items, groups of a workspace (loose files and attachments as rows,
//! each other top-level folder as one row), the newest files, search, and a workspace's tree.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use super::exclusions::is_excluded;
use super::filters::Sort;
use super::listing::{Entry, Listing};
use super::model::{AddedBy, FileItem, FileKind, FolderRow, ListingStatus, TreeNode, WorkspaceGroup, WorkspaceSummary};
use super::stamp::Stamp;
use super::thumbnails::{extension, kind_of};
use crate::sandbox::workspaces::document::Document;

/// Files shown in a folder's row.
const FIRST_FILES: usize = 3;

/// The "who put it there" filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    Anyone,
    Person,
    Agent,
}

impl Who {
    pub fn parse(s: &str) -> Option<Who> {
        match s {
            "anyone" => Some(Who::Anyone),
            "person" => Some(Who::Person),
            "agent" => Some(Who::Agent),
            _ => None,
        }
    }
    pub fn admits(self, added_by: AddedBy) -> bool {
        match self {
            Who::Anyone => true,
            Who::Person => added_by == AddedBy::Person,
            Who::Agent => added_by == AddedBy::Agent,
        }
    }
}

pub fn file_item(workspace_id: &str, e: &Entry) -> FileItem {
    FileItem {
        workspace_id: workspace_id.to_string(),
        path: e.path.clone(),
        name: e.name().to_string(),
        size: e.size,
        modified_at: e.modified_at.map(|at| at.as_str().to_string()),
        kind: kind_of(&e.path),
        added_by: AddedBy::of(&e.path),
        added_by_name: None,
    }
}

/// A listing's files (folders left out), by path.
pub fn files_of(workspace_id: &str, listing: &Listing) -> Vec<FileItem> {
    let mut files: Vec<FileItem> =
        listing.entries.iter().filter(|e| !e.is_dir).map(|e| file_item(workspace_id, e)).collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// [`files_of`], taking the entries (nothing copied but the workspace id).
pub fn into_files(workspace_id: &str, entries: Vec<Entry>) -> Vec<FileItem> {
    let mut files: Vec<FileItem> = entries
        .into_iter()
        .filter(|e| !e.is_dir)
        .map(|e| FileItem {
            workspace_id: workspace_id.to_string(),
            kind: kind_of(&e.path),
            added_by: AddedBy::of(&e.path),
            added_by_name: None,
            name: e.name().to_string(),
            modified_at: e.modified_at.map(|at| at.as_str().to_string()),
            path: e.path,
            size: e.size,
        })
        .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// Newest first (by modification time, then path, then workspace).
fn newer_first(a: &FileItem, b: &FileItem) -> std::cmp::Ordering {
    Reverse(a.modified_at.as_deref())
        .cmp(&Reverse(b.modified_at.as_deref()))
        .then_with(|| a.path.cmp(&b.path))
        .then_with(|| a.workspace_id.cmp(&b.workspace_id))
}

/// The `limit` newest of `files`, newest first, without sorting them all.
pub fn newest_of(files: &[FileItem], limit: usize) -> Vec<&FileItem> {
    let mut refs: Vec<&FileItem> = files.iter().collect();
    if limit == 0 {
        return Vec::new();
    }
    if refs.len() > limit {
        refs.select_nth_unstable_by(limit - 1, |a, b| newer_first(a, b));
        refs.truncate(limit);
    }
    refs.sort_by(|a, b| newer_first(a, b));
    refs
}

/// Files and bytes together.
pub fn totals(files: &[FileItem]) -> (u64, u64) {
    (files.len() as u64, files.iter().map(|f| f.size.unwrap_or(0)).sum())
}

/// A workspace's group: top-level files and everything under `uploads/` as rows, each other
/// top-level folder as one row with its first files.
pub fn group(workspace: WorkspaceSummary, files: &[FileItem], listing: ListingStatus) -> WorkspaceGroup {
    let (file_count, size) = totals(files);
    let mut rows = Vec::new();
    let mut folders: BTreeMap<&str, FolderRow> = BTreeMap::new();
    for f in files {
        match f.path.split_once('/') {
            None => rows.push(f.clone()),
            Some(("uploads", _)) => rows.push(f.clone()),
            Some((top, _)) => {
                let row = folders.entry(top).or_insert_with(|| FolderRow {
                    name: top.to_string(),
                    path: top.to_string(),
                    file_count: 0,
                    size: 0,
                    first_files: Vec::new(),
                    modified_at: None,
                });
                row.file_count += 1;
                row.size += f.size.unwrap_or(0);
                if f.modified_at > row.modified_at {
                    row.modified_at = f.modified_at.clone();
                }
                if row.first_files.len() < FIRST_FILES {
                    row.first_files.push(f.clone());
                }
            }
        }
    }
    WorkspaceGroup { workspace, files: rows, folders: folders.into_values().collect(), file_count, size, listing }
}

/// A workspace's group straight from its admitted files (not folders), in any order: the same
/// group as [`group`] of their items sorted by path, without a [`FileItem`] per file or a sort of
/// them all — only the rows and each folder's first files become items. Rows and folders are
/// then put in `sort`'s order (a folder by its newest file, its name or its bytes).
pub fn group_of(
    workspace: WorkspaceSummary,
    workspace_id: &str,
    files: &[&Entry],
    listing: ListingStatus,
    sort: Sort,
) -> WorkspaceGroup {
    struct Folder<'a> {
        file_count: u64,
        size: u64,
        first: Vec<&'a Entry>,
        newest: Option<Stamp>,
    }
    let mut file_count = 0u64;
    let mut size = 0u64;
    let mut rows: Vec<&Entry> = Vec::new();
    let mut folders: BTreeMap<&str, Folder<'_>> = BTreeMap::new();
    for e in files {
        file_count += 1;
        size += e.size.unwrap_or(0);
        match e.path.split_once('/') {
            None | Some(("uploads", _)) => rows.push(e),
            Some((top, _)) => {
                let f = folders.entry(top).or_insert_with(|| Folder {
                    file_count: 0,
                    size: 0,
                    first: Vec::new(),
                    newest: None,
                });
                f.file_count += 1;
                f.size += e.size.unwrap_or(0);
                if e.modified_at > f.newest {
                    f.newest = e.modified_at;
                }
                // The first few by path: kept sorted, the last dropped when one more comes in.
                let at = f.first.partition_point(|x| x.path < e.path);
                if at < FIRST_FILES {
                    f.first.insert(at, e);
                    f.first.truncate(FIRST_FILES);
                }
            }
        }
    }
    let mut items: Vec<FileItem> = rows.into_iter().map(|e| file_item(workspace_id, e)).collect();
    items.sort_by(|a, b| sort.cmp(a, b));
    let mut folder_rows: Vec<FolderRow> = folders
        .into_iter()
        .map(|(top, f)| FolderRow {
            name: top.to_string(),
            path: top.to_string(),
            file_count: f.file_count,
            size: f.size,
            first_files: f.first.into_iter().map(|e| file_item(workspace_id, e)).collect(),
            modified_at: f.newest.map(|at| at.as_str().to_string()),
        })
        .collect();
    match sort {
        Sort::Newest => folder_rows.sort_by(|a, b| b.modified_at.cmp(&a.modified_at).then_with(|| a.name.cmp(&b.name))),
        Sort::Name => folder_rows.sort_by_key(|f| f.name.to_lowercase()),
        Sort::Size => folder_rows.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name))),
    }
    WorkspaceGroup { workspace, files: items, folders: folder_rows, file_count, size, listing }
}

/// The `limit` newest of one workspace's files (by modification time, then path), newest first,
/// without sorting them all.
pub fn newest_entries<'a>(files: &[&'a Entry], limit: usize) -> Vec<&'a Entry> {
    fn newer(a: &Entry, b: &Entry) -> std::cmp::Ordering {
        Reverse(a.modified_at).cmp(&Reverse(b.modified_at)).then_with(|| a.path.cmp(&b.path))
    }
    if limit == 0 {
        return Vec::new();
    }
    let mut refs: Vec<&Entry> = files.to_vec();
    if refs.len() > limit {
        refs.select_nth_unstable_by(limit - 1, |a, b| newer(a, b));
        refs.truncate(limit);
    }
    refs.sort_by(|a, b| newer(a, b));
    refs
}

/// A search, lower-cased once: [`matches`] for many files of one workspace.
pub struct Search {
    q: String,
    ext: String,
    agent_matches: bool,
}

impl Search {
    pub fn new(q: &str, agent_name: Option<&str>) -> Search {
        let q = q.to_lowercase();
        let ext = q.trim_start_matches('.').to_string();
        let agent_matches = agent_name.is_some_and(|a| a.to_lowercase().contains(&q));
        Search { q, ext, agent_matches }
    }

    pub fn matches(&self, path: &str) -> bool {
        self.agent_matches
            || path.to_lowercase().contains(&self.q)
            || (!self.ext.is_empty() && extension(path) == self.ext)
    }
}

/// The `limit` newest files (by modification time, then path).
pub fn newest<T>(mut files: Vec<(FileItem, T)>, limit: usize) -> Vec<(FileItem, T)> {
    if limit == 0 {
        return Vec::new();
    }
    if files.len() > limit {
        files.select_nth_unstable_by(limit - 1, |(a, _), (b, _)| newer_first(a, b));
        files.truncate(limit);
    }
    files.sort_by(|(a, _), (b, _)| newer_first(a, b));
    files
}

/// A search hit: the path holds `q` (ignoring case), the agent's name does, or `q` is the
/// extension (`pdf`, `.pdf`).
pub fn matches(q: &str, file: &FileItem, agent_name: Option<&str>) -> bool {
    Search::new(q, agent_name).matches(&file.path)
}

pub fn glyph(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Image => "image",
        FileKind::Pdf => "pdf",
        FileKind::Text => "text",
        FileKind::Other => "file",
    }
}

/// Epoch milliseconds written as a host writes a time (`2026-11-29T21:01:32.206000+00:00`), so a
/// `state` file sorts among a host's files by when it was written.
fn stamp_of_ms(ms: i64) -> Option<Stamp> {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()?;
    let fmt =
        time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]+00:00");
    Stamp::new(&t.format(&fmt).ok()?)
}

/// A `state` workspace's files from its document (excluded ones dropped): complete, no host.
pub fn document_listing(doc: &Document) -> Listing {
    let mut listing = Listing::empty();
    listing.entries = doc
        .entries()
        .filter(|(path, _, _, _)| !is_excluded(path))
        .map(|(path, dir, size, modified_at)| Entry {
            path: path.to_string(),
            is_dir: dir,
            size: (!dir).then_some(size),
            modified_at: modified_at.and_then(stamp_of_ms),
        })
        .collect();
    listing
}

/// The tree in drawing order: at each level folders first, then files, each by name; a folder
/// counts the files below it.
pub fn tree(listing: &Listing) -> Vec<TreeNode> {
    #[derive(Default)]
    struct Dir<'a> {
        dirs: BTreeMap<&'a str, Dir<'a>>,
        files: BTreeMap<&'a str, &'a Entry>,
    }
    let mut root = Dir::default();
    for e in &listing.entries {
        let parts: Vec<&str> = e.path.split('/').collect();
        let mut at = &mut root;
        let (last, parents) = match parts.split_last() {
            Some(x) => x,
            None => continue,
        };
        for p in parents {
            at = at.dirs.entry(p).or_default();
        }
        if e.is_dir {
            at.dirs.entry(last).or_default();
        } else {
            at.files.insert(last, e);
        }
    }
    fn totals(d: &Dir<'_>) -> (u64, u64) {
        let mut n = d.files.len() as u64;
        let mut size: u64 = d.files.values().map(|e| e.size.unwrap_or(0)).sum();
        for sub in d.dirs.values() {
            let (a, b) = totals(sub);
            n += a;
            size += b;
        }
        (n, size)
    }
    fn walk(d: &Dir<'_>, prefix: &str, depth: u32, out: &mut Vec<TreeNode>) {
        for (name, sub) in &d.dirs {
            let path = if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
            let (file_count, size) = totals(sub);
            out.push(TreeNode {
                added_by: AddedBy::of(&path),
                added_by_name: None,
                path: path.clone(),
                name: name.to_string(),
                depth,
                is_dir: true,
                file_count,
                size,
                modified_at: None,
                kind: None,
            });
            walk(sub, &path, depth + 1, out);
        }
        for (name, e) in &d.files {
            out.push(TreeNode {
                path: e.path.clone(),
                name: name.to_string(),
                depth,
                is_dir: false,
                file_count: 1,
                size: e.size.unwrap_or(0),
                modified_at: e.modified_at.map(|at| at.as_str().to_string()),
                kind: Some(kind_of(&e.path)),
                added_by: AddedBy::of(&e.path),
                added_by_name: None,
            });
        }
    }
    let mut out = Vec::new();
    walk(&root, "", 0, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::stamp::Stamp;

    fn entry(path: &str, is_dir: bool) -> Entry {
        Entry { path: path.into(), is_dir, size: (!is_dir).then_some(10), modified_at: None }
    }

    #[test]
    fn a_tree_lists_folders_first_alphabetically_with_counts() {
        let mut l = Listing::empty();
        l.entries = vec![
            entry("z.txt", false),
            entry("b", true),
            entry("a", true),
            entry("b/x.txt", false),
            entry("b/c/y.md", false),
        ];
        let t = tree(&l);
        let order: Vec<(&str, u32, u64)> = t.iter().map(|n| (n.path.as_str(), n.depth, n.file_count)).collect();
        assert_eq!(
            order,
            [("a", 0, 0), ("b", 0, 2), ("b/c", 1, 1), ("b/c/y.md", 2, 1), ("b/x.txt", 1, 1), ("z.txt", 0, 1)]
        );
    }

    #[test]
    fn the_newest_files_are_chosen_without_sorting_all_and_agree_with_a_full_sort() {
        let files: Vec<FileItem> = (0..500u32)
            .map(|i| {
                let mut e = entry(&format!("d{}/f{i:03}.txt", i % 7), false);
                // Ties on the time are broken by the path.
                e.modified_at = Stamp::new(&format!("2026-12-01T10:{:02}:00Z", (i * 37) % 60));
                into_files(&format!("w{}", i % 3), vec![e]).remove(0)
            })
            .collect();
        let mut all: Vec<&FileItem> = files.iter().collect();
        all.sort_by(|a, b| newer_first(a, b));
        let key = |f: &FileItem| (f.workspace_id.clone(), f.path.clone());
        let expected: Vec<_> = all[..40].iter().map(|f| key(f)).collect();
        assert_eq!(newest_of(&files, 40).into_iter().map(key).collect::<Vec<_>>(), expected);
        let owned = newest(files.iter().cloned().map(|f| (f, ())).collect(), 40);
        assert_eq!(owned.iter().map(|(f, _)| key(f)).collect::<Vec<_>>(), expected);
        assert_eq!(newest_of(&files[..5], 40).len(), 5);
        assert!(newest_of(&files, 0).is_empty());
    }

    #[test]
    fn a_group_from_entries_in_any_order_is_the_group_of_the_sorted_items() {
        let mut entries: Vec<Entry> = Vec::new();
        for i in 0..300u32 {
            let path = match i % 5 {
                0 => format!("top{i}.txt"),
                1 => format!("uploads/u{i}.png"),
                2 => format!("reports/r{}.md", 300 - i),
                3 => format!("data/deep/d{i}.csv"),
                _ => format!("z{}/f{i}.txt", i % 4),
            };
            let mut e = entry(&path, false);
            e.size = Some(u64::from(i));
            entries.push(e);
        }
        // The host's order is not by path.
        entries.reverse();
        entries.swap(3, 150);
        let summary = || WorkspaceSummary {
            id: "w".into(),
            backend: "sandboxd".into(),
            scope: crate::vocabulary::scope::Scope::Conversation,
            kind_label: String::new(),
            access_label: String::new(),
            owner_name: None,
            agent_id: None,
            agent_name: None,
            conversation_id: None,
            conversation_title: None,
            title: String::new(),
            location: String::new(),
            updated_at: 0,
            used_bytes: None,
            limit_bytes: None,
            recovery_of: None,
        };
        let status = || ListingStatus { complete: true, ..Default::default() };
        let expected = group(summary(), &into_files("w", entries.clone()), status());
        let refs: Vec<&Entry> = entries.iter().collect();
        let mut got = group_of(summary(), "w", &refs, status(), Sort::Name);
        got.files.sort_by(|a, b| a.path.cmp(&b.path));
        got.folders.sort_by(|a, b| a.name.cmp(&b.name));
        let paths = |files: &[FileItem]| files.iter().map(|f| f.path.clone()).collect::<Vec<_>>();
        assert_eq!(paths(&got.files), paths(&expected.files));
        assert_eq!((got.file_count, got.size), (expected.file_count, expected.size));
        assert_eq!(got.folders.len(), expected.folders.len());
        for (g, e) in got.folders.iter().zip(&expected.folders) {
            assert_eq!((&g.name, g.file_count, g.size), (&e.name, e.file_count, e.size));
            assert_eq!(paths(&g.first_files), paths(&e.first_files));
        }
        assert_eq!(
            got.folders.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["data", "reports", "z0", "z1", "z2", "z3"]
        );
    }

    #[test]
    fn the_newest_entries_agree_with_the_newest_items() {
        let entries: Vec<Entry> = (0..500u32)
            .map(|i| {
                let mut e = entry(&format!("d{}/f{i:03}.txt", i % 7), false);
                e.modified_at = Stamp::new(&format!("2026-12-01T10:{:02}:00Z", (i * 37) % 60));
                e
            })
            .collect();
        let items = into_files("w", entries.clone());
        let refs: Vec<&Entry> = entries.iter().collect();
        let got: Vec<&str> = newest_entries(&refs, 40).into_iter().map(|e| e.path.as_str()).collect();
        let expected: Vec<&str> = newest_of(&items, 40).into_iter().map(|f| f.path.as_str()).collect();
        assert_eq!(got, expected);
        assert!(newest_entries(&refs, 0).is_empty());
    }

    #[test]
    fn search_matches_path_agent_or_extension() {
        let f = file_item("w", &entry("reports/Q3.PDF", false));
        assert!(matches("q3", &f, None));
        assert!(matches("pdf", &f, None));
        assert!(matches(".pdf", &f, None));
        assert!(matches("writer", &f, Some("Report Writer")));
        assert!(!matches("png", &f, Some("x")));
    }

    #[test]
    fn uploads_are_attached_by_a_person() {
        assert_eq!(AddedBy::of("uploads/a.png"), AddedBy::Person);
        assert_eq!(AddedBy::of("uploadsx/a.png"), AddedBy::Agent);
        assert!(Who::Person.admits(AddedBy::Person) && !Who::Person.admits(AddedBy::Agent));
    }
}
