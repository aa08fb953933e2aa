//! What the organization and membership rules can come to.

use crate::access::Role;
use crate::auth::error::AuthError;
use crate::db::DbError;
use crate::validate::FieldErrors;

/// The outcomes of the membership rules; the refusals say why in the words a person reads.
#[derive(Debug, thiserror::Error)]
pub enum OrgError {
    /// No such organization or membership of the caller's.
    #[error("no such organization or member")]
    NotFound,
    #[error("only admins and owners manage members")]
    Forbidden,
    /// The name, e-mail or role was refused; a message per field.
    #[error("the name, e-mail or role was refused")]
    Invalid(FieldErrors),
    /// The member outranks the caller; `action` is what only an owner may do to them.
    #[error("{email} outranks you; only an owner can {action}.")]
    Outranked { email: String, action: &'static str },
    /// The new role is above the caller's own.
    #[error("You cannot grant a role above your own ({0}).")]
    AboveOwnRole(Role),
    /// The organization would be left without an owner; what was refused (`demoted`, `removed`).
    #[error("The last owner cannot be {0}. Make someone else an owner first.")]
    LastOwner(&'static str),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for OrgError {
    fn from(e: DbError) -> Self {
        e.not_found_or(OrgError::NotFound, OrgError::Internal)
    }
}

impl From<AuthError> for OrgError {
    fn from(e: AuthError) -> Self {
        OrgError::Internal(anyhow::anyhow!(e))
    }
}
