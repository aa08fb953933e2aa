//! What reading a host's sessions can come to.

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::hosts::error::HostError;
use crate::sandbox::hosts::sandboxd::client::SandboxdError;
use crate::sandbox::workspaces::error::WorkspaceError;

#[derive(Debug, thiserror::Error)]
pub enum RunningError {
    /// No such connection or session of this organization (another tenant's is not ours either).
    #[error("no such connection or session of this organization")]
    NotFound,
    /// The session's key names another connection of this organization (the one that opened it,
    /// named here): it is closed, and its activity read, only under that one.
    #[error(
        "This session belongs to the connection “{0}”, which opened it (its name is made for that connection): close \
         it there."
    )]
    OwnedElsewhere(String),
    /// Deleting a session's files was refused under the claim an open takes: a workspace other than
    /// the one it was shown for uses the session now, or an open of its name is under way (the
    /// words say which). Nothing reached the host.
    #[error("{0}")]
    InUse(String),
    #[error("this role may not see sandbox hosts")]
    Forbidden,
    /// The host could not be asked (no credential, no address) or did not answer well.
    #[error(transparent)]
    HostUnavailable(ConnectionError),
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl From<ConnectionError> for RunningError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::NotFound => RunningError::NotFound,
            ConnectionError::Forbidden => RunningError::Forbidden,
            ConnectionError::Internal(e) => RunningError::Internal(e),
            other => RunningError::HostUnavailable(other),
        }
    }
}

impl From<HostError> for RunningError {
    /// The host's "No such session" (or sandbox) is ours too.
    fn from(e: HostError) -> Self {
        match e {
            HostError::NotFound { .. } => RunningError::NotFound,
            other => RunningError::HostUnavailable(ConnectionError::Host(other)),
        }
    }
}

impl From<SandboxdError> for RunningError {
    fn from(e: SandboxdError) -> Self {
        HostError::from(e).into()
    }
}

impl From<crate::db::DbError> for RunningError {
    fn from(e: crate::db::DbError) -> Self {
        RunningError::Internal(e.into())
    }
}

impl From<WorkspaceError> for RunningError {
    /// Only a role may be refused here; anything else is a failure of ours.
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::Forbidden(_) => RunningError::Forbidden,
            other => RunningError::Internal(other.into()),
        }
    }
}
