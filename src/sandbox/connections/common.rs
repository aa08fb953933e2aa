//! What the connections service's files share (`service.rs`, `delete.rs`, `discovered.rs`): the
//! manage check, an organization's connection row, forgetting what this replica keeps about a
//! connection, and where it is in words. Below them all: this file calls none of them.

use super::error::ConnectionError;
use super::model::Connection;
use super::store;
use crate::access::Caller;
use crate::db;
use crate::state::AppState;

type Result<T> = std::result::Result<T, ConnectionError>;

/// Managing connections is for the roles that may (403 otherwise).
pub(super) fn ensure_manage(caller: &Caller) -> Result<()> {
    if caller.role.can_manage_connections() {
        Ok(())
    } else {
        Err(ConnectionError::Forbidden)
    }
}

/// A connection of the caller's organization; another organization's is `NotFound`.
pub(super) async fn existing(c: &mut db::Conn, caller: &Caller, id: &str) -> Result<Connection> {
    store::get(c, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)
}

/// Forgets what this replica keeps about connection `connection_id` of `org_id` (its client, its
/// health, the runs resolved to it) once it was edited, switched on or off, or deleted: the next
/// request reads it again, so switching it off stops new work here at once. Other replicas
/// read it again within the caches' lifetimes (a resolved run: one second).
pub(super) fn forget_cached(st: &AppState, org_id: &str, connection_id: &str) {
    let key = format!("{org_id}/{connection_id}");
    st.client_cache.forget(&key);
    st.daytona_clients.forget(&key);
    st.health_cache.forget(&key);
    st.resolve_cache.forget_connection(org_id, connection_id);
}

/// Where a connection is, for the audit log (never its key).
pub(super) fn at(address: Option<&str>) -> &str {
    address.unwrap_or("no address")
}
