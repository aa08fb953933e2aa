//! One file operation on an open Daytona sandbox, through its toolbox, with Daytona's answers in
//! the workspace's words: 404 → not found, 403 → permission denied, a 400 about a path → a
//! field error (422) or the folder/file mix-up it names.

use super::root::Rooted;
use crate::sandbox::hosts::daytona::client::{DaytonaError, FileInfo};
use crate::sandbox::workspaces::backend::{Result, READ_MAX};
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Entry;
use crate::validate::FieldErrors;
use crate::vocabulary::paths::WorkspacePath;

/// The path as the toolbox takes it: below the workspace root ([`Rooted::at`]).
fn at(tb: &Rooted, path: &WorkspacePath) -> String {
    tb.at(if path.is_root() { "." } else { path.relative() })
}

pub(super) async fn read(tb: Rooted, path: &WorkspacePath) -> Result<Vec<u8>> {
    tb.toolbox().download(&at(&tb, path), READ_MAX).await.map_err(file_error)
}

/// Refused before anything is sent when the path starts or ends with white space: Daytona's
/// upload trims it (`strings.TrimSpace`, apps/daemon/pkg/toolbox/fs/upload_files.go), so the file
/// would land under another name.
pub(super) async fn write(tb: Rooted, path: &WorkspacePath, bytes: &[u8]) -> Result<()> {
    let rel = path.relative();
    if rel.trim() != rel {
        return Err(WorkspaceError::Invalid(FieldErrors::one(
            "path",
            "Daytona cannot write a file whose path starts or ends with a space: it would trim the \
             name. Choose the name without those spaces.",
        )));
    }
    tb.toolbox().upload(&at(&tb, path), bytes).await.map_err(file_error)
}

pub(super) async fn mkdir(tb: Rooted, path: &WorkspacePath) -> Result<()> {
    tb.toolbox().create_folder(&at(&tb, path)).await.map_err(file_error)
}

pub(super) async fn remove(tb: Rooted, path: &WorkspacePath) -> Result<()> {
    tb.toolbox().delete(&at(&tb, path), true).await.map_err(file_error)
}

pub(super) async fn stat(tb: Rooted, path: &WorkspacePath) -> Result<Entry> {
    let info = tb.toolbox().info(&at(&tb, path)).await.map_err(file_error)?;
    let name = if path.is_root() { String::new() } else { info.name.clone() };
    Ok(entry(info, name, path.relative().to_string()))
}

pub(super) async fn ls(tb: Rooted, path: &WorkspacePath) -> Result<Vec<Entry>> {
    let list = tb.toolbox().list(&at(&tb, path)).await.map_err(file_error)?;
    let mut entries: Vec<Entry> = list
        .into_iter()
        .filter(|info| is_plain_name(&info.name))
        .map(|info| {
            let rel = path.join(&info.name).relative().to_string();
            entry(info.clone(), info.name, rel)
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// A name that stays in its folder: not empty, not `.` or `..`, no `/` (a daemon never lists
/// those; a path built from one must not climb out of the workspace).
pub(super) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

fn entry(info: FileInfo, name: String, path: String) -> Entry {
    let size = if info.is_dir { None } else { info.size.and_then(|s| u64::try_from(s).ok()) };
    Entry { name, path, is_dir: info.is_dir, size, is_link: info.is_link() }
}

/// Daytona's refusal of a file operation, in the workspace's words.
pub(super) fn file_error(e: DaytonaError) -> WorkspaceError {
    match e {
        DaytonaError::NotFound { .. } => WorkspaceError::NotFound("No such file or folder.".into()),
        DaytonaError::AccessDenied { .. } => {
            WorkspaceError::PermissionDenied("The sandbox's user may not do this at this path.".into())
        }
        DaytonaError::Invalid { message, .. } => {
            let lower = message.to_ascii_lowercase();
            // `path must be a file`: the daemon's answer to a download of a folder.
            if lower.contains("is a directory") || lower.contains("must be a file") {
                WorkspaceError::IsADirectory("This is a folder.".into())
            } else if lower.contains("not a directory") {
                WorkspaceError::NotADirectory("A part of this path is a file, not a folder.".into())
            } else {
                WorkspaceError::Invalid(FieldErrors::one("path", format!("Daytona refused this path: {message}")))
            }
        }
        DaytonaError::Refused(m) if m.contains("larger than") => WorkspaceError::TooLarge(m),
        other => host_error(other),
    }
}

/// Any other Daytona failure, as the host failure it amounts to (the same statuses and row
/// details as a sandboxd host's; a 408 or no answer in time is `timed out`, a 504).
pub(super) fn host_error(e: DaytonaError) -> WorkspaceError {
    match e.into_host() {
        Ok(host) => WorkspaceError::Host(host),
        Err(refused) => WorkspaceError::Refused(refused.to_string()),
    }
}
