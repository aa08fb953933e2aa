//! An owner or admin resets a member's password: the account gets a one-time password, shown
//! once to whoever reset it and never stored but as its argon2id hash, every sign-in of the
//! account ends, and whoever signs in with it must choose their own password before anything
//! else. The audit log records who reset whose password, never the password.

use secrecy::SecretString;

use super::error::AuthError;
use super::{password, secrets, store};
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::{Db, DbError};
use crate::orgs::error::OrgError;
use crate::orgs::service as orgs;

/// A password just reset: the one-time password to hand to the person, shown once.
pub struct Reset {
    pub email: String,
    pub one_time_password: String,
    pub sessions_ended: u64,
}

fn from_org(e: OrgError) -> AuthError {
    match e {
        OrgError::NotFound => AuthError::NotFound,
        OrgError::Forbidden => AuthError::Forbidden,
        other => AuthError::Internal(other.into()),
    }
}

/// Resets the password of the member `membership_id` of the caller's organization (another
/// organization's is [`AuthError::NotFound`]). Refused for the caller themselves (their account
/// page changes it), for a member who outranks them, and for a member of another organization
/// where the caller may not manage them: an account is one across organizations.
pub async fn reset_member_password(db: &Db, caller: &Caller, membership_id: &str) -> Result<Reset, AuthError> {
    if !caller.role.can_manage_members() {
        return Err(AuthError::Forbidden);
    }
    let members = orgs::members(db, caller).await.map_err(from_org)?;
    let target = members.into_iter().find(|m| m.id == membership_id).ok_or(AuthError::NotFound)?;
    if target.user_id == caller.user_id {
        return Err(AuthError::ResetRefused("Change your own password on your account page.".to_string()));
    }
    if target.role.outranks(caller.role) {
        let message = format!("{} outranks you; only an owner can reset their password.", target.email);
        return Err(AuthError::ResetRefused(message));
    }
    let mine = orgs::choices(db, &caller.user_id).await.map_err(from_org)?;
    for theirs in orgs::choices(db, &target.user_id).await.map_err(from_org)? {
        let managed = mine
            .iter()
            .find(|o| o.organization_id == theirs.organization_id)
            .is_some_and(|o| o.role.can_manage_members() && !theirs.role.outranks(o.role));
        if !managed {
            let message = format!(
                "{} also belongs to another organization, where you do not manage them. They can change their \
                 password themselves, or an owner there can reset it.",
                target.email
            );
            return Err(AuthError::ResetRefused(message));
        }
    }

    let one_time = secrets::one_time_password();
    let hash = password::hash(SecretString::from(one_time.clone())).await?;
    let mut tx = db.begin().await?;
    store::set_issued_password(&mut tx, &target.user_id, &hash).await?;
    let ended = store::delete_sessions_of(&mut tx, &target.user_id).await?;
    store::clear_failures(&mut tx, &target.email, None).await?;
    let detail = match ended {
        1 => "one-time password issued; 1 sign-in ended".to_string(),
        n => format!("one-time password issued; {n} sign-ins ended"),
    };
    for org_id in orgs::organization_ids_of(&mut tx, &target.user_id).await? {
        audit::record(&mut tx, &org_id, &caller.actor(), "member.password_reset", &target.email, &detail).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "password_reset", user_id = %target.user_id, by = %caller.user_id, sessions_ended = ended,
        "password reset by an admin");
    Ok(Reset { email: target.email, one_time_password: one_time, sessions_ended: ended })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_one_time_password_is_long_and_readable() {
        let p = super::secrets::one_time_password();
        assert_eq!(p.len(), 23, "{p}");
        assert!(p.chars().all(|c| c == '-' || c.is_ascii_lowercase() || c.is_ascii_digit()), "{p}");
    }
}
