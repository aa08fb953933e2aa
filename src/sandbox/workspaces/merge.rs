//! The three-way merge of a `state` document by path (docs/design.md §11): what a run changed against
//! its base lands in the shared document, unless the shared document changed that same path
//! otherwise since the base (another run finished first). Then the version already shared stays
//! — **the earlier finish wins** — and the path is reported as a conflict: the later run's
//! version is kept whole in a recovery copy. Afterwards the result is made whole again: a file
//! that one side put where the other keeps a folder is resolved the same way (the shared side
//! stays), and every folder a file lies in exists.

use std::collections::{BTreeMap, BTreeSet};

use super::document::{DocEntry, Document};

/// The merged document and the paths where this run's change lost to an earlier one.
#[derive(Debug)]
pub struct Merged {
    pub document: Document,
    /// Sorted, each once.
    pub conflicts: Vec<String>,
}

/// Merges `ours` (a run's document, started from `base`) into `theirs` (the shared document now).
pub fn three_way(base: &Document, ours: &Document, theirs: &Document) -> Merged {
    let mut out = theirs.entries.clone();
    let mut conflicts = BTreeSet::new();
    let touched: BTreeSet<&String> = base.entries.keys().chain(ours.entries.keys()).collect();
    for p in touched {
        let (b, o, t) = (base.entries.get(p), ours.entries.get(p), theirs.entries.get(p));
        if o == b {
            continue;
        }
        if t == b || t == o {
            set(&mut out, p, o);
        } else {
            conflicts.insert(p.clone());
        }
    }
    resolve_kind_clashes(&mut out, &theirs.entries, &mut conflicts);
    add_missing_folders(&mut out);
    Merged { document: Document { entries: out }, conflicts: conflicts.into_iter().collect() }
}

fn set(out: &mut BTreeMap<String, DocEntry>, p: &str, e: Option<&DocEntry>) {
    match e {
        Some(e) => out.insert(p.to_string(), e.clone()),
        None => out.remove(p),
    };
}

fn ancestors(p: &str) -> impl Iterator<Item = &str> {
    p.match_indices('/').map(move |(i, _)| &p[..i])
}

/// A file with something below it: one of the two came from this run (the shared document alone
/// is whole); that one goes back to the shared version.
fn resolve_kind_clashes(
    out: &mut BTreeMap<String, DocEntry>,
    theirs: &BTreeMap<String, DocEntry>,
    conflicts: &mut BTreeSet<String>,
) {
    loop {
        let clash = out.keys().find_map(|p| {
            ancestors(p).find(|a| out.get(*a).is_some_and(|e| !e.dir)).map(|a| (a.to_string(), p.clone()))
        });
        let Some((file, below)) = clash else { return };
        let ours = if out.get(&file) != theirs.get(&file) { file } else { below };
        let shared = theirs.get(&ours).cloned();
        set(out, &ours, shared.as_ref());
        conflicts.insert(ours);
    }
}

fn add_missing_folders(out: &mut BTreeMap<String, DocEntry>) {
    let missing: Vec<String> = out
        .keys()
        .flat_map(|p| ancestors(p).map(str::to_string).collect::<Vec<_>>())
        .filter(|a| !out.contains_key(a))
        .collect();
    for a in missing {
        out.insert(a, DocEntry { dir: true, ..Default::default() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::paths::normalise;

    fn doc(files: &[(&str, &str)]) -> Document {
        let mut d = Document::default();
        for (p, content) in files {
            if let Some(dir) = p.strip_suffix('/') {
                d.mkdir(&normalise(dir).expect("path")).expect("mkdir");
            } else {
                d.write(&normalise(p).expect("path"), content.as_bytes()).expect("write");
            }
        }
        d
    }

    fn read(d: &Document, p: &str) -> Option<String> {
        d.read(&normalise(p).expect("path")).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    #[test]
    fn changes_to_different_paths_both_land() {
        let base = doc(&[("keep.txt", "k")]);
        let ours = doc(&[("keep.txt", "k"), ("a.txt", "ours")]);
        let theirs = doc(&[("keep.txt", "k"), ("b.txt", "theirs")]);
        let m = three_way(&base, &ours, &theirs);
        assert!(m.conflicts.is_empty());
        assert_eq!(read(&m.document, "a.txt").as_deref(), Some("ours"));
        assert_eq!(read(&m.document, "b.txt").as_deref(), Some("theirs"));
        assert_eq!(read(&m.document, "keep.txt").as_deref(), Some("k"));
    }

    #[test]
    fn a_path_changed_by_both_keeps_the_shared_version_and_reports_it() {
        let base = doc(&[("x.txt", "base")]);
        let ours = doc(&[("x.txt", "ours")]);
        let theirs = doc(&[("x.txt", "theirs")]);
        let m = three_way(&base, &ours, &theirs);
        assert_eq!(m.conflicts, vec!["x.txt".to_string()]);
        assert_eq!(read(&m.document, "x.txt").as_deref(), Some("theirs"));
        // The same change on both sides is no conflict.
        let m = three_way(&base, &ours, &ours);
        assert!(m.conflicts.is_empty());
    }

    #[test]
    fn removals_merge_and_a_removal_against_an_edit_loses() {
        let base = doc(&[("a.txt", "a"), ("b.txt", "b")]);
        let ours = doc(&[("b.txt", "b")]); // removed a.txt
        let theirs = doc(&[("a.txt", "a"), ("b.txt", "edited")]);
        let m = three_way(&base, &ours, &theirs);
        assert!(m.conflicts.is_empty());
        assert_eq!(read(&m.document, "a.txt"), None);
        assert_eq!(read(&m.document, "b.txt").as_deref(), Some("edited"));
        let ours = doc(&[("a.txt", "a")]); // removed b.txt, which theirs edited
        let m = three_way(&base, &ours, &theirs);
        assert_eq!(m.conflicts, vec!["b.txt".to_string()]);
        assert_eq!(read(&m.document, "b.txt").as_deref(), Some("edited"));
    }

    #[test]
    fn a_file_where_the_other_side_keeps_a_folder_loses_and_folders_are_whole() {
        let base = Document::default();
        let ours = doc(&[("x", "a file")]);
        let theirs = doc(&[("x/y.txt", "inside")]);
        let m = three_way(&base, &ours, &theirs);
        assert_eq!(m.conflicts, vec!["x".to_string()]);
        assert_eq!(read(&m.document, "x/y.txt").as_deref(), Some("inside"));
        // A file written into a folder the other side removed brings the folder back.
        let base = doc(&[("d/old.txt", "o")]);
        let ours = doc(&[("d/old.txt", "o"), ("d/new.txt", "n")]);
        let theirs = Document::default();
        let m = three_way(&base, &ours, &theirs);
        assert!(m.conflicts.is_empty());
        assert_eq!(read(&m.document, "d/new.txt").as_deref(), Some("n"));
        assert_eq!(read(&m.document, "d/old.txt"), None);
        assert!(m.document.stat(&normalise("d").expect("path")).expect("d").is_dir);
    }

    #[test]
    fn empty_folders_merge_and_count() {
        let base = Document::default();
        let ours = doc(&[("mine/", "")]);
        let theirs = doc(&[("yours/", "")]);
        let m = three_way(&base, &ours, &theirs);
        assert_eq!(m.document.usage(), ("mine".len() + "yours".len()) as u64);
    }
}
