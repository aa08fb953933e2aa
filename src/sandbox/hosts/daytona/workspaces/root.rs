//! Where a Daytona workspace's files are in its sandbox: the `workspace` folder under the sandbox
//! user's home (`GET /user-home-dir`, then `/workspace`), made as the sandbox opens. The home
//! itself holds the image's and Daytona's own files (the default snapshot's `.bashrc`,
//! `.profile`, `.zshrc`, the daemon's `.daytona/`): they are never listed, read, saved in a
//! snapshot or written over. Every path sent to the toolbox is that folder joined with a
//! workspace path, which is already confined (relative, no `..`: [`WorkspacePath`]), so nothing
//! above the folder is reached by name; commands start in it.
//!
//! A sandbox created before this rule lacks the [`ROOT`] label: its files are where they were
//! written then, at the sandbox's work dir, which stays its root (docs/daytona.md, "Sandboxes
//! created before the workspace folder").
//!
//! [`WorkspacePath`]: crate::vocabulary::paths::WorkspacePath

use super::known::KnownSandboxes;

use crate::sandbox::hosts::daytona::client::labels::{ROOT, ROOT_WORKSPACE};
use crate::sandbox::hosts::daytona::client::{DaytonaError, Sandbox, Toolbox};

/// The workspace's folder under the home.
pub const FOLDER: &str = "workspace";

/// The work dir itself: the root of a sandbox created before the `workspace` folder.
const WORK_DIR: &str = ".";

/// A sandbox's toolbox and where its workspace is. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Rooted {
    tb: Toolbox,
    /// `<home>/workspace`, absolute; or `.` (the work dir) for a sandbox created before.
    root: String,
}

impl Rooted {
    pub fn toolbox(&self) -> &Toolbox {
        &self.tb
    }

    /// The workspace root as the toolbox takes it.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Whether the root is the `workspace` folder (not a sandbox created before it).
    pub fn is_workspace_folder(&self) -> bool {
        self.root != WORK_DIR
    }

    /// `rel`, relative to the workspace root (empty or `.` for the root itself), as the toolbox
    /// takes it.
    pub fn at(&self, rel: &str) -> String {
        let rel = rel.trim_start_matches("./");
        if rel.is_empty() || rel == "." {
            self.root.clone()
        } else if self.root == WORK_DIR {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.root)
        }
    }

    /// Where a command starts: the workspace root (none: the work dir, as before).
    pub fn cwd(&self) -> Option<String> {
        self.is_workspace_folder().then(|| self.root.clone())
    }
}

/// The root of `sandbox`'s workspace (its home asked once per sandbox while `known` keeps it: the
/// home does not move).
pub async fn of(known: &KnownSandboxes, tb: Toolbox, sandbox: &Sandbox) -> Result<Rooted, DaytonaError> {
    if let Some(r) = cached(known, &tb, &sandbox.id) {
        return Ok(r);
    }
    let root = if sandbox.labels.get(ROOT).map(String::as_str) == Some(ROOT_WORKSPACE) {
        let home = tb.user_home_dir().await?;
        format!("{}/{FOLDER}", home.trim_end_matches('/'))
    } else {
        WORK_DIR.to_string()
    };
    known.keep_root(&sandbox.id, &root);
    Ok(Rooted { tb, root })
}

/// The root of sandbox `sandbox_id` when this console knows it already.
pub fn cached(known: &KnownSandboxes, tb: &Toolbox, sandbox_id: &str) -> Option<Rooted> {
    let root = known.root(sandbox_id)?;
    Some(Rooted { tb: tb.clone(), root })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rooted(root: &str) -> Rooted {
        let c = crate::sandbox::hosts::daytona::client::DaytonaClient::new(
            reqwest::Client::new(),
            url::Url::parse("http://127.0.0.1:9/api").unwrap(),
            secrecy::SecretString::from("k"),
        )
        .unwrap();
        Rooted { tb: c.toolbox_at("http://127.0.0.1:9/toolbox", "sb").unwrap(), root: root.into() }
    }

    #[test]
    fn paths_go_below_the_workspace_folder_or_stay_at_the_work_dir_of_an_older_sandbox() {
        let r = rooted("/home/daytona/workspace");
        assert_eq!(r.at("."), "/home/daytona/workspace");
        assert_eq!(r.at(""), "/home/daytona/workspace");
        assert_eq!(r.at("notes/a.md"), "/home/daytona/workspace/notes/a.md");
        assert_eq!(r.cwd().as_deref(), Some("/home/daytona/workspace"));
        let old = rooted(".");
        assert_eq!((old.at("."), old.at("notes/a.md"), old.cwd()), (".".into(), "notes/a.md".into(), None));
    }
}
