//! How many of an organization's workspaces hold a session on a connection (a connection's
//! delete refuses while any do). Imports only its store, so the connections capability may ask.

use super::store;
use crate::db::{Conn, DbResult};

/// `org_id`'s `sandboxd` workspaces on `connection_id` that hold (or are opening) a session.
pub async fn count_on(c: &mut Conn, org_id: &str, connection_id: &str) -> DbResult<i64> {
    store::count_live_on(c, org_id, connection_id).await
}

/// Whether a `sandboxd` workspace of `org_id` on `connection_id` names host session `session_id`.
pub async fn names_session(c: &mut Conn, org_id: &str, connection_id: &str, session_id: &str) -> DbResult<bool> {
    Ok(store::by_session(c, org_id, connection_id, session_id).await?.is_some())
}
