//! What reading a host's policy can come to.

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::hosts::sandboxd::client::SandboxdError;

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("no such connection in this organization")]
    NotFound,
    #[error("this role may not see sandbox hosts")]
    Forbidden,
    #[error("A Daytona connection has no sandboxd policy to show.")]
    NotSandboxd,
    /// The host could not be asked (no credential, no address) or did not answer well.
    #[error(transparent)]
    HostUnavailable(ConnectionError),
    #[error(transparent)]
    Internal(anyhow::Error),
}

impl From<ConnectionError> for PolicyError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::NotFound => PolicyError::NotFound,
            ConnectionError::Forbidden => PolicyError::Forbidden,
            ConnectionError::Internal(e) => PolicyError::Internal(e),
            other => PolicyError::HostUnavailable(other),
        }
    }
}

impl From<SandboxdError> for PolicyError {
    fn from(e: SandboxdError) -> Self {
        PolicyError::HostUnavailable(ConnectionError::from(e))
    }
}
