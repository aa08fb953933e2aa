//! Accounts: first-run setup, sign-in with a per-account failure limit, sessions, sign-out.

use secrecy::{ExposeSecret, SecretString};

use super::error::AuthError;
use super::two_factor::{self, service::Challenge};
use super::{password, secrets, store};
use crate::audit::service::{self as audit, Actor};
use crate::db::{self, Db};
use crate::orgs::model::Role;
use crate::orgs::service as orgs;
use crate::state::AppState;
use crate::validate::{self, FieldErrors};

pub struct SetupInput {
    pub email: String,
    pub password: SecretString,
    pub organization: String,
}

/// A new sign-in: the cookie value (shown to the browser once) and where it lands.
pub struct NewSession {
    pub cookie_value: String,
    pub max_age_seconds: i64,
}

pub async fn setup_needed(db: &Db) -> Result<bool, AuthError> {
    let mut c = db.conn().await?;
    Ok(store::count_users(&mut c).await? == 0)
}

/// Creates the first owner and organization, while no user exists; never again.
pub async fn setup(st: &AppState, input: SetupInput) -> Result<NewSession, AuthError> {
    // In the form's order, so the first message's field is the first invalid one on the page.
    let mut errors = FieldErrors::new();
    let org_name = validate::name(&mut errors, "organization", &input.organization, "organization name");
    let email = validate::email(&mut errors, "email", &input.email);
    validate::new_password(&mut errors, "password", input.password.expose_secret());
    errors.into_result().map_err(AuthError::Invalid)?;

    let hash = password::hash(input.password).await?;
    let mut tx = st.db.begin().await?;
    store::lock_setup(&mut tx, st.db.kind()).await?;
    if store::count_users(&mut tx).await? > 0 {
        return Err(AuthError::SetupDone);
    }
    let now = db::now_ms();
    let user_id = db::new_id();
    store::insert_user(&mut tx, &user_id, &email, &hash, now).await?;
    let org = orgs::create_in(&mut tx, &org_name, &user_id, Role::Owner).await?;
    audit::record(
        &mut tx,
        &org.id,
        &Actor::user(&user_id, &email),
        "organization.created",
        &org.name,
        "first-run setup",
    )
    .await?;
    store::note_sign_in(&mut tx, &user_id, now).await?;
    let session = create_session(st, &mut tx, &user_id, Some(&org.id)).await?;
    tx.commit().await.map_err(db::DbError::from)?;
    tracing::info!(event = "setup_done", user_id = %user_id, organization_id = %org.id, "first owner created");
    Ok(session)
}

/// Creates an owner and organization from the command line (`agenticos admin create-owner`)
/// with a password the person chose (`--password-stdin`). An existing account keeps its password.
pub async fn create_owner(
    db: &Db,
    email: &str,
    password_raw: SecretString,
    org_name: &str,
) -> Result<String, AuthError> {
    Ok(create_owner_with(db, email, password_raw, org_name, false).await?.org_id)
}

/// What `agenticos admin create-owner` did.
pub struct OwnerCreated {
    pub org_id: String,
    /// The one-time password of a new account, to print once; `None` when the e-mail address
    /// already had an account, whose password is unchanged.
    pub one_time_password: Option<String>,
}

/// Creates an owner and organization, giving a new account a one-time password: whoever signs
/// in with it must choose their own password before anything else.
pub async fn create_owner_with_one_time_password(
    db: &Db,
    email: &str,
    org_name: &str,
) -> Result<OwnerCreated, AuthError> {
    let password = secrets::one_time_password();
    let created = create_owner_with(db, email, SecretString::from(password.clone()), org_name, true).await?;
    Ok(OwnerCreated { org_id: created.org_id, one_time_password: created.account_created.then_some(password) })
}

struct Created {
    org_id: String,
    account_created: bool,
}

