//! The routes this client calls, and the ids that fill their paths.

use super::error::SandboxdError;

/// A native file operation under `/sessions/{session_id}/files/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileOp {
    Read,
    Write,
    Stat,
    Realpath,
    List,
    Mkdir,
    Remove,
}

impl FileOp {
    const ALL: [Self; 7] = [Self::Read, Self::Write, Self::Stat, Self::Realpath, Self::List, Self::Mkdir, Self::Remove];

    fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Stat => "stat",
            Self::Realpath => "realpath",
            Self::List => "list",
            Self::Mkdir => "mkdir",
            Self::Remove => "remove",
        }
    }
}

/// A stored-workspace read under `/workspaces/{session_id}/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WorkspaceOp {
    Ls,
    Tree,
    Read,
    ReadBytes,
}

impl WorkspaceOp {
    const ALL: [Self; 4] = [Self::Ls, Self::Tree, Self::Read, Self::ReadBytes];

    fn name(self) -> &'static str {
        match self {
            Self::Ls => "ls",
            Self::Tree => "tree",
            Self::Read => "read",
            Self::ReadBytes => "read_bytes",
        }
    }
}

/// One route this client calls, with the ids that fill its path.
#[derive(Debug, Clone, Copy)]
pub(super) enum Route<'a> {
    Index,
    Health,
    Policy,
    Sessions,
    Session(&'a str),
    Events(&'a str),
    Run(&'a str),
    StopRun(&'a str, &'a str),
    File(&'a str, FileOp),
    Trees,
    Workspace(&'a str, WorkspaceOp),
}

impl Route<'_> {
    /// The route's path as the host's index lists it.
    pub(super) fn template(&self) -> String {
        match self {
            Route::Index => "/".to_owned(),
            Route::Health => "/healthz".to_owned(),
            Route::Policy => "/policy".to_owned(),
            Route::Sessions => "/sessions".to_owned(),
            Route::Session(_) => "/sessions/{session_id}".to_owned(),
            Route::Events(_) => "/sessions/{session_id}/events".to_owned(),
            Route::Run(_) => "/sessions/{session_id}/run".to_owned(),
            Route::StopRun(..) => "/sessions/{session_id}/runs/{run_id}/stop".to_owned(),
            Route::File(_, op) => format!("/sessions/{{session_id}}/files/{}", op.name()),
            Route::Trees => "/workspaces/trees".to_owned(),
            Route::Workspace(_, op) => format!("/workspaces/{{session_id}}/{}", op.name()),
        }
    }

    /// The call's name for metrics: bounded, no id in it (a session is `session`, not its id).
    pub(super) fn operation(&self, method: &reqwest::Method) -> &'static str {
        let deleting = method == reqwest::Method::DELETE;
        match self {
            Route::Index => "index",
            Route::Health => "health",
            Route::Policy if method == reqwest::Method::GET => "policy",
            Route::Policy => "update_policy",
            Route::Sessions if method == reqwest::Method::POST => "open_session",
            Route::Sessions => "sessions",
            Route::Session(_) if deleting => "delete_session",
            Route::Session(_) => "session",
            Route::Events(_) => "events",
            Route::Run(_) => "run",
            Route::StopRun(..) => "stop_run",
            Route::File(_, op) => match op {
                FileOp::Read => "files_read",
                FileOp::Write => "files_write",
                FileOp::Stat => "files_stat",
                FileOp::Realpath => "files_realpath",
                FileOp::List => "files_list",
                FileOp::Mkdir => "files_mkdir",
                FileOp::Remove => "files_remove",
            },
            Route::Trees => "workspace_trees",
            Route::Workspace(_, op) => match op {
                WorkspaceOp::Ls => "workspace_ls",
                WorkspaceOp::Tree => "workspace_tree",
                WorkspaceOp::Read => "workspace_read",
                WorkspaceOp::ReadBytes => "workspace_read_bytes",
            },
        }
    }

    /// The path segments of this call, ids included (each becomes one
    /// percent-encoded segment).
    pub(super) fn segments(&self) -> Vec<&str> {
        match *self {
            Route::Index => vec![],
            Route::Health => vec!["healthz"],
            Route::Policy => vec!["policy"],
            Route::Sessions => vec!["sessions"],
            Route::Session(id) => vec!["sessions", id],
            Route::Events(id) => vec!["sessions", id, "events"],
            Route::Run(id) => vec!["sessions", id, "run"],
            Route::StopRun(id, run) => vec!["sessions", id, "runs", run, "stop"],
            Route::File(id, op) => vec!["sessions", id, "files", op.name()],
            Route::Trees => vec!["workspaces", "trees"],
            Route::Workspace(id, op) => vec!["workspaces", id, op.name()],
        }
    }

    pub(super) fn is_native_file(&self) -> bool {
        matches!(self, Route::File(..))
    }

    /// Every route the client calls, except the index itself (which a host's
    /// `endpoints` never lists).
    pub(super) fn all() -> Vec<Route<'static>> {
        let mut all = vec![
            Route::Health,
            Route::Policy,
            Route::Sessions,
            Route::Session(""),
            Route::Events(""),
            Route::Run(""),
            Route::StopRun("", ""),
        ];
        all.extend(FileOp::ALL.iter().map(|op| Route::File("", *op)));
        all.push(Route::Trees);
        all.extend(WorkspaceOp::ALL.iter().map(|op| Route::Workspace("", *op)));
        all
    }
}

/// The route paths this client calls, as they appear in a host's index
/// (`GET /` `endpoints`). Used to confirm a version mismatch, and by `doctor`.
pub fn required_routes() -> Vec<String> {
    Route::all().iter().map(Route::template).collect()
}

/// Whether `id` is a session id (or tenant) the host accepts:
/// `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
pub fn is_session_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

pub(super) fn check_session_id(id: &str) -> Result<(), SandboxdError> {
    if is_session_id(id) {
        Ok(())
    } else {
        Err(SandboxdError::invalid(format!(
            "'{id}' is not a session id: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )))
    }
}

pub(super) fn check_run_id(run_id: &str) -> Result<(), SandboxdError> {
    if run_id.len() == 32 && run_id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        Ok(())
    } else {
        Err(SandboxdError::invalid(format!("'{run_id}' is not a run id: 32 lowercase hex digits")))
    }
}

/// A fresh run id: a UUIDv4 as 32 lowercase hex digits.
pub fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_routes_are_the_contracts_paths_without_duplicates() {
        let routes = required_routes();
        let mut unique = routes.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), routes.len());
        assert_eq!(routes.len(), 19);
        for route in [
            "/healthz",
            "/policy",
            "/sessions",
            "/sessions/{session_id}",
            "/sessions/{session_id}/events",
            "/sessions/{session_id}/run",
            "/sessions/{session_id}/runs/{run_id}/stop",
            "/sessions/{session_id}/files/read",
            "/sessions/{session_id}/files/write",
            "/sessions/{session_id}/files/realpath",
            "/workspaces/trees",
            "/workspaces/{session_id}/read_bytes",
        ] {
            assert!(routes.iter().any(|r| r == route), "{route} missing");
        }
        assert!(!routes.iter().any(|r| r == "/"));
    }

    #[test]
    fn session_ids_follow_the_hosts_pattern() {
        assert!(is_session_id("xc-4f2a91c8-7b3e5d10-0123456789abcdef0123456789abcdef"));
        assert!(is_session_id("a"));
        assert!(is_session_id(&"a".repeat(64)));
        for bad in ["", "..", ".x", "-x", "a/b", "a b", "ü", &"a".repeat(65)] {
            assert!(!is_session_id(bad), "{bad:?}");
        }
        assert!(check_run_id(&new_run_id()).is_ok());
        assert!(check_run_id("ABCDEF0123456789abcdef0123456789").is_err());
    }
}
