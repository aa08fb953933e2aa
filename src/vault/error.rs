//! What the vault rules can come to.

use crate::db::DbError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum VaultError {
    #[error("no such secret in this organization")]
    NotFound,
    #[error("only builders and above manage the vault")]
    Forbidden,
    /// The name (a taken one too), purpose or value was refused; a message per field.
    #[error("the secret's name, purpose or value was refused")]
    Invalid(FieldErrors),
    /// A secret a connection uses: the message names the connections.
    #[error("{0}")]
    InUse(String),
    /// A store failure, or a value that does not decrypt under this deployment's key.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for VaultError {
    fn from(e: DbError) -> Self {
        e.not_found_or(VaultError::NotFound, VaultError::Internal)
    }
}
