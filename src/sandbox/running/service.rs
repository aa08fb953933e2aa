//! Running sessions (docs/design.md §6, §7): what each sandboxd host holds for this organization —
//! only the sessions whose sandboxd `tenant` is the organization's id, never another tenant's —
//! with the host-wide counts beside them; and one session's live activity (the host's 200-entry
//! event ring), shown only after its tenant is checked. Switched-off hosts are listed too,
//! marked off: off stops new work, not what still runs (and is billed) there, which may still be
//! closed. Identity, not spelling: a session's key names the connection that opened it
//! (`workspaces/key.rs`), so a session read through another connection of the organization (one
//! host under two addresses: `localhost` and `127.0.0.1`, a second name, a port forward) is never
//! listed, closed, its files deleted or called an orphan there. One host under several connections
//! shows each session once, under the connection it belongs to, and only there may it be closed.

use futures_util::future::join_all;

use super::activity::Activity;
use super::error::RunningError;
use super::model::{ClosedSession, HostSessions, RunningSession, RunningSessions};
use super::orphans;
use super::ours::{belongs_to, our_session, owner};
use super::whose::Closing;
use crate::access::Caller;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::identity;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::dispatch::running;
use crate::sandbox::workspaces::key;
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// This organization's sessions on each of its sandboxd hosts (switched-off ones marked); a host
/// that cannot be read is a message in its place, never a failure of the whole list.
pub async fn list(st: &AppState, caller: &Caller, usage: bool) -> Result<RunningSessions> {
    Ok(RunningSessions {
        organization_id: caller.org_id.clone(),
        organization_name: caller.org_name.clone(),
        usage_sampled: usage,
        engine_sampled: usage && st.docker.is_some(),
        connections: collect(st, caller, usage, true).await?,
        daytona: crate::sandbox::hosts::daytona::running::list(st, caller).await?,
    })
}

/// The same per host, without sampling and without the policy (the dashboard's capacity cards):
/// one entry per host, so a host registered twice is counted once, with every session of this
/// organization on it.
pub async fn capacity(st: &AppState, caller: &Caller) -> Result<Vec<HostSessions>> {
    let mut hosts = collect(st, caller, false, false).await?;
    let (first, again): (Vec<HostSessions>, Vec<HostSessions>) =
        hosts.drain(..).partition(|h| h.same_host_as.is_none());
    let mut first = first;
    for h in again {
        if let Some(f) = first.iter_mut().find(|f| Some(&f.connection_name) == h.same_host_as.as_ref()) {
            f.sessions.extend(h.sessions);
        }
    }
    Ok(first)
}

async fn collect(st: &AppState, caller: &Caller, usage: bool, with_policy: bool) -> Result<Vec<HostSessions>> {
    let conns: Vec<Connection> =
        connections::list(st, caller).await?.into_iter().filter(|c| c.kind.has_sessions()).collect();
    let mut hosts: Vec<HostSessions> = join_all(conns.iter().map(|c| host_sessions(st, caller, c, usage, with_policy)))
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    let groups = same_host_groups(&conns, &hosts);
    under_key_owner(&caller.org_id, &conns, &mut hosts);
    once_per_host(st, caller, &conns, &groups, &mut hosts).await?;
    if with_policy {
        for (conn, host) in conns.iter().zip(hosts.iter_mut()) {
            name_owners(st, caller, conn, &mut host.sessions).await?;
        }
    }
    Ok(hosts)
}

/// Each session whose key names another connection of the organization than the one it was read
/// through (`conns[i]` read `hosts[i]`): dropped here when that connection's read lists it (it shows
/// there), else kept marked with its owner (`owned_by`), offered for nothing.
fn under_key_owner(org_id: &str, conns: &[Connection], hosts: &mut [HostSessions]) {
    let listed: Vec<(String, String)> =
        hosts.iter().flat_map(|h| h.sessions.iter().map(|s| (h.connection_id.clone(), s.session_id.clone()))).collect();
    for (conn, host) in conns.iter().zip(hosts.iter_mut()) {
        host.sessions.retain_mut(|s| {
            let owner = key::connection_named(&s.session_id, org_id, conns.iter().map(|c| c.id.as_str()));
            let Some(owner) = owner.filter(|o| *o != conn.id) else { return true };
            if listed.iter().any(|(c, id)| c == owner && *id == s.session_id) {
                return false;
            }
            s.owned_by = conns.iter().find(|c| c.id == owner).map(|c| c.name.clone());
            true
        });
    }
}

