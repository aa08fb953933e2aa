//! Workspaces for runs (docs/design.md §7-8): which workspace a run gets (its session key), and its
//! operations — each through the recording wrapper around the run's backend, which opens the
//! workspace lazily on the first one.

use super::backend::WorkspaceBackend;
use super::command::{Command, ExecInput};
use super::error::WorkspaceError;
use super::key;
use super::model::{is_finished, Entry, ExecResult, Resolved, RunWorkspace, Workspace, WorkspaceState, FINISHED};
use super::recorded::{Recorded, RowKeys};
use super::scope;
use super::store::{self, NewWorkspace};
use crate::access::Caller;
use crate::agents::model::{Agent, Backend, Run};
use crate::agents::runs::service as runs;
use crate::db;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::dispatch::workspaces as backends;
use crate::sandbox::hosts::kind::Placement;
use crate::sandbox::hosts::state::workspaces::finish::{merge_at_finish, Recovered};
use crate::sandbox::snapshots::lifecycle as snapshots;
use crate::sandbox::tombstones::model::Reason;
use crate::sandbox::tombstones::service::{self as tombstones, Removed};
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::vocabulary::paths::{self, WorkspacePath};
use crate::vocabulary::scope::Scope;

type Result<T> = std::result::Result<T, WorkspaceError>;

fn refuse_if_finished(run: &Run) -> Result<()> {
    if is_finished(run) {
        Err(WorkspaceError::Refused(FINISHED.into()))
    } else {
        Ok(())
    }
}

fn ensure_caller(caller: &Caller) -> Result<()> {
    if caller.role.can_see_sandboxes() {
        Ok(())
    } else {
        Err(WorkspaceError::Forbidden("Agent runtimes use a token with the operator role or above.".into()))
    }
}

/// Resolves a run's workspace (creating its row, never asking a host).
pub async fn resolve(st: &AppState, caller: &Caller, run_id: &str) -> Result<Resolved> {
    ensure_caller(caller)?;
    if let Some(r) = st.resolve_cache.get(&caller.org_id, run_id) {
        return Ok(r);
    }
    // The change counter the store keeps of the rows runs are resolved from (SQLite), if any.
    let Some((epoch, read_at)) = st.log.change_counter().await else {
        let r = resolve_in(st, &caller.org_id, run_id).await?;
        st.resolve_cache.put(&r);
        return Ok(r);
    };
    // Nothing it was resolved from changed since: renewed without a statement more.
    if let Some((r, stamped)) = st.resolve_cache.stale(&caller.org_id, run_id) {
        if stamped == epoch {
            st.resolve_cache.put_stamped(&r, epoch, read_at);
            return Ok(r);
        }
    }
    let r = resolve_in(st, &caller.org_id, run_id).await?;
    st.resolve_cache.put_stamped(&r, epoch, read_at);
    Ok(r)
}

/// [`resolve`] for a caller whose access was decided elsewhere; still confined to `org_id`.
pub(super) async fn resolve_in(st: &AppState, org_id: &str, run_id: &str) -> Result<Resolved> {
    match resolve_or_plan(st, org_id, run_id, true).await? {
        Resolution::Row(r) => Ok(*r),
        Resolution::NoRowYet { .. } => Err(WorkspaceError::Internal(anyhow::anyhow!("workspace row vanished"))),
    }
}

