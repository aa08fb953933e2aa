//! What the invitation rules can come to.

use crate::access::Role;
use crate::db::DbError;
use crate::validate::FieldErrors;

/// Why an invitation that exists can no longer be accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gone {
    Accepted,
    Revoked,
    Expired,
}

#[derive(Debug, thiserror::Error)]
pub enum InvitationError {
    /// No such invitation in the caller's organization (or for the caller's e-mail).
    #[error("no such invitation")]
    NotFound,
    /// An invitation link whose code matches no invitation.
    #[error("This invitation link is not valid. Check that you copied all of it, or ask for a new invitation.")]
    UnknownCode,
    #[error("{}", gone_message(*.0))]
    Gone(Gone),
    #[error("only admins and owners invite people")]
    Forbidden,
    /// Someone signed in as another e-mail address than the invited one.
    #[error("This invitation is for another e-mail address. Sign out, then open the link again.")]
    NotYours,
    /// The e-mail or role was refused; a message per field.
    #[error("the e-mail or role was refused")]
    Invalid(FieldErrors),
    /// The pending invitation carries a role above the caller's.
    #[error("The invitation of {email} carries a role above yours; only an owner can {action}.")]
    Outranked { email: String, action: &'static str },
    /// Revoking an invitation that was accepted.
    #[error("This invitation was accepted already; remove the member instead.")]
    AlreadyAccepted,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

fn gone_message(why: Gone) -> &'static str {
    match why {
        Gone::Accepted => "This invitation has been used already. Sign in to reach the organization.",
        Gone::Revoked => "This invitation was withdrawn or replaced by a newer one. Ask for a new invitation.",
        Gone::Expired => "This invitation has expired. Ask for a new invitation.",
    }
}

impl InvitationError {
    /// A role above the caller's own, refused on the `role` field (beside the form's others).
    pub fn above_own_role_errors(caller: Role) -> FieldErrors {
        FieldErrors::one("role", format!("You cannot grant a role above your own ({caller})."))
    }
}

impl From<DbError> for InvitationError {
    fn from(e: DbError) -> Self {
        e.not_found_or(InvitationError::NotFound, InvitationError::Internal)
    }
}
