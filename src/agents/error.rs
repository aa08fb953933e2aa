//! What the agents services can come to, in their own words; web/error.rs maps it to HTTP.

use crate::db::DbError;
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
    #[error("an agent with this name exists already in this organization")]
    NameTaken,
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
            AgentError::NameTaken => {
                let mut f = FieldErrors::new();
                f.add("name", "An agent with this name exists already in this organization.");
                Some(f)
            }
            _ => None,
        }
    }
}