/// A run's workspace as our rows have it: its row, or (when `create` is false and none exists
/// yet) what its row would say. Reading never writes: only an operation's resolve creates a row.
enum Resolution {
    Row(Box<Resolved>),
    NoRowYet { scope: Scope, backend: &'static str },
}

async fn resolve_or_plan(st: &AppState, org_id: &str, run_id: &str, create: bool) -> Result<Resolution> {
    let parts = runs::parts_in_org(st, org_id, run_id)
        .await?
        .ok_or_else(|| WorkspaceError::NotFound("There is no such run.".into()))?;
    let run = parts.run;
    let agent = parts.agent.ok_or_else(|| WorkspaceError::NotFound("This run's agent was deleted.".into()))?;
    if let Some(workspace) = bound_workspace(st, org_id, &run.id).await? {
        let connection = match &workspace.connection_id {
            Some(id) => connections::for_org(st, org_id, id).await.map_err(|e| WorkspaceError::Internal(e.into()))?,
            None => None,
        };
        return Ok(Resolution::Row(Box::new(Resolved {
            run,
            agent,
            workspace,
            connection,
            org_id: org_id.to_string(),
        })));
    }
    let channel_key = parts.conversation.and_then(|c| c.channel_key);
    let (placement, connection) = placement_of(st, org_id, &agent).await?;
    let scope = agent.scope;
    let owner = scope::owner(scope, &run, &agent.id, channel_key.as_deref())?;
    let owner_label = match (&owner.user_id, &owner.sender) {
        (Some(user_id), _) => runs::email_of(st, user_id).await?,
        (None, sender) => sender.clone(),
    };
    let connection_id = connection.as_ref().map(|c| c.id.as_str());
    let session_key = key::session_key(placement, scope, org_id, connection_id, owner.key_subject(&agent.id));
    let backend = placement.as_str();
    let new = NewWorkspace {
        session_key: &session_key,
        backend,
        scope,
        connection_id,
        agent_id: &agent.id,
        conversation_id: run
            .conversation_id
            .as_deref()
            .filter(|_| matches!(scope, Scope::Conversation | Scope::Channel)),
        run_id: Some(run.id.as_str()).filter(|_| scope == Scope::Run),
        user_id: owner.user_id.as_deref(),
        owner_label: owner_label.as_deref(),
        channel_key: channel_key.as_deref().filter(|_| scope == Scope::Channel),
    };
    let mut c = st.db.conn().await?;
    let workspace = if create {
        store::upsert(&mut c, org_id, &new, db::now_ms()).await?
    } else {
        store::by_key(&mut c, org_id, &session_key).await?
    };
    Ok(match workspace {
        Some(workspace) => {
            Resolution::Row(Box::new(Resolved { run, agent, workspace, connection, org_id: org_id.to_string() }))
        }
        None if !create => Resolution::NoRowYet { scope, backend },
        None => return Err(WorkspaceError::Internal(anyhow::anyhow!("workspace row vanished"))),
    })
}

/// The workspace a `session_state` bound the run to (instead of its scope's), if any; one deleted
/// since is refused.
async fn bound_workspace(st: &AppState, org_id: &str, run_id: &str) -> Result<Option<Workspace>> {
    let Some(id) = snapshots::bound_workspace(st, run_id).await? else { return Ok(None) };
    let mut c = st.db.conn().await?;
    match store::get(&mut c, org_id, &id).await? {
        Some(w) => Ok(Some(w)),
        None => Err(WorkspaceError::NotFound("The workspace this run continues was deleted.".into())),
    }
}

/// A workspace row of the organization.
pub async fn row(st: &AppState, org_id: &str, id: &str) -> Result<Option<Workspace>> {
    let mut c = st.db.conn().await?;
    Ok(store::get(&mut c, org_id, id).await?)
}

/// Where the agent's files live, and on which connection: a service agent's on its connection's
/// kind of host.
async fn placement_of(st: &AppState, org_id: &str, agent: &Agent) -> Result<(Placement, Option<Connection>)> {
    match agent.backend {
        Backend::State => Ok((Placement::State, None)),
        Backend::Service => {
            let conn = match &agent.connection_id {
                Some(id) => connections::for_org(st, org_id, id).await,
                None => connections::default_for_org(st, org_id).await,
            };
            let conn = conn.map_err(|e| WorkspaceError::Internal(e.into()))?.ok_or_else(|| {
                WorkspaceError::Refused(
                    "This agent needs a sandbox host, but the organization has no connection. Register one under Sandboxes.".into(),
                )
            })?;
            // A switched-off connection is refused where new work starts (opening), not here:
            // finishing a run must still reach it (off stops new work, not the bill).
            Ok((Placement::Host(conn.kind), Some(conn)))
        }
    }
}

/// The run's workspace behind the recording wrapper: the only way an operation reaches a backend.
pub(super) fn workspace(st: &AppState, r: Resolved) -> Result<Recorded<'_, dyn WorkspaceBackend + '_>> {
    let keys = RowKeys::of(&r);
    Ok(Recorded::new(&st.recorder, keys, backends::backend(st, r)?))
}

/// The run's workspace, unless the run is finished (then nothing reaches a host, and nothing is
/// recorded against it).
async fn open<'a>(st: &'a AppState, caller: &Caller, run_id: &str) -> Result<Recorded<'a, dyn WorkspaceBackend + 'a>> {
    let r = resolve(st, caller, run_id).await?;
    refuse_if_finished(&r.run)?;
    workspace(st, r)
}

fn path(raw: &str) -> Result<WorkspacePath> {
    paths::normalise(raw).map_err(WorkspaceError::BadPath)
}

/// The `path` of an operation that needs one (write, mkdir, remove): an empty or blank one is a
/// field error (422), like every other missing field.
fn required(raw: &str, message: &str) -> Result<()> {
    if raw.trim().is_empty() {
        return Err(WorkspaceError::Invalid(FieldErrors::one("path", message)));
    }
    Ok(())
}

/// A path that must name something below the root.
fn below_root(raw: &str, refusal: &str) -> Result<WorkspacePath> {
    let p = path(raw)?;
    if p.is_root() {
        return Err(WorkspaceError::BadPath(refusal.into()));
    }
    Ok(p)
}

