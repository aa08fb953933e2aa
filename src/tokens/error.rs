//! What the API token rules can come to.

use crate::db::DbError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// No such token in the caller's organization.
    #[error("not found")]
    NotFound,
    /// Only admins and owners manage tokens.
    #[error("not allowed")]
    Forbidden,
    /// The name or role was refused; a message per field.
    #[error("invalid input")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for TokenError {
    fn from(e: DbError) -> Self {
        e.not_found_or(TokenError::NotFound, TokenError::Internal)
    }
}
