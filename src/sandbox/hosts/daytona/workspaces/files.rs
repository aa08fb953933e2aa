//! Daytona's answers to a file operation in the workspace's words (404 → not found, 403 →
//! permission denied, a 400 about a path → a field error (422) or the folder/file mix-up it
//! names), and the names a listing keeps. The operations themselves: `open_files.rs`.

use crate::sandbox::hosts::daytona::client::DaytonaError;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::validate::FieldErrors;

/// A name that stays in its folder: not empty, not `.` or `..`, no `/` (a daemon never lists
/// those; a path built from one must not climb out of the workspace).
pub(super) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
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
