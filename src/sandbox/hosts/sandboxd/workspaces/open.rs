//! Opening a sandboxd session: lazily, on the run's first operation, as a small state machine
//! over the workspace row (see [`SandboxdBackend::ensure_open`]).

use std::time::{Duration, Instant};

use super::{SandboxdBackend, Session};
use crate::agents::runs::service as runs;
use crate::db;
use crate::sandbox::hosts::error::{HostError, Protocol};
use crate::sandbox::hosts::sandboxd::client::{
    OpenSession, SandboxdClient, SandboxdError, OPEN_WAIT, OPEN_WAIT_WHILE_BUILDING,
};
use crate::sandbox::snapshots::restore as snapshots;
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::manifest;
use crate::sandbox::workspaces::model::{Resolved, WorkspaceState};
use crate::sandbox::workspaces::opening;
use crate::sandbox::workspaces::store;
use crate::state::AppState;

/// How long an open of a runtime the host builds may take before the workspace reads
/// `preparing`: an image already built opens well within it, so only a build that is really
/// pending is shown.
const PREPARING_AFTER: Duration = Duration::from_secs(1);

/// How a session is about to be opened.
struct Plan {
    /// The agent's runtime, else the connection's default; none: the host's default.
    runtime: Option<String>,
    /// The alias the host will run.
    alias: String,
    /// A runtime the host builds on first use may take minutes: opening waits up to 10 minutes.
    wait: Duration,
    /// Opening creates a sandbox whose runtime the host may have to build first.
    may_build: bool,
    /// No session was ever opened for this workspace: the manifest's files are written too.
    is_new_workspace: bool,
}

