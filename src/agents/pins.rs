//! Which agents are pinned to a connection, for the connections service: it refuses to delete a
//! connection agents use. Apart from `service.rs`, which imports the connections service, so the
//! two do not import each other.

use super::store;
use crate::db::{Conn, DbResult};

/// The names of the agents of `org_id` pinned to connection `connection_id`, in name order.
pub async fn names_pinned_to(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<Vec<String>> {
    store::names_pinned_to(c, org_id, connection_id).await
}
