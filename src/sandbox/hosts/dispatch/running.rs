//! Closing a session or sandbox from the Running tab, and the confirmation before it, by the
//! connection's kind (each kind's in its folder, `hosts/<kind>/running/`).

use crate::access::Caller;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::hosts::{daytona, sandboxd};
use crate::sandbox::running::error::RunningError;
use crate::sandbox::running::model::ClosedSession;
use crate::sandbox::running::whose::Closing;
use crate::state::AppState;

/// Session (or sandbox) `session_id` of the caller's organization on `conn`, as the confirmation
/// of "Close and delete files" shows it.
pub async fn closing(
    st: &AppState,
    caller: &Caller,
    conn: Connection,
    session_id: &str,
) -> Result<(Connection, Closing), RunningError> {
    match conn.kind {
        ConnectionKind::Sandboxd => sandboxd::running::closing(st, caller, conn, session_id).await,
        ConnectionKind::Daytona => daytona::running::closing(st, caller, conn, session_id).await,
    }
}

/// Closes session (or sandbox) `session_id` of the caller's organization on `conn`, deleting its
/// files with `delete_files`.
pub async fn close(
    st: &AppState,
    caller: &Caller,
    conn: Connection,
    session_id: &str,
    delete_files: bool,
) -> Result<ClosedSession, RunningError> {
    match conn.kind {
        ConnectionKind::Sandboxd => sandboxd::running::close(st, caller, conn, session_id, delete_files).await,
        ConnectionKind::Daytona => daytona::running::close(st, caller, &conn, session_id, delete_files).await,
    }
}
