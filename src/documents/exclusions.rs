//! What Documents never lists or counts (docs/design.md §9): the agent's skills, the tool-output spill
//! folder and our own `.agenticos/` at the top of a workspace, and toolchain folders wherever
//! they are. A pure function of the path, so listings, counts and search agree.

/// Top-level folders that are the platform's, not the person's.
pub const TOP_LEVEL: [&str; 3] = ["skills", ".agenticos", TOOL_OUTPUT];

/// Toolchain folders, excluded at any depth (docs/design.md §9): what [`is_toolchain`] matches,
/// for those that name them to another program (a sandbox's `tar` leaving them out).
pub const TOOLCHAIN: [&str; 11] = [
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".git",
    ".next",
    ".cache",
];

/// Where tools spill output too long for the model's context (the platform's, never the person's).
pub const TOOL_OUTPUT: &str = ".tool-output";

/// Toolchain folders, excluded at any depth: a `match` (compared by length first), as it is asked
/// of every part of every listed path.
fn is_toolchain(part: &str) -> bool {
    matches!(
        part,
        ".venv"
            | "venv"
            | "node_modules"
            | "__pycache__"
            | ".pytest_cache"
            | ".mypy_cache"
            | ".ruff_cache"
            | ".tox"
            | ".git"
            | ".next"
            | ".cache"
    )
}

/// Whether `path` (workspace-relative, `/`-separated, no leading slash) is excluded: it is, or lies
/// under, an excluded folder. A file named like a toolchain folder is excluded too (a folder of
/// that name is what the host lists; a file of that name is equally not the person's work).
pub fn is_excluded(path: &str) -> bool {
    let mut parts = path.split('/').filter(|p| !p.is_empty() && *p != ".");
    let Some(first) = parts.next() else { return false };
    if TOP_LEVEL.contains(&first) || is_toolchain(first) {
        return true;
    }
    parts.any(is_toolchain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_match_is_the_list() {
        for name in TOOLCHAIN {
            assert!(is_toolchain(name), "{name}");
            assert!(!is_toolchain(&format!("{name}x")) && !is_toolchain(&format!("x{name}")), "{name}");
        }
    }

    #[test]
    fn platform_folders_are_excluded_only_at_the_top() {
        for p in ["skills", "skills/a.md", ".agenticos/state.json", ".tool-output/1.txt"] {
            assert!(is_excluded(p), "{p}");
        }
        for p in ["notes/skills/a.md", "docs/.agenticos-notes.txt", "skills.md", "report/skills"] {
            assert!(!is_excluded(p), "{p}");
        }
    }

    #[test]
    fn toolchain_folders_are_excluded_at_any_depth() {
        for p in [
            "node_modules",
            "node_modules/x/index.js",
            "app/node_modules/left-pad/index.js",
            ".venv/bin/python",
            "a/b/.git/HEAD",
            "src/__pycache__/m.pyc",
            "x/.pytest_cache/v",
            "x/.mypy_cache/y",
            "x/.ruff_cache/z",
            ".tox/py",
            "web/.next/build",
            ".cache/pip",
            "venv/lib",
        ] {
            assert!(is_excluded(p), "{p}");
        }
    }

    #[test]
    fn the_persons_files_are_kept() {
        for p in ["report.pdf", "uploads/photo.png", "src/main.py", "node_modules.md", "notes/venv-setup.txt", ""] {
            assert!(!is_excluded(p), "{p}");
        }
    }
}
