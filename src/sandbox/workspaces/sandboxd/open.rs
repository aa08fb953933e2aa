//! Opening a sandboxd session: lazily, on the run's first operation, as a small state machine
//! over the workspace row (see [`SandboxdBackend::ensure_open`]).

use std::time::{Duration, Instant};

use super::{SandboxdBackend, Session};
use crate::agents::model::Agent;
use crate::agents::runs::service as runs;
use crate::db;
use crate::sandbox::client::{OpenSession, SandboxdClient, SandboxdError, OPEN_WAIT, OPEN_WAIT_WHILE_BUILDING};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::{Resolved, WorkspaceState};
use crate::sandbox::workspaces::paths;
use crate::sandbox::workspaces::store;

/// How a session is about to be opened.
struct Plan {
    /// The agent's runtime, else the connection's default; none: the host's default.
    runtime: Option<String>,
    /// The alias the host will run.
    alias: String,
    /// A runtime the host builds on first use may take minutes: opening waits up to 10 minutes.
    wait: Duration,
    /// No session was ever opened for this workspace: the manifest's files are written too.
    is_new_workspace: bool,
}

impl SandboxdBackend<'_> {
    /// The session, opened (or attached to) on the run's first operation and reused after. The
    /// workspace row moves through these states (`finish` does the last two):
    ///
    /// ```text
    /// not_opened ──open by name──────────────────────────────▶ open    later runs attach by its reference
    /// not_opened ──the host builds the runtime first──▶ preparing ──▶ open    (waits up to 10 minutes)
    /// open ──attaching finds no files──▶ lost                  reported, never silently replaced
    /// lost ──the run that found it lost ends──▶ not_opened     the next turn starts fresh
    /// open ──its run-scoped run ends──▶ not_opened             the session is purged
    /// ```
    /// A failed open goes back where it came from (`open` while a reference is kept, else
    /// `not_opened`); an older host that refuses to attach by reference makes the row forget the
    /// reference, so the next turn opens by name.
    pub(super) async fn ensure_open(&mut self) -> Result<Session> {
        self.refuse_if_switched_off()?;
        let client = self.client().await?;
        if let Some(session) = self.open_session(&client) {
            return Ok(session);
        }
        // One opener per workspace in this process; the others wait, then find it open.
        let lock = self.st.open_locks.get(&self.r.workspace.id);
        let _one_opener = lock.lock().await;
        self.reload().await?;
        if self.r.workspace.state == WorkspaceState::Lost {
            return Err(WorkspaceError::Lost);
        }
        if let Some(session) = self.open_session(&client) {
            return Ok(session);
        }
        let plan = self.prepare(&client).await?;
        match open_on_host(&client, &self.r, &plan).await {
            Ok(id) => self.mark_open(client, id, &plan).await,
            Err(e) => Err(self.fall_back(e).await?),
        }
    }

    /// A switched-off connection stops new work (finishing a run still reaches it).
    fn refuse_if_switched_off(&self) -> Result<()> {
        match self.r.connection.as_ref().filter(|c| !c.is_enabled) {
            Some(conn) => Err(WorkspaceError::Refused(format!(
                "The connection “{}” is switched off: no new work starts there.",
                conn.name
            ))),
            None => Ok(()),
        }
    }

    /// The session this run already opened, if it is open.
    fn open_session(&self, client: &SandboxdClient) -> Option<Session> {
        let w = &self.r.workspace;
        let is_open = self.r.run.workspace_opened && w.state == WorkspaceState::Open;
        let id = w.session_ref.clone().filter(|_| is_open)?;
        Some(Session { client: client.clone(), id })
    }

    /// Someone may have opened (or lost) the workspace while this request waited: read it again.
    async fn reload(&mut self) -> Result<()> {
        let gone = || WorkspaceError::NotFound("gone".into());
        let mut c = self.st.db.conn().await?;
        self.r.workspace = store::get(&mut c, &self.r.org_id, &self.r.workspace.id).await?.ok_or_else(gone)?;
        drop(c);
        self.r.run = runs::get_in_org(self.st, &self.r.org_id, &self.r.run.id).await?.ok_or_else(gone)?;
        Ok(())
    }

    /// Asks the host about the runtime; one it builds first makes the workspace `preparing`.
    async fn prepare(&self, client: &SandboxdClient) -> Result<Plan> {
        let runtime = self.r.runtime();
        let policy = client.policy().await?;
        let alias = runtime.clone().unwrap_or_else(|| policy.default_runtime.clone());
        let builds = policy.runtimes.iter().any(|p| p.alias == alias && p.builds);
        if builds {
            let mut c = self.st.db.conn().await?;
            store::set_state(&mut c, &self.r.workspace.id, WorkspaceState::Preparing, db::now_ms()).await?;
        }
        let wait = if builds { OPEN_WAIT_WHILE_BUILDING } else { OPEN_WAIT };
        Ok(Plan { runtime, alias, wait, is_new_workspace: self.r.workspace.session_ref.is_none() })
    }

    /// Writes the agent's files, then records the session as open for this run.
    async fn mark_open(&mut self, client: SandboxdClient, id: String, plan: &Plan) -> Result<Session> {
        // Skills (every run) and the manifest's files (a new workspace) land just before the operation.
        write_agent_files(&client, &id, &self.r.agent, plan.is_new_workspace).await?;
        let mut c = self.st.db.conn().await?;
        store::set_open(&mut c, &self.r.workspace.id, &id, Some(plan.alias.as_str()), db::now_ms()).await?;
        drop(c);
        runs::set_workspace_opened(self.st, &self.r.run.id, true).await?;
        self.r.run.workspace_opened = true;
        self.r.workspace.state = WorkspaceState::Open;
        self.r.workspace.session_ref = Some(id.clone());
        self.st.resolve_cache.put(&self.r);
        Ok(Session { client, id })
    }

    /// After a failed open: `lost` when the files are gone, the reference forgotten when an older
    /// host refused it, else the state it came from. Hands the error back.
    async fn fall_back(&mut self, e: WorkspaceError) -> Result<WorkspaceError> {
        let mut c = self.st.db.conn().await?;
        let (id, has_ref) = (&self.r.workspace.id, self.r.workspace.session_ref.is_some());
        match &e {
            WorkspaceError::Lost => {
                store::set_lost(&mut c, id, &self.r.run.id, db::now_ms()).await?;
                self.st.resolve_cache.forget_workspace(id);
                tracing::warn!(event = "workspace_lost", workspace_id = %id, "the host no longer has this workspace's files");
            }
            WorkspaceError::Host(SandboxdError::VersionMismatch { .. }) if has_ref => {
                store::forget_ref(&mut c, id, db::now_ms()).await?;
            }
            _ => {
                let back = if has_ref { WorkspaceState::Open } else { WorkspaceState::NotOpened };
                store::set_state(&mut c, id, back, db::now_ms()).await?;
            }
        }
        Ok(e)
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
                Err(WorkspaceError::Host(e))
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

async fn write_agent_files(client: &SandboxdClient, session_id: &str, agent: &Agent, manifest_too: bool) -> Result<()> {
    let skills = agent.skills.iter().map(|f| (format!("skills/{}", f.path), f));
    let manifest = agent.manifest_files.iter().filter(|_| manifest_too).map(|f| (f.path.clone(), f));
    for (path, f) in skills.chain(manifest) {
        let p = paths::normalise(&path).map_err(WorkspaceError::BadPath)?;
        if f.is_dir {
            client.mkdir(session_id, &p.absolute()).await?;
        } else {
            client.write_file(session_id, &p.absolute(), f.content.as_bytes()).await?;
        }
    }
    Ok(())
}