impl SandboxdBackend<'_> {
    /// The session, opened (or attached to) on the run's first operation and reused after. The
    /// workspace row moves through these states (`finish` does the last two):
    ///
    /// ```text
    /// not_opened ──open by name──────────────────────────────▶ open    later runs attach by its reference
    /// not_opened ──a runtime build still pending after 1 s──▶ preparing ──▶ open   (waits up to 10 minutes)
    /// open ──attaching finds no files, or the host says gone (410)──▶ lost   reported to this run, never replaced
    /// lost ──another run's first operation──▶ not_opened ──▶ open   that run starts fresh
    /// lost ──the run that found it lost ends──▶ not_opened     the next turn starts fresh
    /// open ──its run-scoped run ends──▶ not_opened             the session is purged
    /// ```
    /// Any failure after the open began (the open itself, the agent's files) goes back where it
    /// came from (`open` while a reference is kept, else `not_opened`), so `preparing` never
    /// outlives the attempt; an older host that refuses to attach by reference makes the row
    /// forget the reference, so the next turn opens by name. A finished run opens nothing.
    pub(super) async fn ensure_open(&mut self) -> Result<Session> {
        opening::refuse_if_switched_off(&self.r)?;
        let client = self.client().await?;
        if let Some(session) = self.open_session(&client) {
            return Ok(session);
        }
        // One opener per workspace in this process; the others wait, then find it open.
        let lock = self.st.open_locks.get(&self.r.workspace.id);
        let _one_opener = lock.lock().await;
        opening::reload_for_open(self.st, &mut self.r).await?;
        if let Some(session) = self.open_session(&client) {
            return Ok(session);
        }
        let plan = self.plan(&client).await?;
        opening::claim(self.st, &self.r).await?;
        let mut preparing = PreparingGuard { st: self.st, workspace_id: self.r.workspace.id.clone(), back: None };
        let opened = match self.open_watching_build(&client, &plan, &mut preparing).await {
            Ok(id) => {
                self.st.open_hold.at_host_opened(&self.r.workspace.session_key).await;
                self.mark_open(client, id, &plan).await
            }
            Err(e) => Err(e),
        };
        match opened {
            Ok(session) => {
                preparing.back = None;
                Ok(session)
            }
            Err(e) => {
                preparing.back = None;
                Err(self.fall_back(e).await?)
            }
        }
    }

    /// The session this run already opened, if it is open.
    fn open_session(&self, client: &SandboxdClient) -> Option<Session> {
        let w = &self.r.workspace;
        let is_open = self.r.run.workspace_opened && w.state == WorkspaceState::Open;
        let id = w.session_ref.clone().filter(|_| is_open)?;
        Some(Session { client: client.clone(), id })
    }

    /// Asks the host about the runtime.
    async fn plan(&self, client: &SandboxdClient) -> Result<Plan> {
        let runtime = self.r.runtime();
        let policy = client.policy().await?;
        let alias = runtime.clone().unwrap_or_else(|| policy.default_runtime.clone());
        let builds = policy.runtimes.iter().any(|p| p.alias == alias && p.builds);
        let is_new_workspace = self.r.workspace.session_ref.is_none();
        let wait = if builds { OPEN_WAIT_WHILE_BUILDING } else { OPEN_WAIT };
        // Attaching by reference starts the runtime already built for it.
        Ok(Plan { runtime, alias, wait, may_build: builds && is_new_workspace, is_new_workspace })
    }

    /// Opens on the host; an open that may build and is still pending after [`PREPARING_AFTER`]
    /// makes the workspace `preparing` (the guard puts it back should this request be dropped).
    async fn open_watching_build(
        &self,
        client: &SandboxdClient,
        plan: &Plan,
        preparing: &mut PreparingGuard<'_>,
    ) -> Result<String> {
        let open = open_on_host(client, &self.r, plan);
        if !plan.may_build {
            return open.await;
        }
        tokio::pin!(open);
        tokio::select! {
            opened = &mut open => return opened,
            () = tokio::time::sleep(PREPARING_AFTER) => {}
        }
        let mut c = self.st.db.conn().await?;
        store::set_state(&mut c, &self.r.workspace.id, WorkspaceState::Preparing, db::now_ms()).await?;
        drop(c);
        preparing.back = Some(WorkspaceState::NotOpened);
        open.await
    }

    /// Writes the agent's files (each recorded), then records the session as open for this run.
    async fn mark_open(&mut self, client: SandboxdClient, id: String, plan: &Plan) -> Result<Session> {
        // A snapshot (the run's, or a gone session's latest) or else the manifest's files (a new
        // workspace), then the skills (every run), land just before the operation.
        let from = snapshots::plan(self.st, &self.r, plan.is_new_workspace).await?;
        if let Some(s) = &from {
            let session = Session { client: client.clone(), id: id.clone() };
            crate::sandbox::workspaces::restoring::write_snapshot(self.st, &self.r, &session, s, plan.is_new_workspace)
                .await?;
        }
        self.write_agent_files(&client, &id, plan, plan.is_new_workspace && from.is_none()).await?;
        match &from {
            Some(s) => snapshots::note(self.st, &self.r, &snapshots::restored_note(s)).await?,
            None if plan.is_new_workspace && snapshots::had_files(&self.r) => {
                snapshots::note(self.st, &self.r, snapshots::STARTED_EMPTY).await?
            }
            None => {}
        }
        let mut c = self.st.db.conn().await?;
        let opened = store::Opened { session_ref: &id, runtime: Some(plan.alias.as_str()), run_id: &self.r.run.id };
        store::set_open(&mut c, &self.r.workspace.id, &opened, db::now_ms()).await?;
        drop(c);
        opening::opened(self.st, &self.r).await?;
        runs::set_workspace_opened(self.st, &self.r.run.id, true).await?;
        self.r.run.workspace_opened = true;
        self.r.workspace.state = WorkspaceState::Open;
        self.r.workspace.session_ref = Some(id.clone());
        self.st.resolve_cache.put(&self.r);
        Ok(Session { client, id })
    }

    /// Skills (every run) and, when `with_manifest` (a new workspace not started from a
    /// snapshot), the manifest, through [`manifest::materialise`], each write recorded (through
    /// the shell when the host hands it back, like any other write). `plan` names the runtime: a
    /// runtime the catalog does not know is taken to have no network (the console fetches).
    async fn write_agent_files(
        &self,
        client: &SandboxdClient,
        session_id: &str,
        plan: &Plan,
        with_manifest: bool,
    ) -> Result<()> {
        let session = Session { client: client.clone(), id: session_id.to_string() };
        let network = self.st.catalog.get(&plan.alias).is_some_and(|e| e.needs_network);
        manifest::materialise(self.st, &self.r, &session, with_manifest, network, manifest::WRITE_CONCURRENCY).await
    }

    /// The host no longer has the files: the workspace is lost, reported to this run only.
    pub(super) async fn mark_lost(&mut self) -> Result<()> {
        let id = &self.r.workspace.id;
        let mut c = self.st.db.conn().await?;
        store::set_lost(&mut c, id, &self.r.run.id, db::now_ms()).await?;
        drop(c);
        self.st.resolve_cache.forget_workspace(id);
        tracing::warn!(event = "workspace_lost", workspace_id = %id, "the host no longer has this workspace's files");
        runs::set_workspace_opened(self.st, &self.r.run.id, false).await?;
        self.r.run.workspace_opened = false;
        self.r.workspace.state = WorkspaceState::Lost;
        self.r.workspace.lost_run_id = Some(self.r.run.id.clone());
        Ok(())
    }

    /// After a failed open: `lost` when the files are gone, the reference forgotten when an older
    /// host refused it, else the state it came from. Hands the error back.
    async fn fall_back(&mut self, e: WorkspaceError) -> Result<WorkspaceError> {
        let (id, has_ref) = (self.r.workspace.id.clone(), self.r.workspace.session_ref.is_some());
        match &e {
            WorkspaceError::Lost => self.mark_lost().await?,
            WorkspaceError::Host(HostError::Protocol(Protocol::VersionMismatch { .. })) if has_ref => {
                let mut c = self.st.db.conn().await?;
                store::forget_ref(&mut c, &id, db::now_ms()).await?;
            }
            _ => {
                let back = if has_ref { WorkspaceState::Open } else { WorkspaceState::NotOpened };
                let mut c = self.st.db.conn().await?;
                store::set_state(&mut c, &id, back, db::now_ms()).await?;
            }
        }
        Ok(e)
    }
}

