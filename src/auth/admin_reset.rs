//! `agenticos admin reset-password`: the way back for a locked-out account (a sole owner without
//! mail), from the machine the console runs on. Either a one-time password (printed once, stored
//! only as its argon2id hash; its first sign-in chooses a new one) or a reset link on the public
//! address (works once, for an hour; only its hash is stored). Either way every sign-in of the
//! account ends, its failed sign-ins are forgotten (a lock-out ends), and the audit log of each of
//! its organizations records it, by `agenticos admin`, never the password or the link. With
//! `--clear-2fa` its two-factor sign-in is switched off too (for an owner who lost the phone and
//! the recovery codes), recorded the same way.

use secrecy::SecretString;

use super::error::AuthError;
use super::{forgot, password, secrets, store, two_factor};
use crate::audit::service::{self as audit, Actor};
use crate::db::{self, Db, DbError};
use crate::orgs::service as orgs;
use crate::validate::{self, FieldErrors};

/// What the command hands out.
pub enum Way {
    OneTimePassword,
    /// A reset link: the caller (the command line) makes the link from the token, as the pages
    /// do, so this layer names no route.
    Link(Box<dyn FnOnce(&str) -> String + Send>),
}

enum Issued {
    Password { hash: String, password: String },
    Link(Box<dyn FnOnce(&str) -> String + Send>),
}

/// What to print, once.
pub struct AdminReset {
    pub email: String,
    /// The one-time password, or the reset link.
    pub secret: String,
    pub sessions_ended: u64,
    /// Two-factor sign-in was on and was switched off (`--clear-2fa`).
    pub two_factor_cleared: bool,
}

/// Resets the password of the account `email_raw` (no account: a field error on `email`), and
/// with `clear_two_factor` switches its two-factor sign-in off.
pub async fn reset_password(
    db: &Db,
    email_raw: &str,
    way: Way,
    clear_two_factor: bool,
) -> Result<AdminReset, AuthError> {
    let mut errors = FieldErrors::new();
    let email = validate::email(&mut errors, "email", email_raw);
    errors.into_result().map_err(AuthError::Invalid)?;
    let mut c = db.conn().await?;
    let Some(user) = store::find_user_by_email(&mut c, &email).await? else {
        return Err(AuthError::Invalid(FieldErrors::one("email", format!("No account has the address {email}."))));
    };
    drop(c);
    let now = db::now_ms();
    // The hash is made before the transaction: argon2id takes a while, and holds no lock.
    let issued = match way {
        Way::OneTimePassword => {
            let p = secrets::one_time_password();
            Issued::Password { hash: password::hash(SecretString::from(p.clone())).await?, password: p }
        }
        Way::Link(link) => Issued::Link(link),
    };
    let mut tx = db.begin().await?;
    let (secret, what) = match issued {
        Issued::Password { hash, password } => {
            store::set_issued_password(&mut tx, &user.id, &hash).await?;
            (password, "one-time password issued")
        }
        Issued::Link(link) => {
            let token = secrets::random_token(32);
            let expires = now + forgot::LINK_LIFETIME_MS;
            store::insert_reset_link(&mut tx, &secrets::sha256_hex(&token), &user.id, now, expires).await?;
            (link(&token), "reset link issued")
        }
    };
    let ended = store::delete_sessions_of(&mut tx, &user.id).await?;
    store::clear_failures(&mut tx, &user.email, None).await?;
    let detail = format!("{what} on the command line; {}", crate::words::count(ended as usize, "sign-in", "sign-ins"))
        + " ended";
    for org_id in orgs::organization_ids_of(&mut tx, &user.id).await? {
        let actor = Actor::system("agenticos admin");
        audit::record(&mut tx, &org_id, &actor, "account.password_reset_on_command_line", &user.email, &detail).await?;
    }
    let two_factor_cleared =
        clear_two_factor && two_factor::service::clear_on_command_line(&mut tx, &user.id, &user.email).await?;
    tx.commit().await.map_err(DbError::from)?;
    tracing::info!(event = "password_reset_on_command_line", user_id = %user.id, sessions_ended = ended,
        "password reset on the command line");
    Ok(AdminReset { email: user.email, secret, sessions_ended: ended, two_factor_cleared })
}
