//! Files a person attaches to a conversation (issue 49): written into the workspace of the
//! conversation's latest run under `uploads/`, one recorded `write` whose detail names the person.
//! The name is checked before anything else: one file name, no folder, no `..`, no NUL or control
//! character, never absolute. A document (`state`) workspace takes no attachments: it is merged
//! by runs at their finish, and a person's write between runs would be lost or clash.

use super::backend::WRITE_MAX;
use super::error::WorkspaceError;
use super::model::{is_finished, RunWorkspace, WorkspaceState};
use super::service;
use super::store;
use crate::access::Caller;
use crate::agents::model::{Agent, Backend, Run};
use crate::db;
use crate::state::AppState;
use crate::vocabulary::paths::{self, WorkspacePath};
use crate::vocabulary::scope::Scope;

/// The folder attachments land in, at the workspace's root.
pub const FOLDER: &str = "uploads";

/// The longest file name a host's file system takes (bytes).
const NAME_MAX: usize = 255;

/// The path under `uploads/` a file name lands at, or why the name is refused (in words for the
/// person). A browser sends the bare name; a Windows path's folders are dropped first.
pub fn path_of(name: &str) -> Result<WorkspacePath, String> {
    if name.contains('\0') || name.chars().any(char::is_control) {
        return Err("A file name cannot contain a NUL byte or control characters.".into());
    }
    let name = name.trim();
    if name.starts_with('/') {
        return Err("Send a file name, not an absolute path.".into());
    }
    if name.contains('/') {
        return Err("Send a file name without folders: a name cannot contain “/”.".into());
    }
    let name = name.rsplit('\\').next().unwrap_or_default().trim();
    if name.is_empty() || name == "." || name == ".." {
        return Err("The file has no name to store it under.".into());
    }
    if name.len() > NAME_MAX {
        return Err(format!("A file name has at most {NAME_MAX} bytes."));
    }
    let p = paths::normalise(&format!("{FOLDER}/{name}"))?;
    // Confined: exactly one name below the folder.
    if p.parent().map(|d| d.relative().to_string()).as_deref() != Some(FOLDER) {
        return Err("The file name does not stay in uploads/.".into());
    }
    Ok(p)
}

/// The largest attachment (bytes): one file write.
pub const MAX_BYTES: usize = WRITE_MAX;

/// Writes `bytes` to `path` (from [`path_of`]) in the workspace of `run`, the latest run of a
/// conversation the caller may see (checked by whoever calls this, `agent` its agent), recorded
/// as a `write` by `person`. Every refusal comes before a row is made or a host is asked.
pub async fn attach(
    st: &AppState,
    caller: &Caller,
    run: &Run,
    agent: &Agent,
    path: &WorkspacePath,
    bytes: &[u8],
) -> Result<(), WorkspaceError> {
    if bytes.len() > MAX_BYTES {
        return Err(WorkspaceError::TooLarge(format!("A file is at most {} MiB.", MAX_BYTES / 1024 / 1024)));
    }
    if agent.backend == Backend::State {
        return Err(WorkspaceError::Refused(
            "This agent keeps its files as a document in the console's database, which takes no attachments: \
             attach files to a conversation with an agent on a sandbox host."
                .into(),
        ));
    }
    let finished = is_finished(run);
    if finished && agent.scope == Scope::Run {
        return Err(WorkspaceError::Refused(
            "This agent's workspace lasts one run and the latest run has finished: files attached now would be \
             gone before the next turn."
                .into(),
        ));
    }
    let open = match service::of_visible_run(st, caller, &run.id).await? {
        RunWorkspace::Refused(e) => return Err(e),
        RunWorkspace::NotYet { .. } => false,
        RunWorkspace::Known(w) => w.state == WorkspaceState::Open,
    };
    if finished && !open {
        return Err(WorkspaceError::Refused(
            "This conversation's workspace is not open: attach files while a run is going, or once a run has opened it."
                .into(),
        ));
    }
    let r = service::resolve_in(st, &caller.org_id, &run.id).await?;
    let workspace_id = r.workspace.id.clone();
    service::workspace(st, r)?.write_by(path, bytes, &person(caller)).await?;
    // Whose the file is, for Documents to name them (issue 49): after the write, so a refused or
    // failed write names no one. As with the operation log, a failure to keep it is logged and
    // does not fail the attachment, which is stored (the file then reads "attached by a person").
    if let Err(e) = keep_whose(st, caller, &workspace_id, path).await {
        tracing::warn!(error = %e, workspace_id = %workspace_id, "who attached a file could not be kept");
    }
    Ok(())
}

async fn keep_whose(
    st: &AppState,
    caller: &Caller,
    workspace_id: &str,
    path: &WorkspacePath,
) -> Result<(), db::DbError> {
    let mut c = st.db.conn().await?;
    store::record_upload(&mut c, &caller.org_id, workspace_id, path.relative(), &caller.user_id, db::now_ms()).await
}

/// How an attachment's row names the person: their e-mail address (what Members shows).
fn person(caller: &Caller) -> String {
    caller.email.clone()
}

#[cfg(test)]
mod tests {
    use super::path_of;

    #[test]
    fn a_file_name_lands_in_uploads_and_nowhere_else() {
        assert_eq!(path_of("report.pdf").map(|p| p.relative().to_string()), Ok("uploads/report.pdf".into()));
        assert_eq!(path_of("  notes v2.md ").map(|p| p.relative().to_string()), Ok("uploads/notes v2.md".into()));
        assert_eq!(
            path_of(r"C:\Users\mia\photo.png").map(|p| p.relative().to_string()),
            Ok("uploads/photo.png".into())
        );
        for bad in [
            "",
            " ",
            ".",
            "..",
            "../etc/passwd",
            "/etc/passwd",
            "a/b.txt",
            "a\0b",
            "tab\there",
            r"x\..",
            &"n".repeat(256),
        ] {
            assert!(path_of(bad).is_err(), "{bad:?} is refused");
        }
    }
}
