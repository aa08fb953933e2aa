//! Which of the organization's connections a sandboxd session belongs to, and whose it is: the
//! reads Running's list, activity and close share (the close in `hosts/sandboxd/running/`).
//! Identity, not spelling: a session's key names the connection that opened it
//! (`workspaces/key.rs`); a name that is no key of ours belongs, among connections at one
//! canonical address, to the one a workspace row names it under, else the oldest.

use super::error::RunningError;
use crate::access::Caller;
use crate::sandbox::connections::identity;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::sandboxd::client::{is_session_id, SandboxdClient, SessionInfo};
use crate::sandbox::workspaces::sessions::{self as workspaces, SessionOwner};
use crate::sandbox::workspaces::{key, live};
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// Which of `group` (connections at one address, the oldest first) session `session_id` belongs
/// to: the one a workspace row of this organization names it under, else the one its key was built
/// for, else the oldest.
pub(crate) async fn belongs_to<'a>(
    st: &AppState,
    org_id: &str,
    group: &[&'a Connection],
    session_id: &str,
) -> Result<&'a Connection> {
    let mut c = st.db.conn().await?;
    for conn in group {
        if live::names_session(&mut c, org_id, &conn.id, session_id).await? {
            return Ok(conn);
        }
    }
    if let Some(conn) = group.iter().find(|conn| key::is_key_of(session_id, org_id, &conn.id)) {
        return Ok(conn);
    }
    group.first().copied().ok_or(RunningError::NotFound)
}

/// Whose session `session_id` on `connection_id` is, from our rows only (never a host call).
pub(crate) async fn owner(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
) -> Result<Option<SessionOwner>> {
    workspaces::owner_of(st, caller, connection_id, session_id).await.map_err(RunningError::from)
}

/// One of this organization's sessions on a sandboxd connection of its own, and a client for
/// its host (built by the connections service: the key goes only to the address it is bound to).
/// Another organization's connection, another tenant's session, an unknown one: `NotFound`.
pub(crate) async fn our_session(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
) -> Result<(Connection, SandboxdClient, SessionInfo)> {
    let conn = connections::get(st, caller, connection_id).await?;
    our_session_on(st, caller, conn, session_id).await
}

/// [`our_session`] on connection `conn`, already read as the caller's.
pub(crate) async fn our_session_on(
    st: &AppState,
    caller: &Caller,
    conn: Connection,
    session_id: &str,
) -> Result<(Connection, SandboxdClient, SessionInfo)> {
    if !conn.kind.has_sessions() || !is_session_id(session_id) {
        return Err(RunningError::NotFound);
    }
    belongs_here(st, caller, &conn, session_id).await?;
    let client = connections::client_for(st, &caller.org_id, &conn).await?;
    let info = client.session(session_id, false).await?;
    if info.tenant.as_deref() != Some(caller.org_id.as_str()) {
        return Err(RunningError::NotFound);
    }
    Ok((conn, client, info))
}

/// Refuses `session_id` on `conn` when it belongs to another connection of the organization
/// (`OwnedElsewhere`, naming it): the one its key was built for, whatever address either reaches
/// the host by; for a name that is no key of ours, among connections whose addresses have one
/// canonical form, the one a workspace row names it under, else the oldest. A session is closed,
/// its files deleted and its activity read only under the connection it belongs to.
pub(crate) async fn belongs_here(st: &AppState, caller: &Caller, conn: &Connection, session_id: &str) -> Result<()> {
    let all: Vec<Connection> =
        connections::list(st, caller).await?.into_iter().filter(|c| c.kind.has_sessions()).collect();
    let elsewhere = |owner: &Connection| {
        if owner.id == conn.id {
            Ok(())
        } else {
            Err(RunningError::OwnedElsewhere(owner.name.clone()))
        }
    };
    if let Some(owner) = key::connection_named(session_id, &caller.org_id, all.iter().map(|c| c.id.as_str())) {
        return all.iter().find(|c| c.id == owner).map_or(Ok(()), elsewhere);
    }
    let Some(here) = conn.address.as_deref().and_then(identity::canonical) else {
        return Ok(());
    };
    let mut group: Vec<&Connection> =
        all.iter().filter(|c| c.address.as_deref().and_then(identity::canonical).as_deref() == Some(&here)).collect();
    if group.len() < 2 {
        return Ok(());
    }
    group.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    elsewhere(belongs_to(st, &caller.org_id, &group, session_id).await?)
}
