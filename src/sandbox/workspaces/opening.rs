//! What opening a container workspace does alike on every backend (sandboxd, Daytona), before
//! it asks its host: a switched-off connection refuses new work, and the one opener of a workspace
//! in this process reads the workspace and the run again (another request may have opened, lost
//! or finished them while it waited), then either reports the loss this run met or starts fresh
//! after another run's; and right before it asks its host, it claims the session's name in the
//! database, so that no orphan purge (of any console or command line) destroys it meanwhile.

use tokio::sync::OwnedMutexGuard;

use super::backend::Result;
use super::claims;
use super::error::WorkspaceError;
use super::host_files::HostFiles;
use super::model::{is_finished, Resolved, WorkspaceState, FINISHED};
use super::{manifest, restoring, store};
use crate::agents::runs::service as runs;
use crate::db;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::snapshots::restore as snapshots;
use crate::state::AppState;

/// A switched-off connection stops new work (finishing a run still reaches it).
pub(crate) fn refuse_if_switched_off(r: &Resolved) -> Result<()> {
    match r.connection.as_ref().filter(|c| !c.is_enabled) {
        Some(conn) => Err(WorkspaceError::Refused(format!(
            "The connection “{}” is switched off: no new work starts there.",
            conn.name
        ))),
        None => Ok(()),
    }
}

/// Holding the workspace's open lock: `r` read again (a finished run opens nothing), `Lost` when
/// this run met the loss, and a workspace another run lost (and never finished) started fresh.
pub(crate) async fn reload_for_open(st: &AppState, r: &mut Resolved) -> Result<()> {
    reload(st, r).await?;
    if r.workspace.lost_run_id.as_deref() == Some(r.run.id.as_str()) {
        return Err(WorkspaceError::Lost);
    }
    if r.workspace.state == WorkspaceState::Lost {
        let mut c = st.db.conn().await?;
        store::start_fresh(&mut c, &r.workspace.id, db::now_ms()).await?;
        r.workspace.session_ref = None;
        r.workspace.state = WorkspaceState::NotOpened;
    }
    Ok(())
}

/// Reads the workspace and the run of `r` again; a finished run opens nothing.
async fn reload(st: &AppState, r: &mut Resolved) -> Result<()> {
    let gone = || WorkspaceError::NotFound("gone".into());
    let mut c = st.db.conn().await?;
    r.workspace = store::get(&mut c, &r.org_id, &r.workspace.id).await?.ok_or_else(gone)?;
    drop(c);
    r.run = runs::get_in_org(st, &r.org_id, &r.run.id).await?.ok_or_else(gone)?;
    if is_finished(&r.run) {
        return Err(WorkspaceError::Refused(FINISHED.into()));
    }
    Ok(())
}

/// Claims the session key of `r` for this open ([`claims::claim_open`]), right before the host
/// is asked: while an orphan purge of that name is under way, waits for it (up to
/// [`claims::OPEN_WAITS_FOR_PURGE`]), so the open finds the name free and starts fresh.
pub(crate) async fn claim(st: &AppState, r: &Resolved) -> Result<()> {
    if claims::claim_open_waiting(&st.db, &r.workspace.session_key, claims::OPEN_WAITS_FOR_PURGE).await? {
        return Ok(());
    }
    Err(WorkspaceError::Refused(
        "This workspace's host session is being deleted as an orphan right now; try again in a minute.".into(),
    ))
}

/// The workspace row of `r` names its session now: the open's claim on the name ends, so the rows
/// alone decide whose the session is (a destroy of a deleted row's session, or of one whose
/// reference was forgotten, need not wait for the claim to expire).
pub(crate) async fn opened(st: &AppState, r: &Resolved) -> Result<()> {
    claims::release_open(&st.db, &r.workspace.session_key).await?;
    Ok(())
}

/// The connection a container workspace lives on (resolved with it).
pub(crate) fn connection(r: &Resolved) -> Result<&Connection> {
    r.connection.as_ref().ok_or_else(|| WorkspaceError::Internal(anyhow::anyhow!("no connection")))
}

/// Where an open begins.
pub(crate) enum Begun<H> {
    /// This run has the workspace open already: its handle.
    Open(H),
    /// It is to be opened, holding the workspace's open lock (one opener in this process; the
    /// others wait, then find it open).
    Opening(OwnedMutexGuard<()>),
}

