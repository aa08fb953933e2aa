//! Paths from users, normalised and confined before they reach a host: relative to the workspace
//! root, or absolute under `/workspace`. `..` that climbs out, NUL bytes and over-long paths are
//! refused.

pub const WORK_DIR: &str = "/workspace";
pub const PATH_MAX: usize = 1024;

/// A path inside a workspace, relative to its root ("" is the root itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    pub fn root() -> Self {
        WorkspacePath(String::new())
    }
    /// Relative form, "" for the root.
    pub fn relative(&self) -> &str {
        &self.0
    }
    /// Absolute form under `/workspace`, as sandboxd's native file routes want it.
    pub fn absolute(&self) -> String {
        if self.0.is_empty() {
            WORK_DIR.to_string()
        } else {
            format!("{WORK_DIR}/{}", self.0)
        }
    }
    /// How people read it: `/workspace/...`.
    pub fn display(&self) -> String {
        self.absolute()
    }
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
    pub fn parent(&self) -> Option<WorkspacePath> {
        if self.0.is_empty() {
            return None;
        }
        Some(WorkspacePath(self.0.rsplit_once('/').map(|(p, _)| p.to_string()).unwrap_or_default()))
    }
    pub fn join(&self, name: &str) -> WorkspacePath {
        if self.0.is_empty() {
            WorkspacePath(name.to_string())
        } else {
            WorkspacePath(format!("{}/{name}", self.0))
        }
    }
}

/// Normalises a user path, or says why it is refused.
pub fn normalise(raw: &str) -> Result<WorkspacePath, String> {
    if raw.contains('\0') {
        return Err("A path cannot contain a NUL byte.".into());
    }
    if raw.len() > PATH_MAX {
        return Err(format!("A path has at most {PATH_MAX} bytes."));
    }
    if raw.chars().any(|c| c.is_control()) {
        return Err("A path cannot contain control characters.".into());
    }
    let rest = if raw == WORK_DIR {
        ""
    } else if let Some(r) = raw.strip_prefix("/workspace/") {
        r
    } else if raw.starts_with('/') {
        return Err(format!("An absolute path must be under {WORK_DIR}."));
    } else if raw.starts_with('~') {
        return Err(format!("The home directory is outside the workspace; use a path under {WORK_DIR}."));
    } else {
        raw
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err("The path climbs out of the workspace with “..”.".into());
                }
            }
            p => parts.push(p),
        }
    }
    Ok(WorkspacePath(parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_workspace_absolute_paths_normalise_alike() {
        for raw in ["notes/a.txt", "./notes/a.txt", "/workspace/notes/a.txt", "notes//a.txt", "x/../notes/a.txt"] {
            assert_eq!(normalise(raw).expect(raw).relative(), "notes/a.txt", "{raw}");
        }
        assert_eq!(normalise("/workspace").expect("root").absolute(), "/workspace");
        assert_eq!(normalise(".").expect("root").absolute(), "/workspace");
        assert_eq!(normalise("a/b").expect("ok").absolute(), "/workspace/a/b");
    }

    #[test]
    fn escapes_nul_bytes_and_long_paths_are_refused() {
        for bad in ["../etc/passwd", "a/../../b", "/etc/passwd", "/workspace/../etc", "a\0b", "~/x", "/workspacex/a"] {
            assert!(normalise(bad).is_err(), "{bad:?} accepted");
        }
        assert!(normalise(&"a/".repeat(600)).is_err());
    }

    #[test]
    fn parents_and_joins() {
        let p = normalise("a/b/c.txt").expect("ok");
        assert_eq!(p.parent().expect("parent").relative(), "a/b");
        assert_eq!(WorkspacePath::root().join("x").relative(), "x");
        assert!(WorkspacePath::root().parent().is_none());
    }
}
