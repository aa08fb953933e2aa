//! Joining an organization from an invitation link without a sign-in: one password field serves
//! both an existing account (its password, checked with argon2id and counted by the same
//! per-account limit as /login) and a new one (the password it will have, under the usual rules).
//! Taking the invitation, creating the account, adding the membership and starting the session
//! happen in one transaction.

use secrecy::{ExposeSecret, SecretString};

use super::error::AuthError;
use super::service::{clear_failures, create_session, ensure_not_locked, record_failure, NewSession};
use super::{password, store};
use crate::db::{self, DbError};
use crate::orgs::invitations::model::InvitationRecord;
use crate::orgs::invitations::service as invitations;
use crate::state::AppState;
use crate::validate::{self, FieldErrors};

/// The person joined: their new sign-in and the invitation they accepted.
pub struct Joined {
    pub session: NewSession,
    pub invitation: InvitationRecord,
}

/// Accepts the invitation of `code` for whoever knows the password of its e-mail address's
/// account, or creates that account with `password` when there is none. The page asks for the
/// password twice (`confirm`, `None` from a client that sends one field only): a mismatch is
/// refused at the second field before anything is checked or written, whether or not the
/// account exists, so that the answer tells nothing about it.
pub async fn join_with_password(
    st: &AppState,
    code: &str,
    password_raw: SecretString,
    confirm: Option<SecretString>,
) -> Result<Joined, AuthError> {
    let inv = invitations::by_code(&st.db, code).await.map_err(AuthError::Invitation)?;
    let mut errors = FieldErrors::new();
    if password_raw.expose_secret().is_empty() {
        errors.add("password", "Enter your password, or choose one if you are new here.");
    }
    if confirm.as_ref().is_some_and(|c| c.expose_secret() != password_raw.expose_secret()) {
        errors.add("confirm_password", "This is not the same as the password above.");
    }
    errors.into_result().map_err(AuthError::Invalid)?;
    let email = inv.email.clone();
    let now = db::now_ms();
    let failures = ensure_not_locked(st, &email, now).await?;
    let mut c = st.db.conn().await?;
    let existing = store::find_user_by_email(&mut c, &email).await?;
    drop(c);

    let (user_id, new_hash) = match existing {
        Some(user) => {
            if !password::verify(password_raw, Some(user.password_hash)).await? {
                let mut tx = st.db.begin().await?;
                record_failure(st, &mut tx, &email, failures, now, "wrong password at an invitation").await?;
                tx.commit().await.map_err(DbError::from)?;
                tracing::info!(event = "invitation_sign_in_failed", "wrong password at an invitation");
                return Err(AuthError::WrongPassword);
            }
            // A password alone does not sign in an account with two-factor sign-in on.
            let mut c = st.db.conn().await?;
            if super::two_factor::service::is_on(&mut c, &user.id).await? {
                let message = "This account uses two-factor sign-in: sign in first, then open this link again.";
                return Err(AuthError::Invalid(FieldErrors::one("password", message)));
            }
            (user.id, None)
        }
        None => {
            let mut errors = FieldErrors::new();
            validate::new_password(&mut errors, "password", password_raw.expose_secret());
            errors.into_result().map_err(AuthError::Invalid)?;
            (db::new_id(), Some(password::hash(password_raw).await?))
        }
    };

    let mut tx = st.db.begin().await?;
    let note = match &new_hash {
        Some(hash) => {
            // An account created for this address meanwhile has a password nobody checked here.
            match store::insert_user(&mut tx, &user_id, &email, hash, now).await {
                Err(e) if e.is_conflict() => {
                    let message = "An account for this e-mail address was just created. Enter its password.";
                    return Err(AuthError::Invalid(FieldErrors::one("password", message)));
                }
                other => other?,
            }
            "account created"
        }
        None => {
            clear_failures(st, &mut tx, &email, now).await?;
            ""
        }
    };
    invitations::accept_in(&mut tx, &inv, &user_id, &email, note).await.map_err(AuthError::Invitation)?;
    // Joining with a password is a sign-in (the invitation's audit line says who joined).
    store::note_sign_in(&mut tx, &user_id, now).await?;
    let session = create_session(st, &mut tx, &user_id, Some(&inv.organization_id)).await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "invitation_accepted", user_id = %user_id, organization_id = %inv.organization_id, "joined");
    Ok(Joined { session, invitation: inv })
}
