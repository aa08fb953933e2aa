//! What the vault asks about connections: who uses a key before it is deleted, and each key's
//! users for the Vault page. Apart from the service (which imports the vault's service) so the
//! two do not import each other.

pub use super::model::SecretUse;
use super::store;
use crate::db::{Conn, DbResult};

/// The names of the connections of `org_id` that use secret `secret_id` as their key.
pub async fn connections_using_secret(c: &mut Conn, org_id: &str, secret_id: &str) -> DbResult<Vec<String>> {
    store::names_using_secret(c, org_id, secret_id).await
}

/// Every (secret, connection) pair of `org_id` where the connection uses the secret as its key.
pub async fn secret_uses(c: &mut Conn, org_id: &str) -> DbResult<Vec<SecretUse>> {
    store::secret_uses(c, org_id).await
}
