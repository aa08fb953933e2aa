//! The second step of a sign-in: after the right password of an account with two-factor sign-in
//! on, the browser gets a challenge cookie of its own (not a session: it opens no page and no API
//! route) that only `/login/two-factor` takes, for five minutes. A right code of the app (once
//! per code) or an unused recovery code then makes the session. Wrong codes count against the
//! same per-account limit as wrong passwords, and a right password does not reset that count
//! while the second step is still to come.

pub use super::service::{Challenge, CHALLENGE_SECONDS};
use super::{codes, service, store};
use crate::audit::service::{self as audit, Actor};
use crate::auth::error::AuthError;
use crate::auth::service::{self as auth, NewSession};
use crate::auth::{secrets, store as accounts};
use crate::db::{self, DbError};
use crate::orgs::service as orgs;
use crate::state::AppState;
use crate::validate::FieldErrors;

/// Whether the cookie names a live second step (the page shows its form, else sends to /login).
pub async fn is_live(st: &AppState, cookie_value: &str) -> Result<bool, AuthError> {
    let mut c = st.db.conn().await?;
    Ok(store::challenge_user(&mut c, &secrets::sha256_hex(cookie_value), db::now_ms()).await?.is_some())
}

enum Proof {
    Code(u64),
    RecoveryCode(String),
}

/// Completes the sign-in with a code of the app or a recovery code.
pub async fn complete(st: &AppState, cookie_value: &str, code: &str) -> Result<NewSession, AuthError> {
    let token_hash = secrets::sha256_hex(cookie_value);
    let now = db::now_ms();
    let mut c = st.db.conn().await?;
    let user_id = store::challenge_user(&mut c, &token_hash, now).await?.ok_or(AuthError::SecondStepGone)?;
    let user = accounts::find_user_by_id(&mut c, &user_id).await?.ok_or(AuthError::SecondStepGone)?;
    let row = store::find(&mut c, &user_id).await?.filter(|r| r.enabled_at.is_some());
    drop(c);
    let Some(row) = row else { return Err(AuthError::SecondStepGone) };
    if code.trim().is_empty() {
        return Err(AuthError::Invalid(FieldErrors::one("code", "Enter the code your app shows, or a recovery code.")));
    }
    let failures = auth::ensure_not_locked(st, &user.email, now).await?;
    let secret = service::open(&st.vault_key, &user_id, &row)?;
    let proof = match codes::matching_step(&secret, &user.email, code, service::unix_seconds())? {
        Some(step) => Some(Proof::Code(step)),
        None => codes::normalized_recovery_code(code).map(Proof::RecoveryCode),
    };
    let mut tx = st.db.begin().await?;
    let (accepted, detail) = match &proof {
        Some(Proof::Code(step)) => {
            (store::take_step(&mut tx, &user_id, *step as i64).await?, "password and two-factor code")
        }
        Some(Proof::RecoveryCode(rc)) => (
            store::use_recovery_code(&mut tx, &user_id, &secrets::sha256_hex(rc), now).await?,
            "password and recovery code",
        ),
        None => (false, ""),
    };
    if !accepted {
        auth::record_failure(st, &mut tx, &user.email, failures, now, "wrong two-factor code").await?;
        tx.commit().await.map_err(DbError::from)?;
        tracing::info!(event = "sign_in_failed", "two-factor code refused");
        let message = "That code is not right. A code of your app works once; a recovery code too.";
        return Err(AuthError::Invalid(FieldErrors::one("code", message)));
    }
    if !store::delete_challenge(&mut tx, &token_hash).await? {
        return Err(AuthError::SecondStepGone);
    }
    auth::clear_failures(st, &mut tx, &user.email, now).await?;
    let org_ids = orgs::organization_ids_of(&mut tx, &user_id).await?;
    auth::record_sign_in(&mut tx, &user, &org_ids, now, detail).await?;
    if matches!(proof, Some(Proof::RecoveryCode(_))) {
        let left = store::recovery_codes_left(&mut tx, &user_id).await?;
        let detail = format!("{left} of {} left", codes::RECOVERY_CODES);
        for org_id in &org_ids {
            let actor = Actor::user(&user.id, &user.email);
            audit::record(&mut tx, org_id, &actor, "sign_in.recovery_code_used", &user.email, &detail).await?;
        }
    }
    let session = auth::create_session(st, &mut tx, &user_id, org_ids.first().map(String::as_str)).await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "sign_in", user_id = %user_id, "signed in with a second step");
    Ok(session)
}

/// Gives up a second step (signing out from its page).
pub async fn cancel(st: &AppState, cookie_value: &str) -> Result<(), AuthError> {
    let mut c = st.db.conn().await?;
    store::delete_challenge(&mut c, &secrets::sha256_hex(cookie_value)).await?;
    Ok(())
}
