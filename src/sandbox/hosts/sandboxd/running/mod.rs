//! sandboxd on the Running tab: a session's close (stopped, its files kept or deleted) and its
//! confirmation, and the orphans' listing. Another tenant's session, or one that belongs to
//! another connection of the organization (`running::ours`), is not closed here.

pub mod orphans;

use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::DbError;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::hosts::sandboxd::client::SandboxdError;
use crate::sandbox::running::error::RunningError;
use crate::sandbox::running::model::ClosedSession;
use crate::sandbox::running::ours::{our_session_on, owner};
use crate::sandbox::running::whose::Closing;
use crate::sandbox::tombstones::model::Reason;
use crate::sandbox::tombstones::service::{self as tombstones, Removed};
use crate::sandbox::workspaces::claims;
use crate::sandbox::workspaces::sessions as workspaces;
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// Session `session_id` of this organization on `conn` as the confirmation of "Close and delete
/// files" shows it, with whose it is.
pub async fn closing(
    st: &AppState,
    caller: &Caller,
    conn: Connection,
    session_id: &str,
) -> Result<(Connection, Closing)> {
    let (conn, _, info) = our_session_on(st, caller, conn, session_id).await?;
    let closing = Closing {
        session_id: info.session_id,
        key: session_id.to_string(),
        deletes: "the session is closed and its files are deleted: its sandbox stops, and every file under /workspace of this session is removed from the host's disk.",
        workspace: owner(st, caller, &conn.id, session_id).await?,
    };
    Ok((conn, closing))
}

/// Closes one of this organization's sessions on its host: the sandbox stops and the host forgets
/// the session. Its files stay (a later run attaches to them again) unless `delete_files`: then
/// the host deletes the session's workspace folder too, and the workspace row forgets the session,
/// so the next run starts with empty files. Audited as `sandbox_session.closed` or
/// `sandbox_session.files_deleted`.
pub async fn close(
    st: &AppState,
    caller: &Caller,
    conn: Connection,
    session_id: &str,
    delete_files: bool,
) -> Result<ClosedSession> {
    let (conn, client, _) = our_session_on(st, caller, conn, session_id).await?;
    let owner = owner(st, caller, &conn.id, session_id).await?;
    if delete_files {
        let allowed = owner.as_ref().map(|o| o.workspace_id.as_str());
        crate::sandbox::running::destroying::claim(st, session_id, session_id, allowed).await?;
    }
    // A purge that fails at the host becomes a tombstone (below): the sweep retries it.
    let deleted = client.delete_session(session_id, delete_files).await;
    if delete_files {
        claims::release_purge(&st.db, session_id).await?;
    }
    let pending_removal = match deleted {
        Ok(()) => false,
        Err(e) if delete_files && !matches!(e, SandboxdError::NotFound { .. }) => {
            tracing::warn!(connection_id = %conn.id, session_id, error = %e, "deleting a session's files failed; pending removal");
            true
        }
        Err(e) => return Err(e.into()),
    };
    if delete_files {
        workspaces::files_deleted(st, &caller.org_id, &conn.id, session_id).await?;
    }
    let closed = ClosedSession {
        connection_id: conn.id.clone(),
        connection_name: conn.name.clone(),
        session_id: session_id.to_string(),
        files_deleted: delete_files && !pending_removal,
        workspace: owner,
        pending_removal,
        sandbox_stopped: false,
    };
    let (action, detail) = closed.audit_words();
    let mut tx = st.db.begin().await?;
    if pending_removal {
        let removed =
            Removed { connection_id: &conn.id, session_key: session_id, session_id, reason: Reason::FilesDeleted };
        tombstones::record_in(&mut tx, &caller.org_id, &removed, crate::db::now_ms())
            .await
            .map_err(|e| RunningError::Internal(e.into()))?;
    }
    audit::record(&mut tx, &caller.org_id, &caller.actor(), action, session_id, &detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(closed)
}
