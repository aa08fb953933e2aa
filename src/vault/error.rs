//! What the vault rules can come to.

use crate::db::DbError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    /// No such secret in the caller's organization.
    #[error("not found")]
    NotFound,
    /// Only builders and above manage the vault.
    #[error("not allowed")]
    Forbidden,
    /// The name (a taken one too), purpose or value was refused; a message per field.
    #[error("invalid input")]
    Invalid(FieldErrors),
    /// A store failure, or a value that does not decrypt under this deployment's key.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for VaultError {
    fn from(e: DbError) -> Self {
        e.not_found_or(VaultError::NotFound, VaultError::Internal)
    }
}
