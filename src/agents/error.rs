//! What the agents services can come to, in their own words; web/error.rs maps it to HTTP.

use crate::db::DbError;
use crate::sandbox::connections::error::ConnectionError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No such agent, conversation or run in this organization (or not one the caller may see).
    #[error("not found")]
    NotFound,
    /// The caller's role does not allow this.
    #[error("not allowed")]
    Forbidden,
    #[error("invalid input")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for AgentError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::NotFound => AgentError::NotFound,
            other => AgentError::Internal(other.into()),
        }
    }
}

impl AgentError {
    /// An input problem as messages at their fields (a taken name is one at `name`).
    pub fn fields(&self) -> Option<FieldErrors> {
        match self {
            AgentError::Invalid(f) => Some(f.clone()),
            _ => None,
        }
    }
}

/// Listing connections answers "not allowed" or a failure; anything else is unexpected here.
impl From<ConnectionError> for AgentError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::Forbidden => AgentError::Forbidden,
            ConnectionError::NotFound => AgentError::NotFound,
            ConnectionError::Invalid(f) => AgentError::Invalid(f),
            ConnectionError::Internal(e) => AgentError::Internal(e),
            other => AgentError::Internal(other.into()),
        }
    }
}
