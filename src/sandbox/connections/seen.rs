//! What any check of a host found, kept as the connection's last known state: the schedule's
//! (checks.rs) and those outside it (the Connections table's, a save's, health.rs). Its own file
//! so that health.rs and checks.rs do not import each other.

use sha2::{Digest as _, Sha256};

use super::checks_store as store;
use super::model::{Connection, ConnectionHealth};
use crate::state::AppState;

/// Keeps what a check outside the schedule found (the Connections table's, a save's) as the
/// connection's last known state; a failure to keep it is logged, never the caller's failure.
pub async fn keep_seen(st: &AppState, org_id: &str, conn: &Connection, found: &ConnectionHealth, began: i64) {
    let kept = async {
        let mut c = st.db.conn().await?;
        let version = version_of(conn);
        store::record_seen(&mut c, org_id, &conn.id, &version, found.health.code(), &found.message, began).await
    };
    if let Err(e) = kept.await {
        tracing::warn!(connection = %conn.id, error = %e, "a host's health could not be kept");
    }
}

/// The connection's version as stored: a digest, so no address is copied into the table.
pub(super) fn version_of(conn: &Connection) -> String {
    hex::encode(&Sha256::digest(conn.version().as_bytes())[..16])
}
