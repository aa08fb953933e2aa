//! What opening a container workspace does alike on every backend (sandboxd, Daytona), before
//! it asks its host: a switched-off connection refuses new work, and the one opener of a workspace
//! in this process reads the workspace and the run again (another request may have opened, lost
//! or finished them while it waited), then either reports the loss this run met or starts fresh
//! after another run's; and right before it asks its host, it claims the session's name in the
//! database, so that no orphan purge (of any console or command line) destroys it meanwhile.

use super::backend::Result;
use super::claims;
use super::error::WorkspaceError;
use super::model::{is_finished, Resolved, WorkspaceState, FINISHED};
use super::store;
use crate::agents::runs::service as runs;
use crate::db;
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
