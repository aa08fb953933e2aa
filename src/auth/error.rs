//! What signing up, signing in and sessions can come to.

use crate::db::DbError;
use crate::orgs::invitations::error::InvitationError;
use crate::validate::FieldErrors;

/// The outcomes of the account rules, in the words a person reads where there are any.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The e-mail, password or organization name was refused; a message per field.
    #[error("the e-mail, password or organization name was refused")]
    Invalid(FieldErrors),
    #[error("The e-mail or password is wrong.")]
    BadCredentials,
    /// No such sign-in (or account) of the caller's.
    #[error("no such sign-in")]
    NotFound,
    /// Accepting an invitation with a password that is not its account's.
    #[error("This e-mail address has an account, and that is not its password.")]
    WrongPassword,
    /// The invitation being accepted cannot be (unknown, used, revoked, expired).
    #[error(transparent)]
    Invitation(InvitationError),
    #[error("Too many failed sign-ins for this account. Try again in {} minutes.", .retry_after.div_ceil(60))]
    LockedOut { retry_after: u64 },
    /// Only admins and owners reset a member's password.
    #[error("only admins and owners reset passwords")]
    Forbidden,
    /// A member's password may not be reset by the caller; why, in words a person reads.
    #[error("{0}")]
    ResetRefused(String),
    /// A password-reset link that is unknown, expired or already used.
    #[error("This reset link has expired or was already used. Ask for a new one.")]
    ResetLinkGone,
    /// The second step of a sign-in is not (or no longer) there: expired, taken, or never begun.
    #[error("Your sign-in took too long or was finished elsewhere. Sign in again.")]
    SecondStepGone,
    /// First-run setup was asked for again: it exists only while no account does.
    #[error("setup is done")]
    SetupDone,
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for AuthError {
    fn from(e: DbError) -> Self {
        AuthError::Internal(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::AuthError;

    #[test]
    fn a_lock_out_says_whole_minutes() {
        let e = AuthError::LockedOut { retry_after: 61 };
        assert_eq!(e.to_string(), "Too many failed sign-ins for this account. Try again in 2 minutes.");
    }
}
