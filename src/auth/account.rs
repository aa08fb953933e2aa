//! What a signed-in person does to their own account: choose a new password (the current one
//! required; every other sign-in ends) and see or end their sign-ins.

use secrecy::{ExposeSecret, SecretString};

use super::error::AuthError;
use super::model::SessionInfo;
use super::password;
use super::service::{clear_failures, ensure_not_locked, record_failure};
use super::store::{self, SessionRow};
use crate::audit::service::{self as audit, Actor};
use crate::db::{self, Db, DbError};
use crate::orgs::service as orgs;
use crate::state::AppState;
use crate::validate::{self, FieldErrors};

/// A sign-in's last use is written at most this often.
const SEEN_EVERY_MS: i64 = 60_000;
/// The longest user agent kept.
const USER_AGENT_MAX: usize = 300;

/// The form of a password change.
pub struct PasswordChange {
    pub current: SecretString,
    pub new: SecretString,
    pub confirm: SecretString,
}

/// Changes the password of `user_id`, signed in as `session_id`: the current password is checked
/// (a wrong one counts towards the account's sign-in limit), the new one follows the usual rules
/// and differs from it. Every other sign-in of the account ends; this one stays. Returns how
/// many ended. Every refused field is reported at once.
pub async fn change_password(
    st: &AppState,
    user_id: &str,
    session_id: &str,
    input: PasswordChange,
) -> Result<u64, AuthError> {
    let mut c = st.db.conn().await?;
    let user = store::find_user_by_id(&mut c, user_id).await?.ok_or(AuthError::NotFound)?;
    drop(c);
    let now = db::now_ms();
    // The current password first: its message comes first, where the form has it.
    let current_error = if input.current.expose_secret().is_empty() {
        Some("Enter your current password.")
    } else {
        let failures = ensure_not_locked(st, &user.email, now).await?;
        let current = SecretString::from(input.current.expose_secret().to_string());
        if password::verify(current, Some(user.password_hash)).await? {
            None
        } else {
            let mut tx = st.db.begin().await?;
            record_failure(st, &mut tx, &user.email, failures, now, "wrong current password at a password change")
                .await?;
            tx.commit().await.map_err(DbError::from)?;
            Some("This is not your current password.")
        }
    };
    let (current, new) = (input.current.expose_secret(), input.new.expose_secret());
    let mut errors = FieldErrors::new();
    if let Some(message) = current_error {
        errors.add("current_password", message);
    }
    validate::new_password(&mut errors, "new_password", new);
    if !current.is_empty() && current == new {
        errors.add("new_password", "Choose a password other than your current one.");
    }
    if new != input.confirm.expose_secret() {
        errors.add("confirm_password", "This is not the same as the new password.");
    }
    errors.into_result().map_err(AuthError::Invalid)?;

    let hash = password::hash(input.new).await?;
    let mut tx = st.db.begin().await?;
    clear_failures(st, &mut tx, &user.email, now).await?;
    store::set_password(&mut tx, user_id, &hash).await?;
    let ended = store::delete_other_sessions(&mut tx, user_id, session_id).await?;
    let detail = match ended {
        0 => "no other sign-in to end".to_string(),
        1 => "1 other sign-in ended".to_string(),
        n => format!("{n} other sign-ins ended"),
    };
    for org_id in orgs::organization_ids_of(&mut tx, user_id).await? {
        let actor = Actor::user(user_id, &user.email);
        audit::record(&mut tx, &org_id, &actor, "account.password_changed", &user.email, &detail).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "password_changed", user_id = %user_id, sessions_ended = ended, "password changed");
    Ok(ended)
}

/// The live sign-ins of `user_id`, the most recently used first.
pub async fn sessions(db: &Db, user_id: &str) -> Result<Vec<SessionInfo>, AuthError> {
    let mut c = db.conn().await?;
    Ok(store::sessions_of(&mut c, user_id, db::now_ms()).await?)
}

/// Ends one of the person's own sign-ins; anyone else's is [`AuthError::NotFound`].
pub async fn end_session(db: &Db, user_id: &str, session_id: &str) -> Result<(), AuthError> {
    let mut c = db.conn().await?;
    match store::delete_session_of(&mut c, user_id, session_id).await? {
        0 => Err(AuthError::NotFound),
        _ => Ok(()),
    }
}

/// Notes that a sign-in is being used, by which browser (written at most once a minute, or when
/// the browser changes).
pub async fn note_use(db: &Db, session: &SessionRow, user_agent: Option<&str>) -> Result<(), AuthError> {
    let now = db::now_ms();
    let agent = user_agent.map(clean_user_agent).filter(|a| !a.is_empty());
    let stale = session.last_seen_at.is_none_or(|t| now - t >= SEEN_EVERY_MS);
    if stale || agent != session.user_agent {
        let mut c = db.conn().await?;
        store::touch_session(&mut c, &session.id, now, agent.as_deref()).await?;
    }
    Ok(())
}

/// A user agent as it is kept: no control characters, at most [`USER_AGENT_MAX`] characters.
fn clean_user_agent(raw: &str) -> String {
    raw.chars().filter(|c| !c.is_control()).take(USER_AGENT_MAX).collect::<String>().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::clean_user_agent;

    #[test]
    fn a_user_agent_is_kept_without_control_characters_and_cut_short() {
        assert_eq!(clean_user_agent(" Mozilla/5.0\u{7}\n "), "Mozilla/5.0");
        assert_eq!(clean_user_agent(&"a".repeat(400)).len(), 300);
    }
}
