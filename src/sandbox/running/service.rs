//! Running sessions (DESIGN.md §6, §7): what each switched-on sandboxd host holds for this
//! organization — only the sessions whose sandboxd `tenant` is the organization's id, never
//! another tenant's — with the host-wide counts beside them; and one session's live activity
//! (the host's 200-entry event ring), shown only after its tenant is checked.

use futures_util::future::join_all;

use super::activity::Activity;
use super::error::RunningError;
use super::model::{ClosedSession, HostSessions, RunningSession, RunningSessions};
use super::orphans;
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::DbError;
use crate::sandbox::client::{is_session_id, SandboxdClient, SandboxdError, SessionInfo};
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::sandbox::tombstones::model::Reason;
use crate::sandbox::tombstones::service::{self as tombstones, Removed};
use crate::sandbox::workspaces::sessions::{self as workspaces, SessionOwner};
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// This organization's sessions on each of its switched-on sandboxd hosts; a host that cannot be
/// read is a message in its place, never a failure of the whole list.
pub async fn list(st: &AppState, caller: &Caller, usage: bool) -> Result<RunningSessions> {
    Ok(RunningSessions {
        organization_id: caller.org_id.clone(),
        organization_name: caller.org_name.clone(),
        usage_sampled: usage,
        engine_sampled: usage && st.docker.is_some(),
        connections: collect(st, caller, usage, true).await?,
    })
}

/// The same per host, without sampling and without the policy (the dashboard's capacity cards).
pub async fn capacity(st: &AppState, caller: &Caller) -> Result<Vec<HostSessions>> {
    collect(st, caller, false, false).await
}

async fn collect(st: &AppState, caller: &Caller, usage: bool, with_policy: bool) -> Result<Vec<HostSessions>> {
    let conns: Vec<Connection> = connections::list(st, caller)
        .await?
        .into_iter()
        .filter(|c| c.is_enabled && c.kind == ConnectionKind::Sandboxd)
        .collect();
    join_all(conns.iter().map(|c| host_sessions(st, caller, c, usage, with_policy))).await.into_iter().collect()
}

async fn host_sessions(
    st: &AppState,
    caller: &Caller,
    conn: &Connection,
    usage: bool,
    with_policy: bool,
) -> Result<HostSessions> {
    let read = async {
        let client = connections::client_for(st, &caller.org_id, conn).await?;
        if !with_policy {
            return Ok::<_, ConnectionError>((client.sessions(usage).await?, None));
        }
        let (list, policy) = tokio::join!(client.sessions(usage), client.policy());
        // Without the policy the sessions still show; only "closes if idle in" is unknown.
        Ok((list?, policy.ok().map(|p| p.idle_timeout)))
    };
    match read.await {
        Ok((list, idle_timeout)) => {
            let mut host = HostSessions::read(conn, &caller.org_id, list, idle_timeout);
            if usage {
                super::engine_usage::fill(st, conn, &mut host.sessions).await;
            }
            if with_policy {
                name_owners(st, caller, conn, &mut host.sessions).await?;
            }
            Ok(host)
        }
        Err(e) => Ok(HostSessions::unavailable(conn, e.host_problem(&conn.id)?)),
    }
}

/// Each session's workspace: whose it is, from our rows (never a host call); a session of this
/// organization that nothing here names is marked orphaned.
async fn name_owners(st: &AppState, caller: &Caller, conn: &Connection, sessions: &mut [RunningSession]) -> Result<()> {
    for s in sessions {
        s.workspace = owner(st, caller, &s.connection_id, &s.session_id).await?;
        if s.workspace.is_none() {
            s.orphaned =
                orphans::is_orphan(st, &caller.org_id, conn, &s.session_id).await.map_err(RunningError::Internal)?;
        }
    }
    Ok(())
}

/// Whose session `session_id` on `connection_id` is, from our rows only (never a host call).
async fn owner(st: &AppState, caller: &Caller, connection_id: &str, session_id: &str) -> Result<Option<SessionOwner>> {
    workspaces::owner_of(st, caller, connection_id, session_id).await.map_err(RunningError::from)
}

/// One of this organization's sessions on a sandboxd connection of its own, and a client for
/// its host (built by the connections service: the key goes only to the address it is bound to).
/// Another organization's connection, another tenant's session, an unknown one: `NotFound`.
async fn our_session(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
) -> Result<(Connection, SandboxdClient, SessionInfo)> {
    let conn = connections::get(st, caller, connection_id).await?;
    if conn.kind != ConnectionKind::Sandboxd || !is_session_id(session_id) {
        return Err(RunningError::NotFound);
    }
    let client = connections::client_for(st, &caller.org_id, &conn).await?;
    let info = client.session(session_id, false).await?;
    if info.tenant.as_deref() != Some(caller.org_id.as_str()) {
        return Err(RunningError::NotFound);
    }
    Ok((conn, client, info))
}

/// One session as the close dialog shows it, with whose it is.
pub async fn session(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
) -> Result<(Connection, RunningSession)> {
    let (conn, _, info) = our_session(st, caller, connection_id, session_id).await?;
    let mut s = RunningSession::of(&conn.id, &info, None);
    s.workspace = owner(st, caller, &conn.id, session_id).await?;
    Ok((conn, s))
}

/// Closes one of this organization's sessions on its host: the sandbox stops and the host forgets
/// the session. Its files stay (a later run attaches to them again) unless `delete_files`: then
/// the host deletes the session's workspace folder too, and the workspace row forgets the session,
/// so the next run starts with empty files. Operators and above; audited as
/// `sandbox_session.closed` or `sandbox_session.files_deleted`.
pub async fn close(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
    delete_files: bool,
) -> Result<ClosedSession> {
    let (conn, client, _) = our_session(st, caller, connection_id, session_id).await?;
    let owner = owner(st, caller, &conn.id, session_id).await?;
    // A purge that fails at the host becomes a tombstone (below): the sweep retries it.
    let pending_removal = match client.delete_session(session_id, delete_files).await {
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

/// The live activity of one of this organization's sessions. A session of another tenant, an
/// unknown one, or one on another organization's connection is `NotFound`, alike.
pub async fn activity(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
    after: u64,
) -> Result<Activity> {
    let (conn, client, info) = our_session(st, caller, connection_id, session_id).await?;
    let (log, policy) = tokio::join!(client.events(session_id, after), client.policy());
    // Without the policy the activity still shows; only "closes if idle in" is unknown.
    let mut activity = Activity::of(&conn, &info, after, log?, policy.ok().map(|p| p.idle_timeout));
    activity.session.workspace = owner(st, caller, &conn.id, session_id).await?;
    Ok(activity)
}
