//! The `state` backend: a workspace kept as one JSON document in our database. Files and empty
//! folders both count toward the storage limit: a file counts its path and its bytes, an empty
//! folder its path. A change that would cross the limit is refused and the document stays as it
//! was; a document over a lowered limit may still shrink.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use super::error::WorkspaceError;
use super::model::Entry;
use crate::vocabulary::paths::WorkspacePath;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Document {
    pub(super) entries: BTreeMap<String, DocEntry>,
}

/// One path of a document. Two entries are the same when their kind and bytes are (the merge's
/// question): when each was written does not make them differ.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct DocEntry {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) dir: bool,
    /// base64 of the bytes.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(super) data: String,
    #[serde(default)]
    pub(super) size: u64,
    /// When a file was last written, epoch milliseconds (absent in documents written before it
    /// was kept, and for folders).
    #[serde(default, rename = "modified", skip_serializing_if = "Option::is_none")]
    pub(super) modified_at: Option<i64>,
}

impl PartialEq for DocEntry {
    fn eq(&self, other: &Self) -> bool {
        (self.dir, &self.data, self.size) == (other.dir, &other.data, other.size)
    }
}

impl Eq for DocEntry {}

impl Document {
    pub fn parse(text: Option<&str>) -> Result<Document, WorkspaceError> {
        match text {
            None => Ok(Document::default()),
            Some(t) => {
                serde_json::from_str(t).map_err(|e| WorkspaceError::Internal(anyhow::anyhow!("state document: {e}")))
            }
        }
    }

    /// Every entry, by path: (workspace-relative path, is a folder, bytes, when a file was last
    /// written in epoch milliseconds if known). For Documents, which lists a `state` workspace
    /// from our database.
    pub fn entries(&self) -> impl Iterator<Item = (&str, bool, u64, Option<i64>)> {
        self.entries.iter().map(|(path, e)| (path.as_str(), e.dir, e.size, e.modified_at))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"entries\":{}}".into())
    }

    fn has_children(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.entries.range(prefix.clone()..).next().is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    /// Bytes counted against the limit.
    pub fn usage(&self) -> u64 {
        self.entries
            .iter()
            .map(|(path, e)| {
                if e.dir {
                    if self.has_children(path) {
                        0
                    } else {
                        path.len() as u64
                    }
                } else {
                    path.len() as u64 + e.size
                }
            })
            .sum()
    }

    fn is_dir(&self, p: &WorkspacePath) -> bool {
        p.is_root() || self.entries.get(p.relative()).is_some_and(|e| e.dir)
    }

    fn ensure_parents(&mut self, p: &WorkspacePath) -> Result<(), WorkspaceError> {
        let mut chain = Vec::new();
        let mut cur = p.parent();
        while let Some(parent) = cur {
            if parent.is_root() {
                break;
            }
            chain.push(parent.clone());
            cur = parent.parent();
        }
        for dir in chain.into_iter().rev() {
            match self.entries.get(dir.relative()) {
                Some(e) if !e.dir => {
                    return Err(WorkspaceError::NotADirectory(format!("{} is a file, not a folder.", dir.display())))
                }
                Some(_) => {}
                None => {
                    self.entries.insert(dir.relative().to_string(), DocEntry { dir: true, ..Default::default() });
                }
            }
        }
        Ok(())
    }

    pub fn write(&mut self, p: &WorkspacePath, bytes: &[u8]) -> Result<(), WorkspaceError> {
        if self.is_dir(p) {
            return Err(WorkspaceError::IsADirectory(format!("{} is a folder.", p.display())));
        }
        self.ensure_parents(p)?;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let entry = DocEntry { dir: false, data, size: bytes.len() as u64, modified_at: Some(crate::db::now_ms()) };
        self.entries.insert(p.relative().to_string(), entry);
        Ok(())
    }

    pub fn read(&self, p: &WorkspacePath) -> Result<Vec<u8>, WorkspaceError> {
        if self.is_dir(p) {
            return Err(WorkspaceError::IsADirectory(format!("{} is a folder.", p.display())));
        }
        let e = self.entries.get(p.relative()).ok_or_else(|| not_found(p))?;
        base64::engine::general_purpose::STANDARD
            .decode(&e.data)
            .map_err(|e| WorkspaceError::Internal(anyhow::anyhow!("state document: {e}")))
    }

    pub fn mkdir(&mut self, p: &WorkspacePath) -> Result<(), WorkspaceError> {
        if p.is_root() {
            return Ok(());
        }
        if let Some(e) = self.entries.get(p.relative()) {
            return if e.dir {
                Ok(())
            } else {
                Err(WorkspaceError::AlreadyExists(format!("{} is a file.", p.display())))
            };
        }
        self.ensure_parents(p)?;
        self.entries.insert(p.relative().to_string(), DocEntry { dir: true, ..Default::default() });
        Ok(())
    }

    pub fn remove(&mut self, p: &WorkspacePath) -> Result<(), WorkspaceError> {
        if p.is_root() {
            return Err(WorkspaceError::Refused("The workspace root cannot be removed.".into()));
        }
        let e = self.entries.remove(p.relative()).ok_or_else(|| not_found(p))?;
        if e.dir {
            let prefix = format!("{}/", p.relative());
            self.entries.retain(|k, _| !k.starts_with(&prefix));
        }
        Ok(())
    }

    pub fn stat(&self, p: &WorkspacePath) -> Result<Entry, WorkspaceError> {
        if p.is_root() {
            return Ok(Entry { name: String::new(), path: String::new(), is_dir: true, size: None, is_link: false });
        }
        let e = self.entries.get(p.relative()).ok_or_else(|| not_found(p))?;
        Ok(entry(p.relative(), e))
    }

    pub fn ls(&self, p: &WorkspacePath) -> Result<Vec<Entry>, WorkspaceError> {
        if !p.is_root() {
            match self.entries.get(p.relative()) {
                None => return Err(not_found(p)),
                Some(e) if !e.dir => return Err(WorkspaceError::NotADirectory(format!("{} is a file.", p.display()))),
                _ => {}
            }
        }
        let prefix = if p.is_root() { String::new() } else { format!("{}/", p.relative()) };
        Ok(self
            .entries
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix) && !k[prefix.len()..].contains('/') && k.len() > prefix.len())
            .map(|(k, e)| entry(k, e))
            .collect())
    }
}

