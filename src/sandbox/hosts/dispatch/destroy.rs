//! Destroying a session or sandbox at its host, files and all: the destroy sweep's (what a
//! tombstone names) and the orphan purge's.

use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::hosts::{daytona, sandboxd};
use crate::state::AppState;

/// Why a destroy did not happen.
pub enum NotDestroyed {
    /// The connection could not be asked (no key, no address, …): nothing was sent.
    Connection(ConnectionError),
    /// The host's refusal or failure, in our words.
    Host(String),
}

/// Destroys `session_id` (a sandboxd session's id, a Daytona sandbox's id or name) of `org_id`
/// on `conn`; one already gone is destroyed.
pub async fn destroy(st: &AppState, org_id: &str, conn: &Connection, session_id: &str) -> Result<(), NotDestroyed> {
    match conn.kind {
        ConnectionKind::Sandboxd => {
            let client = sandboxd::connections::client_for(st, org_id, conn).await.map_err(NotDestroyed::Connection)?;
            sandboxd::tombstones::destroy(&client, org_id, session_id).await.map_err(NotDestroyed::Host)
        }
        ConnectionKind::Daytona => {
            let client = daytona::connections::client_for(st, org_id, conn).await.map_err(NotDestroyed::Connection)?;
            daytona::tombstones::destroy(&client, session_id).await.map_err(NotDestroyed::Host)
        }
    }
}
