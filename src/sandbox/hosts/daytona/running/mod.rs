//! Daytona on the Running tab (docs/daytona.md, "The Running tab"): each Daytona connection's
//! sandboxes of this organization, listed by our labels (this deployment's, the organization's
//! and the connection's; each sandbox's labels checked again), at most [`LIST_MAX`] within
//! [`LIST_WITHIN`], with state, CPU, memory, disk, last activity and whose each one is (our
//! workspace rows). A connection Daytona does not answer for is a message in its place, never a
//! failure of the whole tab. Close stops a sandbox of a persistent scope (its files stay; the
//! next run starts it again) and deletes one of a `run` scope (or, with `delete_files`, any);
//! audited like a sandboxd session's close. Another organization's sandbox is not found.

pub mod model;
pub mod orphans;

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;

use self::model::{is_run_scope, DaytonaSandbox, DaytonaSandboxes, SandboxFacts, LIST_MAX};
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::DbError;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::client::labels::SCOPE;
use crate::sandbox::hosts::daytona::client::{DaytonaClient, DaytonaError, Sandbox, SandboxState};
use crate::sandbox::hosts::daytona::connections as daytona;
use crate::sandbox::running::error::RunningError;
use crate::sandbox::running::model::ClosedSession;
use crate::sandbox::running::whose::Closing;
use crate::sandbox::tombstones::model::Reason;
use crate::sandbox::tombstones::service::{self as tombstones, Removed};
use crate::sandbox::workspaces::claims;
use crate::sandbox::workspaces::sessions::{self as workspaces, SessionOwner};
use crate::state::AppState;

type Result<T> = std::result::Result<T, RunningError>;

/// How long listing one connection's sandboxes may take, every page included.
pub const LIST_WITHIN: Duration = Duration::from_secs(15);

/// Each Daytona connection of the organization (switched-off ones too), with its sandboxes or why
/// they could not be read.
pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<DaytonaSandboxes>> {
    let conns: Vec<Connection> =
        connections::list(st, caller).await?.into_iter().filter(|c| c.kind.has_sandboxes_section()).collect();
    join_all(conns.iter().map(|c| of_connection(st, caller, c))).await.into_iter().collect()
}

async fn of_connection(st: &AppState, caller: &Caller, conn: &Connection) -> Result<DaytonaSandboxes> {
    let mut out = DaytonaSandboxes {
        connection_id: conn.id.clone(),
        connection_name: conn.name.clone(),
        is_enabled: conn.is_enabled,
        problem: None,
        truncated: false,
        sandboxes: Vec::new(),
    };
    let client = match daytona::client_for(st, &caller.org_id, conn).await {
        Ok(c) => c,
        Err(e) => {
            out.problem = Some(e.host_problem(&conn.id)?);
            return Ok(out);
        }
    };
    let labels = ours(st, &caller.org_id, &conn.id);
    let listed = match tokio::time::timeout(LIST_WITHIN, client.list_all_sandboxes(&labels, LIST_MAX + 1)).await {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => {
            out.problem = Some(daytona::words(&e));
            return Ok(out);
        }
        Err(_) => {
            out.problem = Some(format!("Daytona did not list the sandboxes within {} s.", LIST_WITHIN.as_secs()));
            return Ok(out);
        }
    };
    let mut listed: Vec<Sandbox> = listed.into_iter().filter(|sb| has_labels(sb, &labels)).collect();
    out.truncated = listed.len() > LIST_MAX;
    listed.truncate(LIST_MAX);
    let now = crate::db::now_ms();
    for sb in listed {
        let workspace = owner(st, caller, &conn.id, &sb).await?;
        out.sandboxes.push(row(&conn.id, sb, workspace, now));
    }
    out.sandboxes.sort_by(|a, b| b.last_activity_at.cmp(&a.last_activity_at).then_with(|| a.name.cmp(&b.name)));
    Ok(out)
}

fn row(connection_id: &str, sb: Sandbox, workspace: Option<SessionOwner>, now: i64) -> DaytonaSandbox {
    let last_activity_at = sb.last_activity_at.as_deref().and_then(crate::sandbox::running::orphaned::epoch_ms);
    let facts = SandboxFacts {
        state: sb.state().as_str().to_string(),
        scope: sb.labels.get(SCOPE).cloned(),
        cpu: sb.cpu,
        memory_gib: sb.memory,
        disk_gib: sb.disk,
        idle_seconds: last_activity_at.map(|at| (now.saturating_sub(at).max(0) / 1000) as u64),
        last_activity_at,
        sandbox_id: sb.id,
        name: sb.name,
    };
    DaytonaSandbox { workspace, ..DaytonaSandbox::new(connection_id, facts) }
}

/// The labels a sandbox of this deployment, organization and connection carries.
fn ours(st: &AppState, org_id: &str, connection_id: &str) -> BTreeMap<String, String> {
    let mut labels = daytona::owner_labels(st, org_id);
    labels.insert(daytona::CONNECTION_LABEL.to_string(), connection_id.to_string());
    labels
}

fn has_labels(sb: &Sandbox, labels: &BTreeMap<String, String>) -> bool {
    labels.iter().all(|(k, v)| sb.labels.get(k) == Some(v))
}

