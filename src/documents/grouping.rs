//! Shaping listings: files as items, groups of a workspace (loose files and attachments as rows,
//! each other top-level folder as one row), the newest files, search, and a workspace's tree.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use super::exclusions::is_excluded;
use super::listing::{Entry, Listing};
use super::model::{AddedBy, FileItem, FileKind, FolderRow, ListingStatus, TreeNode, WorkspaceGroup, WorkspaceSummary};
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
        name: e.name.clone(),
        size: e.size,
        modified_at: e.modified_at.clone(),
        kind: kind_of(&e.path),
        added_by: AddedBy::of(&e.path),
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
            path: e.path,
            name: e.name,
            size: e.size,
            modified_at: e.modified_at,
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
                });
                row.file_count += 1;
                row.size += f.size.unwrap_or(0);
                if row.first_files.len() < FIRST_FILES {
                    row.first_files.push(f.clone());
                }
            }
        }
    }
    WorkspaceGroup { workspace, files: rows, folders: folders.into_values().collect(), file_count, size, listing }
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
    let q = q.to_lowercase();
    let ext = q.trim_start_matches('.');
    file.path.to_lowercase().contains(&q)
        || agent_name.is_some_and(|a| a.to_lowercase().contains(&q))
        || (!ext.is_empty() && extension(&file.path) == ext)
}

pub fn glyph(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Image => "image",
        FileKind::Pdf => "pdf",
        FileKind::Text => "text",
        FileKind::Other => "file",
    }
}

/// A `state` workspace's files from its document (excluded ones dropped): complete, no host.
pub fn document_listing(doc: &Document) -> Listing {
    let mut listing = Listing::empty();
    listing.entries = doc
        .entries()
        .filter(|(path, _, _)| !is_excluded(path))
        .map(|(path, dir, size)| Entry {
            path: path.to_string(),
            name: path.rsplit('/').next().unwrap_or(path).to_string(),
            is_dir: dir,
            size: (!dir).then_some(size),
            modified_at: None,
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
                modified_at: e.modified_at.clone(),
                kind: Some(kind_of(&e.path)),
                added_by: AddedBy::of(&e.path),
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

    fn entry(path: &str, is_dir: bool) -> Entry {
        Entry {
            path: path.into(),
            name: path.rsplit('/').next().unwrap_or(path).into(),
            is_dir,
            size: (!is_dir).then_some(10),
            modified_at: None,
        }
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
                e.modified_at = Some(format!("2026-12-01T10:{:02}:00Z", (i * 37) % 60));
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
