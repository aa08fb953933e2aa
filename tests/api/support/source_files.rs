//! The files of this repository below a folder, for the tests that read the sources as text
//! (`src/`, `templates/`, `docs/`) and for folders a test's app wrote.

use std::path::{Path, PathBuf};

/// This repository's root (where `Cargo.toml` is).
pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file below `dir` (in every sub-folder) whose name ends in `.<extension>`, or every file
/// with `None`, sorted; none when `dir` does not exist.
pub(crate) fn files_under(dir: &Path, extension: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if extension.is_none_or(|e| path.extension().is_some_and(|x| x == e)) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every `.rs` file of `src/`, sorted (never none: that would be a wrong path, not a clean tree).
pub(crate) fn source_files() -> Vec<PathBuf> {
    let files = files_under(&repo_root().join("src"), Some("rs"));
    assert!(!files.is_empty(), "no .rs file under {}", repo_root().join("src").display());
    files
}
