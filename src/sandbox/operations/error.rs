//! What reading the operation log can come to.

use crate::db::DbError;
use crate::validate::FieldErrors;

#[derive(Debug, thiserror::Error)]
pub enum OperationsError {
    /// Members may not read the log (operators and above).
    #[error("this role may not read the operation log")]
    Forbidden,
    /// A filter, the page size or the cursor was refused; a message per field.
    #[error("a filter was refused")]
    Invalid(FieldErrors),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for OperationsError {
    fn from(e: DbError) -> Self {
        OperationsError::Internal(e.into())
    }
}
