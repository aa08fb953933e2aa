//! What browsing documents can come to; `web/error.rs` turns each into a status and a problem.

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::sandbox::hosts::sandboxd::client::SandboxdError;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// No such workspace or file the caller may see (another organization's alike).
    #[error("{0}")]
    NotFound(String),
    /// A query or path the caller typed that cannot be used, named by field.
    #[error("invalid input")]
    Invalid(FieldErrors),
    /// A path that leaves the workspace or cannot be a path.
    #[error("{0}")]
    BadPath(String),
    /// A file too large to serve through the host's archive reads.
    #[error("{0}")]
    TooLarge(String),
    /// The host could not be asked (no key, no address) or did not answer well.
    #[error("{0}")]
    Host(String),
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl From<crate::db::DbError> for DocumentError {
    fn from(e: crate::db::DbError) -> Self {
        DocumentError::Internal(e.into())
    }
}

impl From<WorkspaceError> for DocumentError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::NotFound(m) => DocumentError::NotFound(m),
            WorkspaceError::BadPath(m) => DocumentError::BadPath(m),
            WorkspaceError::IsADirectory(m) | WorkspaceError::NotADirectory(m) | WorkspaceError::NotRegular(m) => {
                DocumentError::BadPath(m)
            }
            WorkspaceError::TooLarge(m) => DocumentError::TooLarge(m),
            WorkspaceError::Internal(e) => DocumentError::Internal(e),
            other => DocumentError::Host(other.to_string()),
        }
    }
}

impl From<ConnectionError> for DocumentError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::Internal(e) => DocumentError::Internal(e),
            other => DocumentError::Host(other.to_string()),
        }
    }
}

impl From<HostError> for DocumentError {
    /// A file's read in the host's words: a missing file is ours too; a path through a link or
    /// out of the workspace is refused as a path.
    fn from(e: HostError) -> Self {
        match e {
            HostError::NotFound { detail } => DocumentError::NotFound(detail),
            HostError::Refused { why: Refusal::Invalid, detail, .. } if detail.contains("outside the workspace") => {
                DocumentError::BadPath(detail)
            }
            HostError::Refused { why: Refusal::Invalid, detail, .. } if detail.contains("read limit") => {
                DocumentError::TooLarge(detail)
            }
            other => DocumentError::Host(other.to_string()),
        }
    }
}

impl From<SandboxdError> for DocumentError {
    fn from(e: SandboxdError) -> Self {
        HostError::from(e).into()
    }
}