/// Puts a `preparing` workspace back when the request opening it is dropped midway (a client that
/// hung up): `preparing` never outlives the open it describes.
struct PreparingGuard<'a> {
    st: &'a AppState,
    workspace_id: String,
    /// Set while the row reads `preparing`: the state to put back.
    back: Option<WorkspaceState>,
}

impl Drop for PreparingGuard<'_> {
    fn drop(&mut self) {
        let Some(back) = self.back.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let pool = self.st.db.clone();
        let id = std::mem::take(&mut self.workspace_id);
        runtime.spawn(async move {
            if let Ok(mut c) = pool.conn().await {
                if let Err(e) = store::reset_preparing(&mut c, &id, back, db::now_ms()).await {
                    tracing::warn!(error = %e, workspace_id = %id, "could not reset a preparing workspace");
                }
            }
        });
    }
}

/// Attaches by the kept reference, or opens by the session key (waiting while another replica or
/// request opens the same name). Attaching that finds nothing means the files are gone.
async fn open_on_host(client: &SandboxdClient, r: &Resolved, plan: &Plan) -> Result<String> {
    let tenant = Some(r.org_id.clone());
    if let Some(reference) = &r.workspace.session_ref {
        let request =
            OpenSession { session_id: Some(reference.clone()), runtime: None, tenant, reuse: true, attach: true };
        return match client.open_session(&request, plan.wait).await {
            Ok(created) => Ok(created.session.session_id),
            Err(SandboxdError::NotFound { .. }) => Err(WorkspaceError::Lost),
            Err(e @ SandboxdError::VersionMismatch { .. }) => {
                tracing::warn!(event = "sandboxd_version_mismatch", address = %client.base(), "re-attaching by reference refused");
                Err(WorkspaceError::Host(e.into()))
            }
            Err(e) => Err(e.into()),
        };
    }
    let request = OpenSession {
        session_id: Some(r.workspace.session_key.clone()),
        runtime: plan.runtime.clone(),
        tenant,
        reuse: true,
        attach: false,
    };
    let started = Instant::now();
    let mut pause = Duration::from_millis(50);
    loop {
        match client.open_session(&request, plan.wait).await {
            Ok(created) => return Ok(created.session.session_id),
            Err(SandboxdError::Conflict { detail })
                if detail.starts_with("Session is opening") && started.elapsed() < plan.wait =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            Err(e) => return Err(e.into()),
        }
    }
}