/// The connections of `conns` that reach one host, by index, the oldest first: those whose
/// addresses have one canonical form (`identity.rs`: `localhost`, `127.0.0.1` and `[::1]`, a
/// trailing dot, an explicit default port), and those whose reads (`hosts`, in `conns`' order) list
/// one session (its name and the instant it was opened). Only groups of two or more.
fn same_host_groups(conns: &[Connection], hosts: &[HostSessions]) -> Vec<Vec<usize>> {
    let canonical: Vec<Option<String>> =
        conns.iter().map(|c| c.address.as_deref().and_then(identity::canonical)).collect();
    let shares = |i: usize, j: usize| {
        hosts[i]
            .sessions
            .iter()
            .any(|s| hosts[j].sessions.iter().any(|t| t.session_id == s.session_id && t.created_at == s.created_at))
    };
    let mut label: Vec<usize> = (0..conns.len()).collect();
    for i in 0..conns.len() {
        for j in 0..i {
            if label[i] != label[j] && ((canonical[i].is_some() && canonical[i] == canonical[j]) || shares(i, j)) {
                let (from, to) = (label[i], label[j]);
                label.iter_mut().filter(|l| **l == from).for_each(|l| *l = to);
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in 0..conns.len() {
        match groups.iter_mut().find(|g| label[g[0]] == label[i]) {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
        .into_iter()
        .filter(|m| m.len() > 1)
        .map(|mut m| {
            m.sort_by(|a, b| (conns[*a].created_at, &conns[*a].id).cmp(&(conns[*b].created_at, &conns[*b].id)));
            m
        })
        .collect()
}

/// One host registered under several connections: each session shows once, under the connection
/// it belongs to ([`belongs_to`]) when that connection's read of the host has it (else under the
/// first that read it), and the later connections say which one lists the host first, so nothing
/// is counted twice.
async fn once_per_host(
    st: &AppState,
    caller: &Caller,
    conns: &[Connection],
    groups: &[Vec<usize>],
    hosts: &mut [HostSessions],
) -> Result<()> {
    for group in groups {
        let members: Vec<&Connection> = group.iter().map(|i| &conns[*i]).collect();
        let read_by = |conn_id: &str, session_id: &str| {
            hosts.iter().any(|h| h.connection_id == conn_id && h.sessions.iter().any(|s| s.session_id == session_id))
        };
        // (session id, the connection it is shown under)
        let mut shown_under: Vec<(String, String)> = Vec::new();
        for i in group {
            for s in &hosts[*i].sessions {
                if shown_under.iter().any(|(id, _)| *id == s.session_id) {
                    continue;
                }
                let owner = belongs_to(st, &caller.org_id, &members, &s.session_id).await?;
                let under = if read_by(&owner.id, &s.session_id) { owner.id.clone() } else { conns[*i].id.clone() };
                shown_under.push((s.session_id.clone(), under));
            }
        }
        for i in group {
            let here = &conns[*i].id;
            hosts[*i].sessions.retain(|s| shown_under.iter().any(|(id, under)| *id == s.session_id && under == here));
        }
        let first = &conns[group[0]];
        for i in group.iter().skip(1) {
            hosts[*i].same_host_as = Some(first.name.clone());
        }
    }
    Ok(())
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
            Ok(host)
        }
        Err(e) => Ok(HostSessions::unavailable(conn, e.host_problem(&conn.id)?)),
    }
}

/// Each session's workspace: whose it is, from our rows (never a host call); a session of this
/// organization that nothing here names is marked orphaned only as the purge would decide it
/// ([`orphans::is_orphan`]: idle for `AGENTICOS_ORPHAN_MIN_AGE_SECONDS`, no row, tombstone or
/// claim), so a session being opened right now is never shown as one.
async fn name_owners(st: &AppState, caller: &Caller, conn: &Connection, sessions: &mut [RunningSession]) -> Result<()> {
    for s in sessions {
        s.workspace = owner(st, caller, &s.connection_id, &s.session_id).await?;
        if s.workspace.is_none() {
            let idle_ms = i64::try_from(s.idle_seconds.saturating_mul(1000)).unwrap_or(i64::MAX);
            s.orphaned = orphans::is_orphan(st, &caller.org_id, conn, &s.session_id, idle_ms)
                .await
                .map_err(RunningError::Internal)?;
        }
    }
    Ok(())
}

/// One session (or Daytona sandbox) as the confirmation of "Close and delete files" shows it,
/// with whose it is (each kind's in its folder, `hosts/<kind>/running/`).
pub async fn session(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
) -> Result<(Connection, Closing)> {
    let conn = connections::get(st, caller, connection_id).await?;
    running::closing(st, caller, conn, session_id).await
}

/// Closes one of this organization's sessions (or Daytona sandboxes) on its host: a sandboxd
/// session by [`crate::sandbox::hosts::sandboxd::running::close`], a Daytona sandbox by
/// [`crate::sandbox::hosts::daytona::running::close`]. Operators and above; audited as
/// `sandbox_session.closed` or `sandbox_session.files_deleted`.
pub async fn close(
    st: &AppState,
    caller: &Caller,
    connection_id: &str,
    session_id: &str,
    delete_files: bool,
) -> Result<ClosedSession> {
    let conn = connections::get(st, caller, connection_id).await?;
    running::close(st, caller, conn, session_id, delete_files).await
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
