//! The rules of two-factor sign-in on the account page, the owners' switch, and clearing it from
//! the command line.

use secrecy::SecretString;

use super::{codes, store};
use crate::access::{Caller, Role};
use crate::audit::service::{self as audit, Actor};
use crate::auth::error::AuthError;
use crate::auth::{password, secrets, store as accounts};
use crate::db::{self, Db, DbError};
use crate::orgs::service as orgs;
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::vault::crypto::{self, MasterKey};

/// What the vault's associated data names in place of an organization: the secret is bound to
/// the account (its id), not to an organization.
const BINDING: &str = "account-two-factor";

/// Two-factor sign-in of an account, as its account page shows it.
pub struct Status {
    pub enabled_at: i64,
    pub recovery_codes_left: i64,
}

impl Status {
    /// `9 recovery codes of 10 left`.
    pub fn recovery_codes_words(&self) -> String {
        let n = self.recovery_codes_left.max(0) as usize;
        format!("{} of {} left", crate::words::count(n, "recovery code", "recovery codes"), codes::RECOVERY_CODES)
    }
}

/// An enrolment waiting for its first code: what the enrolment page shows.
pub struct Enrolment {
    /// The secret in base32, to type into an app by hand.
    pub secret_text: String,
    /// The QR code of its `otpauth://` address, as a `data:` URI.
    pub qr: String,
}

fn seal(key: &MasterKey, user_id: &str, secret: &[u8]) -> Result<(Vec<u8>, Vec<u8>), AuthError> {
    Ok(crypto::encrypt(key, BINDING, user_id, secret)?)
}

pub(super) fn open(key: &MasterKey, user_id: &str, row: &store::SecretRow) -> Result<Vec<u8>, AuthError> {
    Ok(crypto::decrypt(key, BINDING, user_id, &row.nonce, &row.ciphertext)?)
}

pub(super) fn unix_seconds() -> u64 {
    (db::now_ms().max(0) as u64) / 1000
}

/// `None` while two-factor sign-in is off (an enrolment waiting counts as off).
pub async fn status(db: &Db, user_id: &str) -> Result<Option<Status>, AuthError> {
    let mut c = db.conn().await?;
    let Some(enabled_at) = store::find(&mut c, user_id).await?.and_then(|r| r.enabled_at) else {
        return Ok(None);
    };
    Ok(Some(Status { enabled_at, recovery_codes_left: store::recovery_codes_left(&mut c, user_id).await? }))
}

/// The enrolment of an account whose two-factor sign-in is off: the one waiting, or a new
/// secret. `None` when it is on already.
pub async fn enrolment(st: &AppState, user_id: &str, email: &str) -> Result<Option<Enrolment>, AuthError> {
    let mut c = st.db.conn().await?;
    let secret = match store::find(&mut c, user_id).await? {
        Some(row) if row.enabled_at.is_some() => return Ok(None),
        Some(row) => open(&st.vault_key, user_id, &row)?,
        None => {
            let secret = codes::new_secret();
            let (nonce, ciphertext) = seal(&st.vault_key, user_id, &secret)?;
            store::insert_pending(&mut c, user_id, &nonce, &ciphertext, db::now_ms()).await?;
            secret
        }
    };
    Ok(Some(Enrolment { secret_text: codes::secret_text(&secret), qr: codes::qr_data_uri(&secret, email)? }))
}

fn code_error(message: &str) -> AuthError {
    AuthError::Invalid(FieldErrors::one("code", message))
}

/// Switches two-factor sign-in on with the first code of the waiting enrolment, and returns the
/// ten recovery codes (shown once; only their hashes are kept).
pub async fn confirm(st: &AppState, user_id: &str, email: &str, code: &str) -> Result<Vec<String>, AuthError> {
    if code.trim().is_empty() {
        return Err(code_error("Enter the six-digit code your app shows."));
    }
    let mut tx = st.db.begin().await?;
    let row = store::find(&mut tx, user_id).await?.filter(|r| r.enabled_at.is_none());
    let Some(row) = row else {
        return Err(code_error("Two-factor sign-in is on already, or no enrolment waits: open the page again."));
    };
    let secret = open(&st.vault_key, user_id, &row)?;
    let Some(step) = codes::matching_step(&secret, email, code, unix_seconds())? else {
        return Err(code_error(
            "That is not the code your app shows now. Check the app's clock, and try the next code.",
        ));
    };
    let now = db::now_ms();
    if !store::enable(&mut tx, user_id, step as i64, now).await? {
        return Err(code_error("Two-factor sign-in is on already."));
    }
    let recovery = codes::new_recovery_codes();
    let hashes: Vec<String> = recovery.iter().map(|c| secrets::sha256_hex(c)).collect();
    store::replace_recovery_codes(&mut tx, user_id, &hashes, now).await?;
    for org_id in orgs::organization_ids_of(&mut tx, user_id).await? {
        let detail = "authenticator app confirmed; 10 recovery codes issued";
        audit::record(&mut tx, &org_id, &Actor::user(user_id, email), "account.two_factor_enabled", email, detail)
            .await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "two_factor_enabled", user_id = %user_id, "two-factor sign-in switched on");
    Ok(recovery)
}