fn entry(path: &str, e: &DocEntry) -> Entry {
    Entry {
        name: path.rsplit('/').next().unwrap_or(path).to_string(),
        path: path.to_string(),
        is_dir: e.dir,
        size: if e.dir { None } else { Some(e.size) },
        is_link: false,
    }
}

fn not_found(p: &WorkspacePath) -> WorkspaceError {
    WorkspaceError::NotFound(format!("{} does not exist.", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::paths::normalise;

    fn p(s: &str) -> WorkspacePath {
        normalise(s).expect("path")
    }

    #[test]
    fn write_read_ls_remove_round_trip() {
        let mut d = Document::default();
        d.write(&p("notes/a.txt"), b"hello").expect("write");
        assert_eq!(d.read(&p("notes/a.txt")).expect("read"), b"hello");
        let names: Vec<_> = d.ls(&p("notes")).expect("ls").into_iter().map(|e| e.name).collect();
        assert_eq!(names, vec!["a.txt"]);
        let root: Vec<_> = d.ls(&WorkspacePath::root()).expect("ls").into_iter().map(|e| (e.name, e.is_dir)).collect();
        assert_eq!(root, vec![("notes".to_string(), true)]);
        d.remove(&p("notes")).expect("remove");
        assert!(matches!(d.stat(&p("notes/a.txt")), Err(WorkspaceError::NotFound(_))));
        assert_eq!(d.usage(), 0);
    }

    #[test]
    fn files_and_empty_folders_count_toward_the_limit() {
        let mut d = Document::default();
        d.mkdir(&p("empty")).expect("mkdir");
        assert_eq!(d.usage(), 5);
        d.write(&p("a/b.txt"), b"12345").expect("write");
        // "a" has a child, so only the file counts: 7 path + 5 bytes, plus "empty".
        assert_eq!(d.usage(), 5 + 7 + 5);
    }

    #[test]
    fn a_file_keeps_when_it_was_written_and_an_old_document_still_reads() {
        let mut d = Document::default();
        let before = crate::db::now_ms();
        d.write(&p("a.txt"), b"1").expect("write");
        let (_, _, _, at) = d.entries().next().expect("an entry");
        assert!(at.is_some_and(|at| at >= before), "{at:?}");
        let again = Document::parse(Some(&d.to_json())).expect("parse");
        assert_eq!(again.entries().next().map(|e| e.3), Some(at));
        let old = Document::parse(Some(r#"{"entries":{"b.txt":{"data":"Mg==","size":1}}}"#)).expect("old");
        assert_eq!(old.entries().next(), Some(("b.txt", false, 1, None)));
        // The same bytes written later are the same entry (the merge asks that).
        let mut later = again.clone();
        later.entries.get_mut("a.txt").expect("a").modified_at = Some(i64::MAX);
        assert_eq!(later, again);
    }

    #[test]
    fn a_file_in_the_way_is_refused() {
        let mut d = Document::default();
        d.write(&p("x"), b"1").expect("write");
        assert!(matches!(d.write(&p("x/y"), b"1"), Err(WorkspaceError::NotADirectory(_))));
        assert!(matches!(d.mkdir(&p("x")), Err(WorkspaceError::AlreadyExists(_))));
        assert!(matches!(d.ls(&p("x")), Err(WorkspaceError::NotADirectory(_))));
        assert!(matches!(d.read(&p("missing")), Err(WorkspaceError::NotFound(_))));
        assert!(d.remove(&WorkspacePath::root()).is_err());
    }
}