/// The start of every host kind's open: a switched-off connection refuses; `open_now` (the handle
/// of what this run has open, if any) is asked, and asked again holding the open lock once `r`
/// is read again ([`reload_for_open`]).
pub(crate) async fn begin<H>(
    st: &AppState,
    r: &mut Resolved,
    open_now: impl Fn(&Resolved) -> Option<H>,
) -> Result<Begun<H>> {
    refuse_if_switched_off(r)?;
    if let Some(h) = open_now(r) {
        return Ok(Begun::Open(h));
    }
    let one_opener = st.open_locks.get(&r.workspace.id).lock_owned().await;
    reload_for_open(st, r).await?;
    Ok(match open_now(r) {
        Some(h) => Begun::Open(h),
        None => Begun::Opening(one_opener),
    })
}

/// Whether this run has the workspace open (a reference kept, the row `open`).
pub(crate) fn is_open_for_run(r: &Resolved) -> bool {
    r.run.workspace_opened && r.workspace.state == WorkspaceState::Open
}

/// A freshly opened workspace gets a snapshot (the run's, or a gone one's latest) or else, when
/// new, the manifest's files; then the skills (every run); then the run's note of what its
/// workspace started from. `network`: the runtime may fetch (a manifest's repository is cloned in
/// the sandbox).
pub(crate) async fn fill(
    st: &AppState,
    r: &Resolved,
    to: &impl HostFiles,
    is_new_workspace: bool,
    network: bool,
) -> Result<()> {
    let from = snapshots::plan(st, r, is_new_workspace).await?;
    if let Some(s) = &from {
        restoring::write_snapshot(st, r, to, s, is_new_workspace).await?;
    }
    let with_manifest = is_new_workspace && from.is_none();
    manifest::materialise(st, r, to, with_manifest, network, manifest::WRITE_CONCURRENCY).await?;
    match &from {
        Some(s) => snapshots::note(st, r, &snapshots::restored_note(s)).await?,
        None if is_new_workspace && snapshots::had_files(r) => snapshots::note(st, r, snapshots::STARTED_EMPTY).await?,
        None => {}
    }
    Ok(())
}

/// Records the workspace open for this run on its host's `session_ref` (running `runtime`): the
/// row, the open's claim released, the run's flag, and the resolve cache.
pub(crate) async fn record_open(
    st: &AppState,
    r: &mut Resolved,
    session_ref: &str,
    runtime: Option<&str>,
) -> Result<()> {
    let mut c = st.db.conn().await?;
    let opened = store::Opened { session_ref, runtime, run_id: &r.run.id };
    store::set_open(&mut c, &r.workspace.id, &opened, db::now_ms()).await?;
    drop(c);
    self::opened(st, r).await?;
    runs::set_workspace_opened(st, &r.run.id, true).await?;
    r.run.workspace_opened = true;
    r.workspace.state = WorkspaceState::Open;
    r.workspace.session_ref = Some(session_ref.to_string());
    st.resolve_cache.put(r);
    Ok(())
}

/// The next operation of this run opens (attaches to) the workspace again.
pub(crate) async fn not_opened_for_this_run(st: &AppState, r: &mut Resolved) -> Result<()> {
    runs::set_workspace_opened(st, &r.run.id, false).await?;
    st.resolve_cache.forget_workspace(&r.workspace.id);
    r.run.workspace_opened = false;
    Ok(())
}

/// The host no longer has the workspace's files (`why`, logged): the workspace is lost, reported
/// to this run only.
pub(crate) async fn mark_lost(st: &AppState, r: &mut Resolved, why: &str) -> Result<()> {
    let id = r.workspace.id.clone();
    let mut c = st.db.conn().await?;
    store::set_lost(&mut c, &id, &r.run.id, db::now_ms()).await?;
    drop(c);
    tracing::warn!(event = "workspace_lost", workspace_id = %id, "{why}");
    not_opened_for_this_run(st, r).await?;
    r.workspace.state = WorkspaceState::Lost;
    r.workspace.lost_run_id = Some(r.run.id.clone());
    Ok(())
}
