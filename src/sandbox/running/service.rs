//! Running sessions (DESIGN.md §6, §7): what each switched-on sandboxd host holds for this
//! organization — only the sessions whose sandboxd `tenant` is the organization's id, never
//! another tenant's — with the host-wide counts beside them; and one session's live activity
//! (the host's 200-entry event ring), shown only after its tenant is checked.

use futures_util::future::join_all;

use super::activity::Activity;
use super::error::RunningError;
use super::model::{HostSessions, RunningSessions};
use crate::access::Caller;
use crate::sandbox::client::is_session_id;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// This organization's sessions on each of its switched-on sandboxd hosts; a host that cannot be
/// read is a message in its place, never a failure of the whole list.
pub async fn list(st: &AppState, caller: &Caller, usage: bool) -> Result<RunningSessions> {
    Ok(RunningSessions {
        organization_id: caller.org_id.clone(),
        organization_name: caller.org_name.clone(),
        usage_sampled: usage,
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
        // Without the policy the sessions still show; only "reaped in" is unknown.
        Ok((list?, policy.ok().map(|p| p.idle_timeout)))
    };
    match read.await {
        Ok((list, idle_timeout)) => Ok(HostSessions::read(conn, &caller.org_id, list, idle_timeout)),
        Err(e) => Ok(HostSessions::unavailable(conn, e.host_problem(&conn.id)?)),
    }
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
    let conn = connections::get(st, caller, connection_id).await?;
    if conn.kind != ConnectionKind::Sandboxd || !is_session_id(session_id) {
        return Err(RunningError::NotFound);
    }
    let client = connections::client_for(st, &caller.org_id, &conn).await?;
    let info = client.session(session_id, false).await?;
    if info.tenant.as_deref() != Some(caller.org_id.as_str()) {
        return Err(RunningError::NotFound);
    }
    let log = client.events(session_id, after).await?;
    Ok(Activity::of(&conn, &info, after, log))
}
