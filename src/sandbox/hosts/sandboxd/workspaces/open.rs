//! Opening a sandboxd session: lazily, on the run's first operation, as a small state machine
//! over the workspace row (see [`SandboxdBackend::ensure_open`]).

use std::time::{Duration, Instant};

use super::{SandboxdBackend, Session};
use crate::db;
use crate::sandbox::hosts::error::{HostError, Protocol};
use crate::sandbox::hosts::sandboxd::client::{
    OpenSession, SandboxdClient, SandboxdError, OPEN_WAIT, OPEN_WAIT_WHILE_BUILDING,
};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::{Resolved, WorkspaceState};
use crate::sandbox::workspaces::opening::{self, Begun};
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
        let client = self.client().await?;
        let _one_opener = match opening::begin(self.st, &mut self.r, |r| open_session(r, &client)).await? {
            Begun::Open(session) => return Ok(session),
            Begun::Opening(one_opener) => one_opener,
        };
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

    /// Writes the agent's files (each recorded: a snapshot or else, for a new workspace, the
    /// manifest's files, then the skills; [`opening::fill`]), then records the session as open for
    /// this run. A runtime the catalog does not know is taken to have no network (the console
    /// fetches).
    async fn mark_open(&mut self, client: SandboxdClient, id: String, plan: &Plan) -> Result<Session> {
        let session = Session { client, id };
        let network = self.st.catalog.get(&plan.alias).is_some_and(|e| e.needs_network);
        opening::fill(self.st, &self.r, &session, plan.is_new_workspace, network).await?;
        opening::record_open(self.st, &mut self.r, &session.id, Some(plan.alias.as_str())).await?;
        Ok(session)
    }

    /// The host no longer has the files: the workspace is lost, reported to this run only.
    pub(super) async fn mark_lost(&mut self) -> Result<()> {
        opening::mark_lost(self.st, &mut self.r, "the host no longer has this workspace's files").await
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

/// The session this run already opened, if it is open.
fn open_session(r: &Resolved, client: &SandboxdClient) -> Option<Session> {
    let id = r.workspace.session_ref.clone().filter(|_| opening::is_open_for_run(r))?;
    Some(Session { client: client.clone(), id })
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
