//! What a workspace operation can come to, in the workspace's words; web/error.rs maps it to HTTP.

use crate::agents::error::AgentError;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::validate::FieldErrors;

/// What a workspace operation can come to.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    IsADirectory(String),
    #[error("{0}")]
    NotADirectory(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    TooLarge(String),
    /// A device, a pipe or a socket where a file or a folder was expected.
    #[error("{0}")]
    NotRegular(String),
    /// The sandbox's user may not do this there (or the path leads to the workspace root).
    #[error("{0}")]
    PermissionDenied(String),
    /// A file operation done through the sandbox's shell failed in a way no path error explains
    /// (a missing tool, damaged output).
    #[error("{0}")]
    Shell(String),
    /// A manifest entry could not be materialised (a repository that could not be fetched or
    /// cloned, a secret gone from the vault); the message names the entry.
    #[error("{0}")]
    Manifest(String),
    #[error("This workspace is a document (the state backend): it runs no commands. Read and write files instead.")]
    NoCommands,
    #[error("This workspace's files are gone: the host no longer has them (its workspace TTL removed them, or the host was rebuilt). The next turn starts with a fresh workspace.")]
    Lost,
    /// Refused before anything reached a host (a path, a scope, a switched-off connection).
    #[error("{0}")]
    Refused(String),
    /// The caller's role does not allow workspace operations.
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    BadPath(String),
    /// Input refused before anything reached a host, naming its fields (422).
    #[error("invalid input")]
    Invalid(FieldErrors),
    /// The snapshot store did not answer within its deadlines (504); the message names it.
    #[error("{message}")]
    StoreNoAnswer {
        message: String,
        #[source]
        source: anyhow::Error,
    },
    /// The snapshot store answered with a failure or could not be reached (502); the message
    /// names it.
    #[error("{message}")]
    StoreFailed {
        message: String,
        #[source]
        source: anyhow::Error,
    },
    #[error(transparent)]
    Host(HostError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<crate::db::DbError> for WorkspaceError {
    fn from(e: crate::db::DbError) -> Self {
        WorkspaceError::Internal(e.into())
    }
}

/// The agents service answers the workspaces service about runs and agents of an organization:
/// anything but a database failure is unexpected there.
impl From<AgentError> for WorkspaceError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Internal(e) => WorkspaceError::Internal(e),
            other => WorkspaceError::Internal(anyhow::anyhow!("agents: {other}")),
        }
    }
}

/// A host's failure, whatever its kind: a sandbox gone is the workspace lost (a kind's file
/// errors are turned into the workspace's own words in its backend, before they get here).
impl From<HostError> for WorkspaceError {
    fn from(e: HostError) -> Self {
        match e {
            // The sandbox is gone, and its files with it.
            HostError::Refused { why: Refusal::Gone, .. } => WorkspaceError::Lost,
            other => WorkspaceError::Host(other),
        }
    }
}

impl WorkspaceError {
    /// The detail word a failed operation's row carries (written by us, never the host's text).
    pub fn detail(&self) -> &'static str {
        match self {
            WorkspaceError::NotFound(_) => "not found",
            WorkspaceError::IsADirectory(_) => "is a directory",
            WorkspaceError::NotADirectory(_) => "not a directory",
            WorkspaceError::AlreadyExists(_) => "already exists",
            WorkspaceError::TooLarge(_) => "over the limit",
            WorkspaceError::NotRegular(_) => "not a regular file",
            WorkspaceError::PermissionDenied(_) => "permission denied",
            WorkspaceError::Shell(_) => "shell failed",
            WorkspaceError::Manifest(_) => "manifest entry failed",
            WorkspaceError::NoCommands => "no commands",
            WorkspaceError::Lost => "lost",
            WorkspaceError::Refused(_)
            | WorkspaceError::BadPath(_)
            | WorkspaceError::Invalid(_)
            | WorkspaceError::Forbidden(_) => "refused",
            WorkspaceError::Host(h) => h.row_detail(),
            WorkspaceError::StoreNoAnswer { .. } => "store timed out",
            WorkspaceError::StoreFailed { .. } => "store failed",
            WorkspaceError::Internal(_) => "error",
        }
    }
}

/// A connection that cannot be used now: the workspace refuses (409, not recorded).
impl From<ConnectionError> for WorkspaceError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::Internal(e) => WorkspaceError::Internal(e),
            ConnectionError::NotFound => {
                WorkspaceError::NotFound("There is nothing here, or you may not see it.".into())
            }
            ConnectionError::Forbidden => WorkspaceError::Forbidden(other_forbidden()),
            ConnectionError::Host(h) => WorkspaceError::Refused(h.in_words()),
            other => WorkspaceError::Refused(other.to_string()),
        }
    }
}

fn other_forbidden() -> String {
    "Your role in this organization does not allow this.".into()
}
