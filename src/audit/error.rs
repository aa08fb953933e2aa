//! What reading the audit log can come to.

use crate::db::DbError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("only admins and owners read the audit log")]
    Forbidden,
    /// A filter was refused; a message per field.
    #[error("a filter was refused")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for AuditError {
    fn from(e: DbError) -> Self {
        AuditError::Internal(e.into())
    }
}