async fn create_owner_with(
    db: &Db,
    email: &str,
    password_raw: SecretString,
    org_name: &str,
    issued: bool,
) -> Result<Created, AuthError> {
    let mut errors = FieldErrors::new();
    let email = validate::email(&mut errors, "email", email);
    validate::new_password(&mut errors, "password", password_raw.expose_secret());
    let org_name = validate::name(&mut errors, "organization", org_name, "organization name");
    errors.into_result().map_err(AuthError::Invalid)?;
    let hash = password::hash(password_raw).await?;
    let mut tx = db.begin().await?;
    let (user_id, account_created) = match store::find_user_by_email(&mut tx, &email).await? {
        Some(u) => {
            if orgs::name_taken_by(&mut tx, db.kind(), &u.id, &org_name).await? {
                let message = orgs::name_taken_message(&org_name);
                return Err(AuthError::Invalid(FieldErrors::one("organization", message)));
            }
            (u.id, false)
        }
        None => {
            let id = db::new_id();
            store::insert_user(&mut tx, &id, &email, &hash, db::now_ms()).await?;
            if issued {
                store::require_password_change(&mut tx, &id).await?;
            }
            (id, true)
        }
    };
    let org = orgs::create_in(&mut tx, &org_name, &user_id, Role::Owner).await?;
    audit::record(&mut tx, &org.id, &Actor::system("agenticos admin"), "organization.created", &org.name, &email)
        .await?;
    tx.commit().await.map_err(db::DbError::from)?;
    Ok(Created { org_id: org.id, account_created })
}

/// What a right password leads to: a session, or (two-factor sign-in on) the second step.
pub enum SignIn {
    Session(NewSession),
    SecondStep(Challenge),
}

pub struct LoginInput {
    pub email: String,
    pub password: SecretString,
}

/// Signs in, refusing further attempts for an account after too many failures in the window. An
/// account with two-factor sign-in on gets the second step instead of a session; its failures
/// are forgotten only once that step is done.
pub async fn login(st: &AppState, input: LoginInput) -> Result<SignIn, AuthError> {
    let mut errors = FieldErrors::new();
    let email = input.email.trim().to_ascii_lowercase();
    if email.is_empty() {
        errors.add("email", "Enter your e-mail address.");
    }
    if input.password.expose_secret().is_empty() {
        errors.add("password", "Enter your password.");
    }
    if email.chars().count() > validate::EMAIL_MAX {
        errors.add("email", "An e-mail address has at most 254 characters.");
    }
    errors.into_result().map_err(AuthError::Invalid)?;

    let now = db::now_ms();
    let failures = ensure_not_locked(st, &email, now).await?;
    let mut c = st.db.conn().await?;
    let user = store::find_user_by_email(&mut c, &email).await?;
    drop(c);
    let ok = password::verify(input.password, user.as_ref().map(|u| u.password_hash.clone())).await?;
    let mut tx = st.db.begin().await?;
    let Some(user) = user.filter(|_| ok) else {
        record_failure(st, &mut tx, &email, failures, now, "wrong password").await?;
        tx.commit().await.map_err(db::DbError::from)?;
        tracing::info!(event = "sign_in_failed", "sign-in failed");
        return Err(AuthError::BadCredentials);
    };
    if two_factor::service::is_on(&mut tx, &user.id).await? {
        let challenge = two_factor::service::begin(&mut tx, &user.id).await?;
        tx.commit().await.map_err(db::DbError::from)?;
        tracing::info!(event = "sign_in_second_step", user_id = %user.id, "password right; second step asked");
        return Ok(SignIn::SecondStep(challenge));
    }
    clear_failures(st, &mut tx, &email, now).await?;
    let orgs = orgs::organization_ids_of(&mut tx, &user.id).await?;
    record_sign_in(&mut tx, &user, &orgs, now, "password").await?;
    let session = create_session(st, &mut tx, &user.id, orgs.first().map(String::as_str)).await?;
    tx.commit().await.map_err(db::DbError::from)?;
    tracing::info!(event = "sign_in", user_id = %user.id, "signed in");
    Ok(SignIn::Session(session))
}

/// A sign-in done (`how`: "password", or with its second step): the account's last sign-in is
/// now, and `sign_in.succeeded` is in the audit log of each of its organizations (`org_ids`), by
/// the person.
pub(super) async fn record_sign_in(
    c: &mut db::Conn,
    user: &store::UserRow,
    org_ids: &[String],
    now: i64,
    how: &str,
) -> Result<(), AuthError> {
    store::note_sign_in(c, &user.id, now).await?;
    for org_id in org_ids {
        audit::record(c, org_id, &Actor::user(&user.id, &user.email), "sign_in.succeeded", &user.email, how).await?;
    }
    Ok(())
}

/// Who a failed sign-in is by in the audit log: the password was not verified, so not the account
/// it names (that is the event's subject).
pub(super) const UNVERIFIED_SIGN_IN: &str = "an unverified sign-in attempt";

