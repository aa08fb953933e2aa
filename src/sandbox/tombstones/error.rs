//! What the tombstones capability can come to.

use crate::db::DbError;

#[derive(Debug, thiserror::Error)]
pub enum TombstoneError {
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for TombstoneError {
    fn from(e: DbError) -> Self {
        TombstoneError::Internal(e.into())
    }
}