// ---------------------------------------------------------------------------------------------
// The operations: the path or command is checked before the run is resolved, so a refusal never
// reaches a host.

pub async fn read(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<Vec<u8>> {
    let p = path(raw)?;
    open(st, caller, run_id).await?.read(&p).await
}

pub async fn write(st: &AppState, caller: &Caller, run_id: &str, raw: &str, bytes: &[u8]) -> Result<()> {
    required(raw, "Name the file to write.")?;
    let p = below_root(raw, "Name a file to write, not the workspace root.")?;
    open(st, caller, run_id).await?.write(&p, bytes).await
}

pub async fn ls(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<Vec<Entry>> {
    let p = path(raw)?;
    open(st, caller, run_id).await?.ls(&p).await
}

pub async fn mkdir(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<()> {
    required(raw, "Name the folder to make.")?;
    let p = below_root(raw, "“path” names the workspace root, which exists: name a folder below it.")?;
    open(st, caller, run_id).await?.mkdir(&p).await
}

pub async fn remove(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<()> {
    required(raw, "Name the file or folder to remove.")?;
    let p = below_root(raw, "The workspace root cannot be removed.")?;
    open(st, caller, run_id).await?.remove(&p).await
}

/// A question, not an operation: not recorded.
pub async fn stat(st: &AppState, caller: &Caller, run_id: &str, raw: &str) -> Result<Entry> {
    let p = path(raw)?;
    open(st, caller, run_id).await?.stat(&p).await
}

pub async fn exec(st: &AppState, caller: &Caller, run_id: &str, input: ExecInput) -> Result<ExecResult> {
    let command = Command::parse(input)?;
    open(st, caller, run_id).await?.exec(&command).await
}

// ---------------------------------------------------------------------------------------------
// What people and runtimes ask about a run's workspace, and its end

/// The workspace's state for this run, from our rows only (never a host call): `finished` for a
/// finished run; `lost` only to the run that met the loss (any other run opens fresh).
pub async fn state(st: &AppState, caller: &Caller, run_id: &str) -> Result<(Resolved, WorkspaceState)> {
    ensure_caller(caller)?;
    // Read fresh: this is what people and runtimes check, not a hot path.
    let r = resolve_in(st, &caller.org_id, run_id).await?;
    let w = &r.workspace;
    let s = if is_finished(&r.run) {
        WorkspaceState::Finished
    } else if w.lost_run_id.as_deref() == Some(run_id) {
        WorkspaceState::Lost
    } else if w.state == WorkspaceState::Lost {
        WorkspaceState::NotOpened
    } else {
        w.state
    };
    Ok((r, s))
}

/// The workspace of a run of a conversation the caller may see (a member of it, docs/design.md §9 —
/// checked by whoever calls this), or why the run gets none. From our rows only, never a host
/// call; confined to the caller's organization.
pub async fn of_visible_run(st: &AppState, caller: &Caller, run_id: &str) -> Result<RunWorkspace> {
    match resolve_or_plan(st, &caller.org_id, run_id, false).await {
        Ok(Resolution::Row(r)) => Ok(RunWorkspace::Known(Box::new(r.workspace))),
        Ok(Resolution::NoRowYet { scope, backend }) => Ok(RunWorkspace::NotYet { scope, backend: backend.to_string() }),
        Err(e @ WorkspaceError::Internal(_)) => Err(e),
        Err(e) => Ok(RunWorkspace::Refused(e)),
    }
}

/// The runtime a run resolves to and its briefing paragraph (none for an alias the catalog does
/// not ship, and none for a document workspace).
pub async fn briefing(st: &AppState, caller: &Caller, run_id: &str) -> Result<(Option<String>, Option<String>)> {
    let r = resolve(st, caller, run_id).await?;
    refuse_if_finished(&r.run)?;
    if r.agent.backend == Backend::State {
        return Ok((None, None));
    }
    let runtime = r.runtime().unwrap_or_else(|| st.catalog.default_runtime().alias.clone());
    let text = st.catalog.briefing(&runtime);
    Ok((Some(runtime), text))
}

/// Ends a run: it is marked finished first (from then on its workspace routes refuse and reach no
/// host), its operations are committed, a `run`-scoped workspace is emptied (its session purged),
/// and a loss it met is forgotten so the next turn starts fresh. Finishing again changes nothing
/// and asks no host. A purge that fails (a host down, a credential gone) leaves a tombstone for the
/// `sandbox-destroy-retry` sweep (the workspace forgets the session in the same transaction): the run is
/// finished either way.
pub async fn finish(st: &AppState, caller: &Caller, run_id: &str) -> Result<(Run, Option<String>)> {
    ensure_caller(caller)?;
    let run = runs::get_in_org(st, &caller.org_id, run_id)
        .await?
        .ok_or_else(|| WorkspaceError::NotFound("There is no such run.".into()))?;
    if is_finished(&run) {
        let workspace_id = resolve_in(st, &caller.org_id, run_id).await.ok().map(|r| r.workspace.id);
        return Ok((run, workspace_id));
    }
    let mut ended = None;
    let mut finished = runs::finish_in_org(st, &caller.org_id, run_id).await?.unwrap_or(run);
    st.resolve_cache.forget_run(&caller.org_id, run_id);
    // Every operation of the run was committed before it was answered; one still in flight is waited for.
    st.recorder.flush_all().await;
    match resolve_in(st, &caller.org_id, run_id).await {
        Ok(r) => {
            let workspace_id = r.workspace.id.clone();
            ended = Some(workspace_id.clone());
            // A snapshot, when the agent says so, before a run-scoped session is purged.
            snapshots::at_finish(st, &r).await;
            match end_of_run(st, r, run_id).await {
                Ok(None) => {}
                Ok(Some(rec)) => {
                    tracing::warn!(event = "run_state_recovered", run_id, workspace_id = %workspace_id,
                        copy_id = %rec.copy_id, "a finished run's files are kept in a recovery copy");
                    let now = runs::set_workspace_error(st, &caller.org_id, run_id, &rec.error, &rec.copy_id).await?;
                    finished = now.unwrap_or(finished);
                }
                Err(e) => {
                    tracing::warn!(event = "run_end_incomplete", run_id, workspace_id = %workspace_id, error = %e,
                        "a finished run's workspace could not be cleaned up");
                }
            }
        }
        Err(WorkspaceError::Internal(e)) => return Err(WorkspaceError::Internal(e)),
        // A run whose workspace cannot be resolved (its agent or connection gone) has nothing to end.
        Err(_) => {}
    }
    Ok((finished, ended))
}

/// A finished run's session that could not be purged: its workspace forgets it and a tombstone
/// keeps it, in one transaction, due at once: the next sweep retries it.
async fn purge_later(
    st: &AppState,
    org_id: &str,
    workspace_id: &str,
    connection_id: &str,
    session_id: &str,
) -> Result<()> {
    let now = db::now_ms();
    let mut tx = st.db.begin().await?;
    let key = store::get(&mut tx, org_id, workspace_id).await?.map(|w| w.session_key).unwrap_or_default();
    let removed = Removed { connection_id, session_key: &key, session_id, reason: Reason::RunFinished };
    tombstones::record_in(&mut tx, org_id, &removed, now).await.map_err(|e| WorkspaceError::Internal(e.into()))?;
    store::forget_ref(&mut tx, workspace_id, now).await?;
    tx.commit().await.map_err(db::DbError::from)?;
    st.resolve_cache.forget_workspace(workspace_id);
    Ok(())
}

/// Ends the run's use of its workspace; what finishing could not merge into a shared `state`
/// workspace, kept in a recovery copy.
async fn end_of_run(st: &AppState, r: Resolved, run_id: &str) -> Result<Option<Recovered>> {
    st.resolve_cache.forget_workspace(&r.workspace.id);
    if r.agent.backend == Backend::State && r.workspace.scope != Scope::Run {
        return merge_at_finish(st, &r).await;
    }
    let org_id = r.org_id.clone();
    let w = &r.workspace;
    let met_loss = w.lost_run_id.as_deref() == Some(run_id);
    let is_lost_by_this_run = met_loss && w.state == WorkspaceState::Lost;
    let is_spent = !is_lost_by_this_run && r.agent.scope == Scope::Run && w.state != WorkspaceState::NotOpened;
    let workspace_id = w.id.clone();
    let (connection_id, session_id) = (w.connection_id.clone(), w.session_ref.clone());
    if is_spent {
        if let Err(e) = async { workspace(st, r)?.finish().await }.await {
            // The purge failed (a host down, a key gone): the row forgets the session and, in the
            // same transaction, a tombstone keeps it for the sandbox-destroy-retry sweep.
            tracing::warn!(event = "run_purge_failed", run_id, workspace_id = %workspace_id, error = %e,
                "purging a finished run's session failed; the sweep retries it");
            if let (Some(connection_id), Some(session_id)) = (connection_id, session_id) {
                return purge_later(st, &org_id, &workspace_id, &connection_id, &session_id).await.map(|()| None);
            }
        }
    }
    let mut c = st.db.conn().await?;
    if is_lost_by_this_run || is_spent {
        store::forget_ref(&mut c, &workspace_id, db::now_ms()).await?;
    } else if met_loss {
        // Another run opened the workspace fresh meanwhile: only the mark goes.
        store::clear_lost_run(&mut c, &workspace_id, run_id, db::now_ms()).await?;
    }
    Ok(None)
}
