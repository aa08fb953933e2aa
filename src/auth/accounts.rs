//! What other capabilities ask of accounts: the organization a sign-in session acts in. Apart
//! from service.rs, which builds on organizations, so that organizations use this without the
//! two importing each other.

use super::error::AuthError;
use super::store;
use crate::db::Db;

pub async fn set_current_org(db: &Db, session_id: &str, org_id: &str) -> Result<(), AuthError> {
    let mut c = db.conn().await?;
    Ok(store::set_session_org(&mut c, session_id, org_id).await?)
}