/// The failures of `email` within the window, or [`AuthError::LockedOut`] once they reach the
/// limit: /login and accepting an invitation with a password share this per-account limit.
pub(super) async fn ensure_not_locked(st: &AppState, email: &str, now: i64) -> Result<i64, AuthError> {
    let cfg = &st.config.auth;
    let window_ms = cfg.login_window_minutes as i64 * 60_000;
    let mut c = st.db.conn().await?;
    let (failures, oldest) = store::failures_since(&mut c, email, now - window_ms).await?;
    if failures >= cfg.login_max_failures as i64 {
        let retry_after = ((oldest.unwrap_or(now) + window_ms - now).max(1000) / 1000) as u64;
        tracing::warn!(event = "sign_in_locked", "sign-in refused: too many failures for this account");
        return Err(AuthError::LockedOut { retry_after });
    }
    Ok(failures)
}

/// Counts a wrong password for `email` (`failures` before it) and, when the account exists,
/// records `sign_in.failed` (`detail`) and on reaching the limit `sign_in.locked` in each of its
/// organizations.
pub(super) async fn record_failure(
    st: &AppState,
    c: &mut db::Conn,
    email: &str,
    failures: i64,
    now: i64,
    detail: &str,
) -> Result<(), AuthError> {
    let cfg = &st.config.auth;
    store::insert_failure(c, email, now).await?;
    let Some(u) = store::find_user_by_email(c, email).await? else {
        return Ok(());
    };
    let locked = failures + 1 >= cfg.login_max_failures as i64;
    for org_id in orgs::organization_ids_of(c, &u.id).await? {
        audit::record(c, &org_id, &Actor::system(UNVERIFIED_SIGN_IN), "sign_in.failed", &u.email, detail).await?;
        if locked {
            let detail = format!("{} failures within {} minutes", cfg.login_max_failures, cfg.login_window_minutes);
            audit::record(c, &org_id, &Actor::system(UNVERIFIED_SIGN_IN), "sign_in.locked", &u.email, &detail).await?;
        }
    }
    Ok(())
}

/// A right password: the account's failures are forgotten, and everyone's stale ones.
pub(super) async fn clear_failures(st: &AppState, c: &mut db::Conn, email: &str, now: i64) -> Result<(), AuthError> {
    let window_ms = st.config.auth.login_window_minutes as i64 * 60_000;
    store::clear_failures(c, email, None).await?;
    store::clear_failures(c, email, Some(now - window_ms)).await?;
    Ok(())
}

pub(super) async fn create_session(
    st: &AppState,
    c: &mut db::Conn,
    user_id: &str,
    org_id: Option<&str>,
) -> Result<NewSession, AuthError> {
    let cookie_value = secrets::random_token(32);
    let now = db::now_ms();
    let max_age_seconds = st.config.auth.session_hours as i64 * 3600;
    store::insert_session(
        c,
        &db::new_id(),
        &secrets::sha256_hex(&cookie_value),
        user_id,
        org_id,
        now,
        now + max_age_seconds * 1000,
    )
    .await?;
    Ok(NewSession { cookie_value, max_age_seconds })
}

/// Ends the sign-in whose cookie this is (the row is deleted).
pub async fn logout(db: &Db, cookie_value: &str) -> Result<(), AuthError> {
    let mut c = db.conn().await?;
    store::delete_session(&mut c, &secrets::sha256_hex(cookie_value)).await?;
    Ok(())
}

/// The signed-in account behind a session cookie, if the session is live.
pub async fn session_for_cookie(db: &Db, cookie_value: &str) -> Result<Option<store::SessionRow>, AuthError> {
    let mut c = db.conn().await?;
    Ok(store::find_session(&mut c, &secrets::sha256_hex(cookie_value), db::now_ms()).await?)
}

/// Deletes expired sessions and stale failure records.
pub async fn sweep(db: &Db, window_minutes: u32) -> Result<u64, AuthError> {
    let mut c = db.conn().await?;
    let now = db::now_ms();
    store::clear_failures(&mut c, "", Some(now - window_minutes as i64 * 60_000)).await?;
    store::delete_expired_reset_links(&mut c, now).await?;
    two_factor::service::sweep_challenges(&mut c, now).await?;
    Ok(store::delete_expired_sessions(&mut c, now).await?)
}
