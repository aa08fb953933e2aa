//! A person who forgot their password asks for a reset link by mail (where `AGENTICOS_SMTP_URL`
//! is set; without it the page says to ask an owner or admin, who can issue a one-time password).
//! The answer to a request is the same whether or not the address has an account, and the mail
//! goes out after the answer, so that neither its words nor its time tell. A link works once, for
//! an hour; only its token's hash is stored; choosing the new password ends every sign-in of the
//! account and every other link, and the audit log of each of its organizations records it.

use secrecy::{ExposeSecret, SecretString};

use super::error::AuthError;
use super::{password, secrets, store};
use crate::audit::service::{self as audit, Actor};
use crate::db::{self, DbError};
use crate::orgs::service as orgs;
use crate::state::AppState;
use crate::validate::{self, FieldErrors};

/// How long a reset link works.
pub const LINK_LIFETIME_MS: i64 = 60 * 60 * 1000;
/// At most this many links per account per hour: further requests answer the same, send nothing.
pub const LINKS_PER_HOUR: i64 = 3;
/// The reset mail's subject.
pub const SUBJECT: &str = "Reset your agenticos password";

/// Sends a reset link (`link` of the token: the page's URL on the public address) to `email_raw`
/// when it is an account's and mail is configured; answers the same either way (a malformed
/// address is refused at its field).
pub async fn request_link(st: &AppState, email_raw: &str, link: impl FnOnce(&str) -> String) -> Result<(), AuthError> {
    let mut errors = FieldErrors::new();
    let email = validate::email(&mut errors, "email", email_raw);
    errors.into_result().map_err(AuthError::Invalid)?;
    let Some(mailer) = st.mailer.clone() else { return Ok(()) };
    // Counted and issued in one transaction that holds the account (SQLite: the write lock from
    // its start; PostgreSQL: the user's row), so a burst of requests issues at most the limit.
    let mut tx = st.db.begin().await?;
    let Some(user) = store::find_user_by_email(&mut tx, &email).await? else {
        tracing::info!(event = "password_reset_link_unknown", "reset link asked for an address without an account");
        return Ok(());
    };
    store::lock_user_for_reset(&mut tx, st.db.kind(), &user.id).await?;
    let now = db::now_ms();
    if store::reset_links_since(&mut tx, &user.id, now - 60 * 60 * 1000).await? >= LINKS_PER_HOUR {
        tracing::info!(event = "password_reset_link_limited", user_id = %user.id, "reset link not sent: hourly limit");
        return Ok(());
    }
    let token = secrets::random_token(32);
    store::insert_reset_link(&mut tx, &secrets::sha256_hex(&token), &user.id, now, now + LINK_LIFETIME_MS).await?;
    tx.commit().await.map_err(DbError::from)?;
    let text = mail_text(&st.config.http.public_url, &user.email, &link(&token));
    tokio::spawn(async move {
        match mailer.send(&user.email, SUBJECT, text).await {
            Ok(()) => tracing::info!(event = "password_reset_mail_sent", user_id = %user.id, "reset link sent"),
            Err(e) => tracing::warn!(event = "password_reset_mail_failed", user_id = %user.id, error = %e,
                "reset link not sent"),
        }
    });
    Ok(())
}

/// The reset mail's words.
fn mail_text(public_url: &url::Url, email: &str, link: &str) -> String {
    let console = public_url.as_str().trim_end_matches('/');
    format!(
        "Someone, hopefully you, asked to reset the password of the agenticos account {email} at {console}.\n\n\
         Choose a new password here. The link works once, within the next hour:\n\n{}\n\n\
         If you did not ask for this, ignore this mail: your password stays as it is.\n",
        link
    )
}

/// The e-mail address of a live link's account (the page shows whose password it sets).
pub async fn link_email(st: &AppState, token: &str) -> Result<String, AuthError> {
    let mut c = st.db.conn().await?;
    let user = store::find_reset_link_user(&mut c, &secrets::sha256_hex(token), db::now_ms()).await?;
    user.map(|u| u.email).ok_or(AuthError::ResetLinkGone)
}

/// Sets the password of a live link's account: the link is taken (it works once), every sign-in
/// of the account ends, its failed sign-ins are forgotten. Returns the account's e-mail address.
pub async fn reset_with_link(
    st: &AppState,
    token: &str,
    new: SecretString,
    confirm: SecretString,
) -> Result<String, AuthError> {
    let token_hash = secrets::sha256_hex(token);
    let mut c = st.db.conn().await?;
    let user = store::find_reset_link_user(&mut c, &token_hash, db::now_ms()).await?.ok_or(AuthError::ResetLinkGone)?;
    drop(c);
    let mut errors = FieldErrors::new();
    validate::new_password(&mut errors, "new_password", new.expose_secret());
    if new.expose_secret() != confirm.expose_secret() {
        errors.add("confirm_password", "This is not the same as the new password.");
    }
    errors.into_result().map_err(AuthError::Invalid)?;

    let hash = password::hash(new).await?;
    let now = db::now_ms();
    let mut tx = st.db.begin().await?;
    if !store::take_reset_link(&mut tx, &token_hash, &user.id, now).await? {
        return Err(AuthError::ResetLinkGone);
    }
    store::set_password(&mut tx, &user.id, &hash).await?;
    let ended = store::delete_sessions_of(&mut tx, &user.id).await?;
    store::clear_failures(&mut tx, &user.email, None).await?;
    let detail = match ended {
        1 => "with a link sent by mail; 1 sign-in ended".to_string(),
        n => format!("with a link sent by mail; {n} sign-ins ended"),
    };
    for org_id in orgs::organization_ids_of(&mut tx, &user.id).await? {
        let actor = Actor::user(&user.id, &user.email);
        audit::record(&mut tx, &org_id, &actor, "account.password_reset_by_mail", &user.email, &detail).await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "password_reset_by_mail", user_id = %user.id, sessions_ended = ended,
        "password reset with a mailed link");
    Ok(user.email)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_mail_names_the_account_and_the_link_and_what_to_do_if_it_was_not_you() {
        let url = url::Url::parse("https://console.example.com/").unwrap();
        let text = super::mail_text(&url, "ada@example.com", "https://console.example.com/reset-password/tok-EN_1");
        assert!(text.contains("ada@example.com at https://console.example.com."), "{text}");
        assert!(text.contains("\nhttps://console.example.com/reset-password/tok-EN_1\n"), "{text}");
        assert!(text.contains("ignore this mail"), "{text}");
        assert!(text.lines().all(|l| l.len() < 998), "{text}");
    }
}