/// Whose sandbox `sb` is: the workspace row naming its id (else, before it was recorded, its name).
async fn owner(st: &AppState, caller: &Caller, connection_id: &str, sb: &Sandbox) -> Result<Option<SessionOwner>> {
    if let Some(o) = workspaces::owner_of(st, caller, connection_id, &sb.id).await? {
        return Ok(Some(o));
    }
    Ok(workspaces::owner_of(st, caller, connection_id, &sb.name).await?)
}

/// Sandbox `sandbox_id` (Daytona's id or name) of this organization on Daytona connection `conn`,
/// and a client for it: one without our labels, being destroyed, or unknown is `NotFound`.
async fn ours_on(
    st: &AppState,
    caller: &Caller,
    conn: &Connection,
    sandbox_id: &str,
) -> Result<(DaytonaClient, Sandbox)> {
    let client = daytona::client_for(st, &caller.org_id, conn).await?;
    let sb = match client.get_sandbox(sandbox_id).await {
        Ok(sb) => sb,
        Err(DaytonaError::NotFound { .. }) => return Err(RunningError::NotFound),
        Err(e) => return Err(host(e)),
    };
    if !has_labels(&sb, &ours(st, &caller.org_id, &conn.id))
        || matches!(sb.state(), SandboxState::Destroyed | SandboxState::Destroying)
    {
        return Err(RunningError::NotFound);
    }
    Ok((client, sb))
}

/// Sandbox `sandbox_id` as the confirmation of "Close and delete files" shows it.
pub async fn closing(
    st: &AppState,
    caller: &Caller,
    conn: Connection,
    sandbox_id: &str,
) -> Result<(Connection, Closing)> {
    let (_, sb) = ours_on(st, caller, &conn, sandbox_id).await?;
    let closing = Closing {
        workspace: owner(st, caller, &conn.id, &sb).await?,
        session_id: sb.id,
        key: sb.name,
        deletes: "Daytona deletes the sandbox, and every file in it goes with it.",
    };
    Ok((conn, closing))
}

/// Closes sandbox `sandbox_id` (Daytona's id or name) of this organization on Daytona connection
/// `conn`: deleted for a `run` scope or with `delete_files` (the workspace row forgets it, so the
/// next run starts fresh by name; a delete Daytona refuses now is pending removal, retried by the
/// sweep), else stopped (its files stay). A sandbox without this deployment's, organization's and
/// connection's labels is `NotFound`, like one Daytona does not have.
pub async fn close(
    st: &AppState,
    caller: &Caller,
    conn: &Connection,
    sandbox_id: &str,
    delete_files: bool,
) -> Result<ClosedSession> {
    let (client, sb) = ours_on(st, caller, conn, sandbox_id).await?;
    let workspace = owner(st, caller, &conn.id, &sb).await?;
    let delete = delete_files || is_run_scope(workspace.as_ref(), sb.labels.get(SCOPE).map(String::as_str));
    let mut pending_removal = false;
    if delete {
        let allowed = workspace.as_ref().map(|o| o.workspace_id.as_str());
        crate::sandbox::running::destroying::claim(st, &sb.name, &sb.id, allowed).await?;
        let deleted = client.delete_sandbox(&sb.id).await;
        claims::release_purge(&st.db, &sb.name).await?;
        pending_removal = match deleted {
            Ok(()) | Err(DaytonaError::NotFound { .. }) => false,
            Err(e) => {
                tracing::warn!(connection_id = %conn.id, sandbox_id = %sb.id, error = %e, "deleting a Daytona sandbox failed; pending removal");
                true
            }
        };
        workspaces::files_deleted(st, &caller.org_id, &conn.id, &sb.id).await?;
    } else {
        stop(&client, &sb).await?;
    }
    let closed = ClosedSession {
        connection_id: conn.id.clone(),
        connection_name: conn.name.clone(),
        session_id: sb.id.clone(),
        files_deleted: delete && !pending_removal,
        workspace,
        pending_removal,
        sandbox_stopped: !delete,
    };
    let (action, detail) = closed.audit_words();
    let mut tx = st.db.begin().await?;
    if pending_removal {
        let removed = Removed {
            connection_id: &conn.id,
            session_key: &sb.name,
            session_id: &sb.id,
            reason: Reason::FilesDeleted,
        };
        tombstones::record_in(&mut tx, &caller.org_id, &removed, crate::db::now_ms())
            .await
            .map_err(|e| RunningError::Internal(e.into()))?;
    }
    audit::record(&mut tx, &caller.org_id, &caller.actor(), action, &sb.id, &detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(closed)
}

/// Stops a running (or paused) sandbox; one already stopped, archived or stopping is left as is.
async fn stop(client: &DaytonaClient, sb: &Sandbox) -> Result<()> {
    if !matches!(sb.state(), SandboxState::Started | SandboxState::Paused) {
        return Ok(());
    }
    match client.stop_sandbox(&sb.id).await {
        Ok(_) | Err(DaytonaError::NotFound { .. }) => Ok(()),
        Err(e) => Err(host(e)),
    }
}

/// Daytona's failure as a host's (502, 409, 429, 504 as for sandboxd).
fn host(e: DaytonaError) -> RunningError {
    match e.into_host() {
        Ok(h) => RunningError::HostUnavailable(ConnectionError::Host(h)),
        Err(refused) => RunningError::HostUnavailable(ConnectionError::AddressRefused(refused.to_string())),
    }
}
