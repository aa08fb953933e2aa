//! What other capabilities ask of accounts: an account by e-mail (created when new) and the
//! organization a sign-in session acts in. Apart from service.rs, which builds on organizations,
//! so that organizations use these without the two importing each other.

use secrecy::SecretString;

use super::error::AuthError;
use super::{password, secrets, store};
use crate::db::{self, Db};

/// Looks an e-mail up, or creates the account with a one-time password (returned once).
pub async fn find_or_create_user(c: &mut db::Conn, email: &str) -> Result<(String, Option<String>), AuthError> {
    if let Some(u) = store::find_user_by_email(c, email).await? {
        return Ok((u.id, None));
    }
    let otp = secrets::one_time_password();
    let hash = password::hash(SecretString::from(otp.clone())).await?;
    let id = db::new_id();
    store::insert_user(c, &id, email, &hash, db::now_ms()).await?;
    Ok((id, Some(otp)))
}

pub async fn set_current_org(db: &Db, session_id: &str, org_id: &str) -> Result<(), AuthError> {
    let mut c = db.conn().await?;
    Ok(store::set_session_org(&mut c, session_id, org_id).await?)
}
