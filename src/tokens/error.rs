//! What the API token rules can come to.

use crate::db::DbError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("no such token in this organization")]
    NotFound,
    #[error("only admins and owners manage API tokens")]
    Forbidden,
    /// The name or role was refused; a message per field.
    #[error("the token's name or role was refused")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for TokenError {
    fn from(e: DbError) -> Self {
        e.not_found_or(TokenError::NotFound, TokenError::Internal)
    }
}
