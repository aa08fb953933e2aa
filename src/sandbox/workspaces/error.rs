use crate::sandbox::client::{FileErrorKind, SandboxdError};
use crate::sandbox::connections::service::host_error;
use crate::web::{AppError, Kind};

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
    #[error("This workspace is a document (the state backend): it runs no commands. Read and write files instead.")]
    NoCommands,
    #[error("This workspace's files are gone: the host no longer has them (its workspace TTL removed them, or the host was rebuilt). The next turn starts with a fresh workspace.")]
    Lost,
    /// Refused before anything reached a host (a path, a scope, a switched-off connection).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    BadPath(String),
    #[error(transparent)]
    Host(SandboxdError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<crate::db::DbError> for WorkspaceError {
    fn from(e: crate::db::DbError) -> Self {
        WorkspaceError::Internal(e.into())
    }
}

impl From<AppError> for WorkspaceError {
    fn from(e: AppError) -> Self {
        match e.kind {
            Kind::NotFound => WorkspaceError::NotFound(e.detail),
            Kind::Internal => WorkspaceError::Internal(anyhow::anyhow!("{e}")),
            _ => WorkspaceError::Refused(e.detail),
        }
    }
}

impl From<SandboxdError> for WorkspaceError {
    fn from(e: SandboxdError) -> Self {
        match e {
            SandboxdError::File { kind: FileErrorKind::NotFound, .. } => {
                WorkspaceError::NotFound("No such file or folder.".into())
            }
            SandboxdError::File { kind: FileErrorKind::IsADirectory, .. } => {
                WorkspaceError::IsADirectory("This is a folder.".into())
            }
            SandboxdError::File { kind: FileErrorKind::NotADirectory, .. } => {
                WorkspaceError::NotADirectory("A part of this path is a file, not a folder.".into())
            }
            SandboxdError::File { kind: FileErrorKind::AlreadyExists, .. } => {
                WorkspaceError::AlreadyExists("Something else is already at this path.".into())
            }
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
            WorkspaceError::NoCommands => "no commands",
            WorkspaceError::Lost => "lost",
            WorkspaceError::Refused(_) | WorkspaceError::BadPath(_) => "refused",
            WorkspaceError::Host(h) => match h {
                SandboxdError::Unreachable { .. } => "unreachable",
                SandboxdError::Timeout => "timed out",
                SandboxdError::CredentialRefused => "credential refused",
                SandboxdError::VersionMismatch { .. } => "version mismatch",
                SandboxdError::Capacity { .. } => "capacity",
                SandboxdError::NotNative { .. } | SandboxdError::Invalid { .. } => "refused",
                SandboxdError::NotFound { .. } | SandboxdError::Gone { .. } => "not found",
                _ => "host error",
            },
            WorkspaceError::Internal(_) => "error",
        }
    }
}

impl From<WorkspaceError> for AppError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::NotFound(m) => AppError::new(Kind::NotFound, m),
            WorkspaceError::IsADirectory(m) | WorkspaceError::NotADirectory(m) | WorkspaceError::BadPath(m) => {
                AppError::new(Kind::BadRequest, m)
            }
            WorkspaceError::AlreadyExists(m) | WorkspaceError::Refused(m) => AppError::new(Kind::Conflict, m),
            WorkspaceError::TooLarge(m) => AppError::new(Kind::PayloadTooLarge, m),
            e @ WorkspaceError::NoCommands => AppError::new(Kind::BadRequest, e.to_string()),
            e @ WorkspaceError::Lost => AppError::new(Kind::Gone, e.to_string()),
            WorkspaceError::Host(SandboxdError::NotNative { detail }) => {
                AppError::new(Kind::Conflict, format!("The host refused this file operation: {detail}"))
            }
            WorkspaceError::Host(SandboxdError::Invalid { detail }) => AppError::new(Kind::BadRequest, detail),
            WorkspaceError::Host(h) => host_error(&h),
            WorkspaceError::Internal(e) => AppError::internal(e),
        }
    }
}
