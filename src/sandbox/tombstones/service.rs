//! Writing, counting and forgetting tombstones. Writing happens inside the transaction that
//! deletes the workspace rows (the caller's), so a crash leaves either both or neither.

use super::error::TombstoneError;
use super::model::{Pending, Reason, Tombstone};
use super::store::{self, NewTombstone};
use crate::db::Conn;
use crate::state::AppState;

type Result<T> = std::result::Result<T, TombstoneError>;

/// A sandbox to destroy: the session `session_id` (the host's id: the workspace's reference, else
/// its key) on `connection_id`.
pub struct Removed<'a> {
    pub connection_id: &'a str,
    pub session_key: &'a str,
    pub session_id: &'a str,
    pub reason: Reason,
}

/// Writes the tombstone of one removed sandbox in the caller's transaction, due at `now`.
pub async fn record_in(c: &mut Conn, org_id: &str, removed: &Removed<'_>, now: i64) -> Result<String> {
    let new = NewTombstone {
        org_id,
        connection_id: removed.connection_id,
        session_key: removed.session_key,
        session_id: removed.session_id,
        reason: removed.reason.as_str(),
    };
    Ok(store::insert(c, &new, now).await?)
}

/// One of `org_id`'s tombstones.
pub async fn get(st: &AppState, org_id: &str, id: &str) -> Result<Option<Tombstone>> {
    let mut c = st.db.conn().await?;
    Ok(store::get(&mut c, org_id, id).await?)
}

/// The tombstones of one connection, next due first.
pub async fn of_connection(st: &AppState, org_id: &str, connection_id: &str) -> Result<Vec<Tombstone>> {
    let mut c = st.db.conn().await?;
    Ok(store::of_connection(&mut c, org_id, connection_id).await?)
}

/// What each connection of `org_id` still has to destroy (connections with nothing are absent).
pub async fn pending(st: &AppState, org_id: &str) -> Result<Vec<(String, Pending)>> {
    let mut c = st.db.conn().await?;
    Ok(store::pending_by_connection(&mut c, org_id).await?)
}

/// How many tombstones of every organization still wait (due or not), and the earliest next
/// attempt (epoch milliseconds).
pub async fn waiting_everywhere(st: &AppState) -> Result<(i64, Option<i64>)> {
    let mut c = st.db.conn().await?;
    Ok(store::waiting_everywhere(&mut c).await?)
}

/// How many sandboxes of `connection_id` wait to be destroyed (in the caller's transaction).
pub async fn count_in(c: &mut Conn, org_id: &str, connection_id: &str) -> Result<i64> {
    Ok(store::count_for_connection(c, org_id, connection_id).await?)
}

/// Forgets every tombstone of `connection_id` (its deletion, confirmed); returns how many.
pub async fn forget_in(c: &mut Conn, org_id: &str, connection_id: &str) -> Result<u64> {
    Ok(store::delete_for_connection(c, org_id, connection_id).await?)
}

/// Whether host session `session_id` on `connection_id` is pending removal (has a tombstone).
pub async fn is_pending(c: &mut Conn, org_id: &str, connection_id: &str, session_id: &str) -> Result<bool> {
    Ok(store::names_session(c, org_id, connection_id, session_id).await?)
}
