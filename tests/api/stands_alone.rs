//! The repository stands alone: a clone with nothing beside it builds, tests and explains itself.
//! No tracked text file names the folder of shared notes that once sat beside the repository, and
//! no relative link of a tracked Markdown file leads out of the repository (or to nothing).
//! Daytona's documents the tests read are vendored in `tests/peer/daytona/specs/`. Plain files,
//! no database.

use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::docs_links::{is_external, links};
use crate::support::source_files::{files_under, repo_root};

/// What no tracked file may say: the shared folder beside the repository, however it is reached.
/// (Spelled in parts, so that this file does not name them itself.)
fn outside_names() -> [String; 5] {
    [
        ["..", "/shared"].concat(),
        ["shared", "/docs/"].concat(),
        ["shared", "/specs/"].concat(),
        ["shared", "/peers/"].concat(),
        ["beside this", " repository"].concat(),
    ]
}

/// The repository's tracked files, relative to its root (`git ls-files`); where there is no git
/// (an exported tree), every file but `target/` and `.git/`.
fn tracked_files() -> Vec<PathBuf> {
    let root = repo_root();
    let listed = Command::new("git").arg("-C").arg(&root).args(["ls-files", "-z"]).output();
    match listed {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .filter(|p| root.join(p).is_file())
            .collect(),
        _ => files_under(&root, None)
            .into_iter()
            .filter_map(|p| p.strip_prefix(&root).ok().map(Path::to_path_buf))
            .filter(|p| !matches!(p.components().next(), Some(Component::Normal(c)) if c == "target" || c == ".git"))
            .collect(),
    }
}

/// A file's text, or `None` for a binary one (a NUL byte, or not UTF-8).
fn text_of(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// Each line of `text` naming one of [`outside_names`], as `file:line: names …`.
fn outside_mentions(file: &Path, text: &str) -> Vec<String> {
    let names = outside_names();
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for name in names.iter().filter(|name| line.contains(name.as_str())) {
            out.push(format!("{}:{}: names `{name}`, outside the repository", file.display(), n + 1));
        }
    }
    out
}

/// Where the relative link `target` of the file `file` (relative to the repository's root) leads,
/// relative to the root, or `None` when it climbs out of the repository.
fn resolve(file: &Path, target: &str) -> Option<PathBuf> {
    let path_part = target.split('#').next().unwrap_or_default();
    let mut at: Vec<String> = file
        .parent()
        .map(|p| p.components().filter_map(|c| c.as_os_str().to_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if path_part.starts_with('/') {
        return None;
    }
    for part in Path::new(path_part).components() {
        match part {
            Component::ParentDir => {
                at.pop()?;
            }
            Component::CurDir => {}
            Component::Normal(p) => at.push(p.to_str()?.to_string()),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(at.iter().collect())
}

/// What is wrong with each relative link of a Markdown file: leading out of the repository, or to
/// nothing in it.
fn outside_links(file: &Path, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (line, target) in links(text) {
        if target.is_empty() || target.starts_with('#') || is_external(&target) {
            continue;
        }
        let at = format!("{}:{line}: link `{target}`", file.display());
        match resolve(file, &target) {
            None => out.push(format!("{at} leads out of the repository")),
            Some(dest) if !repo_root().join(&dest).exists() => {
                out.push(format!("{at}: {} does not exist in the repository", dest.display()))
            }
            Some(_) => {}
        }
    }
    out
}

#[test]
fn no_tracked_file_names_a_path_outside_the_repository() {
    let files = tracked_files();
    assert!(files.iter().any(|f| f == Path::new("README.md")), "the tracked files include README.md: {files:?}");
    let mut problems = Vec::new();
    for file in &files {
        let Some(text) = text_of(&repo_root().join(file)) else { continue };
        problems.extend(outside_mentions(file, &text));
        if file.extension().is_some_and(|e| e == "md") {
            problems.extend(outside_links(file, &text));
        }
    }
    assert!(
        problems.is_empty(),
        "the repository must stand alone (vendor what it needs, with its licence):\n{}",
        problems.join("\n")
    );
}

#[test]
fn daytona_s_documents_are_vendored_with_their_licence_and_pin() {
    let specs = repo_root().join("tests/peer/daytona/specs");
    for name in ["api.json", "toolbox.json", "LICENSE", "NOTICE", "README.md"] {
        assert!(specs.join(name).is_file(), "{} is missing", specs.join(name).display());
    }
    let licence = std::fs::read_to_string(specs.join("LICENSE")).expect("LICENSE");
    assert!(licence.contains("Apache License") && licence.contains("Version 2.0"), "LICENSE is Apache-2.0's text");
    let readme = std::fs::read_to_string(specs.join("README.md")).expect("README.md");
    assert!(readme.contains("e169fac8e6bd29d5d15c995967bf3a2d180a76dc"), "the README names the source commit");
    for name in ["api.json", "toolbox.json"] {
        use sha2::Digest;
        let sha = hex::encode(sha2::Sha256::digest(std::fs::read(specs.join(name)).expect("read")));
        assert!(readme.contains(&format!("{sha}  {name}")), "the README pins {name} at its sha256 {sha}");
    }
}

#[test]
fn the_reader_finds_links_and_names_that_lead_outside() {
    let file = Path::new("docs/a.md");
    assert_eq!(resolve(file, "b.md#x"), Some(PathBuf::from("docs/b.md")));
    assert_eq!(resolve(file, "../README.md"), Some(PathBuf::from("README.md")));
    assert_eq!(resolve(file, "../../elsewhere/DESIGN.md"), None);
    assert_eq!(resolve(file, "/etc/passwd"), None);
    assert_eq!(
        resolve(Path::new("tests/peer/daytona/specs/README.md"), "../../../../docs/daytona.md"),
        Some(PathBuf::from("docs/daytona.md"))
    );
    assert_eq!(resolve(Path::new("README.md"), "../x.md"), None);
    let outside = ["See `", "..", "/shared", "/docs", "/DESIGN.md` for the design."].concat();
    assert_eq!(outside_mentions(file, &outside).len(), 2, "{outside}");
    assert!(outside_mentions(file, "See docs/design.md and `../README.md`.").is_empty());
    let text =
        "[up](../../x.md) [in](../README.md) [gone](missing.md) [web](https://example.com/../x) `[code](../../y.md)`\n";
    let found = outside_links(file, text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`../../x.md` leads out of the repository"), "{found:?}");
    assert!(found[1].contains("docs/missing.md does not exist"), "{found:?}");
}
