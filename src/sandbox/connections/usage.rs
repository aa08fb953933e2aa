//! What the vault asks about connections before it deletes a key. Apart from the service
//! (which imports the vault's service) so the two do not import each other.

use super::store;
use crate::db::{Conn, DbResult};

/// The names of the connections of `org_id` that use secret `secret_id` as their key.
pub async fn connections_using_secret(c: &mut Conn, org_id: &str, secret_id: &str) -> DbResult<Vec<String>> {
    store::names_using_secret(c, org_id, secret_id).await
}