/// Switches two-factor sign-in off, proven by a current code of the app or the password.
pub async fn disable(st: &AppState, user_id: &str, email: &str, proof: String) -> Result<(), AuthError> {
    const FIELD: &str = "two_factor_proof";
    let proof = proof.trim().to_string();
    if proof.is_empty() {
        return Err(AuthError::Invalid(FieldErrors::one(FIELD, "Enter a code from your app, or your password.")));
    }
    let mut c = st.db.conn().await?;
    let Some(row) = store::find(&mut c, user_id).await?.filter(|r| r.enabled_at.is_some()) else {
        return Err(AuthError::Invalid(FieldErrors::one(FIELD, "Two-factor sign-in is off already.")));
    };
    let user = accounts::find_user_by_id(&mut c, user_id).await?.ok_or(AuthError::NotFound)?;
    drop(c);
    let secret = open(&st.vault_key, user_id, &row)?;
    let mut tx = st.db.begin().await?;
    let by_code = match codes::matching_step(&secret, email, &proof, unix_seconds())? {
        Some(step) => store::take_step(&mut tx, user_id, step as i64).await?,
        None => false,
    };
    if !by_code && !password::verify(SecretString::from(proof), Some(user.password_hash)).await? {
        let message = "That is neither a current code of your app (each works once) nor your password.";
        return Err(AuthError::Invalid(FieldErrors::one(FIELD, message)));
    }
    store::delete(&mut tx, user_id).await?;
    let detail = if by_code { "confirmed with a code" } else { "confirmed with the password" };
    for org_id in orgs::organization_ids_of(&mut tx, user_id).await? {
        audit::record(&mut tx, &org_id, &Actor::user(user_id, email), "account.two_factor_disabled", email, detail)
            .await?;
    }
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "two_factor_disabled", user_id = %user_id, "two-factor sign-in switched off");
    Ok(())
}

/// The owners' switch "Require two-factor sign-in for members". Only an owner flips it, and
/// only with two-factor sign-in on themselves (so that they are not the first sent to enrol).
pub async fn set_required(st: &AppState, caller: &Caller, on: bool) -> Result<(), AuthError> {
    if caller.role != Role::Owner {
        return Err(AuthError::Forbidden);
    }
    if on && status(&st.db, &caller.user_id).await?.is_none() {
        let message = "Switch on two-factor sign-in for your own account first (on Your account).";
        return Err(AuthError::Invalid(FieldErrors::one("require_two_factor", message)));
    }
    let mut tx = st.db.begin().await?;
    orgs::set_require_two_factor(&mut tx, &caller.org_id, on).await?;
    let (code, detail) = if on {
        ("organization.two_factor_required", "members without two-factor sign-in are sent to enrol")
    } else {
        ("organization.two_factor_not_required", "two-factor sign-in is up to each member")
    };
    audit::record(&mut tx, &caller.org_id, &caller.actor(), code, &caller.org_name, detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(())
}

/// How long the second step may wait for its code.
pub const CHALLENGE_SECONDS: i64 = 300;

/// The second step's cookie value (shown to the browser once) and its lifetime.
pub struct Challenge {
    pub cookie_value: String,
    pub max_age_seconds: i64,
}

/// Starts the second step of `user_id`'s sign-in.
pub(crate) async fn begin(c: &mut db::Conn, user_id: &str) -> Result<Challenge, AuthError> {
    let cookie_value = secrets::random_token(32);
    let now = db::now_ms();
    store::insert_challenge(c, &secrets::sha256_hex(&cookie_value), user_id, now, now + CHALLENGE_SECONDS * 1000)
        .await?;
    Ok(Challenge { cookie_value, max_age_seconds: CHALLENGE_SECONDS })
}

/// `agenticos admin reset-password --clear-2fa`: two-factor sign-in of the account is switched
/// off (secret and recovery codes deleted), recorded in each of its organizations. Returns
/// whether it was on.
pub async fn clear_on_command_line(c: &mut db::Conn, user_id: &str, email: &str) -> Result<bool, AuthError> {
    let was_on = store::delete(c, user_id).await?;
    if was_on {
        for org_id in orgs::organization_ids_of(c, user_id).await? {
            let actor = Actor::system("agenticos admin");
            let code = "account.two_factor_cleared_on_command_line";
            audit::record(c, &org_id, &actor, code, email, "secret and recovery codes deleted").await?;
        }
    }
    Ok(was_on)
}

/// Whether the account has two-factor sign-in on (the sign-in asks a second step then).
pub(crate) async fn is_on(c: &mut db::Conn, user_id: &str) -> Result<bool, DbError> {
    Ok(store::find(c, user_id).await?.is_some_and(|r| r.enabled_at.is_some()))
}

/// Deletes second steps that ran out.
pub(crate) async fn sweep_challenges(c: &mut db::Conn, now: i64) -> Result<u64, DbError> {
    store::delete_expired_challenges(c, now).await
}
