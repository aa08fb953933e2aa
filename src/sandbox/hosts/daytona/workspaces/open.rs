//! Opening a Daytona sandbox on the run's first operation, by name (the session key):
//!
//! ```text
//! GET /sandbox/{key} ──404──▶ POST /sandbox {name: key, labels, …} ──409 (another replica won)──▶ GET again
//!        │ stopped / archived ──▶ POST /sandbox/{id}/start (Daytona holds it up to 30 s; no
//!        │                        answer in time is not a failure: the polling goes on)
//!        │ error, recoverable ──▶ POST /sandbox/{id}/recover, once
//!        ▼
//! wait for `started` (up to 10 minutes; the workspace reads `preparing` while Daytona builds)
//! error / build_failed / destroyed ──▶ a clear error naming the state and Daytona's reason, and
//!                                       how to start the workspace fresh
//! ```
//! A sandbox this workspace had (its id is kept) that Daytona no longer has means its files are
//! gone: the workspace is lost, as with sandboxd. One opener per workspace in this process; other
//! processes meet on the name (409).

use std::time::{Duration, Instant};

use super::files::host_error;
use super::known::KnownSandboxes;
use super::root::{self, Rooted};
use super::{labels, DaytonaBackend};
use crate::db;
use crate::sandbox::hosts::daytona::client::{CreateSandbox, DaytonaClient, DaytonaError, Sandbox, SandboxState};
use crate::sandbox::hosts::error::OPEN_WAIT_WHILE_BUILDING;
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::{Resolved, WorkspaceState};
use crate::sandbox::workspaces::opening::{self, Begun};
use crate::sandbox::workspaces::store;
use crate::vocabulary::scope::Scope;

/// Minutes without activity before Daytona stops a sandbox.
pub const AUTO_STOP_MINUTES: i64 = 15;

/// Minutes a sandbox stays stopped before Daytona archives it: a stopped sandbox's disk counts
/// against the organization's storage quota, an archived one's does not (it takes longer to
/// start again).
pub const AUTO_ARCHIVE_MINUTES: i64 = 24 * 60;

/// Minutes a run's sandbox may stay stopped before Daytona deletes it: a backstop only (our
/// finish, the destroy sweep and the orphan purge delete it first). Never 0, which deletes a
/// sandbox when it stops: an idle run (auto-stopped) would lose its files.
pub const RUN_AUTO_DELETE_MINUTES: i64 = 7 * 24 * 60;

/// A runtime written `image:<reference>` is built from that image; anything else names a snapshot.
pub const IMAGE_PREFIX: &str = "image:";

/// The toolbox of the sandbox this run already opened.
fn open_toolbox(known: &KnownSandboxes, r: &Resolved, client: &DaytonaClient) -> Option<Rooted> {
    if !opening::is_open_for_run(r) {
        return None;
    }
    known_toolbox(known, client, r.workspace.session_ref.as_deref()?)
}

/// The toolbox of a sandbox whose proxy URL and root this console keeps (no API call).
fn known_toolbox(known: &KnownSandboxes, client: &DaytonaClient, sandbox_id: &str) -> Option<Rooted> {
    let proxy = known.toolbox_proxy(sandbox_id)?;
    root::cached(known, &client.toolbox_at(&proxy, sandbox_id).ok()?, sandbox_id)
}

impl DaytonaBackend<'_> {
    /// The sandbox's toolbox, opened (found or created, started) on the run's first operation.
    pub(super) async fn ensure_open(&mut self) -> Result<Rooted> {
        let client = self.client().await?;
        let known = &self.st.daytona_sandboxes;
        let _one_opener = match opening::begin(self.st, &mut self.r, |r| open_toolbox(known, r, &client)).await? {
            Begun::Open(tb) => return Ok(tb),
            Begun::Opening(one_opener) => one_opener,
        };
        let came_from = self.r.workspace.state;
        opening::claim(self.st, &self.r).await?;
        match self.open_on_daytona(&client).await {
            Ok((sandbox, tb)) => {
                self.st.open_hold.at_host_opened(&self.r.workspace.session_key).await;
                self.mark_open(&sandbox, tb).await
            }
            Err(WorkspaceError::Lost) => {
                self.mark_lost().await?;
                Err(WorkspaceError::Lost)
            }
            Err(e) => {
                let back =
                    if came_from == WorkspaceState::Open { WorkspaceState::Open } else { WorkspaceState::NotOpened };
                let mut c = self.st.db.conn().await?;
                store::set_state(&mut c, &self.r.workspace.id, back, db::now_ms()).await?;
                Err(e)
            }
        }
    }

    /// What a create asks for: the name, our labels, the runtime, and the lifecycle of the scope.
    fn create_request(&self) -> CreateSandbox {
        let run_scoped = self.r.workspace.scope == Scope::Run;
        let runtime = self.r.runtime();
        let (image, snapshot) = match runtime.as_deref() {
            Some(r) => match r.strip_prefix(IMAGE_PREFIX) {
                Some(image) => (Some(image.to_string()), None),
                None => (None, Some(r.to_string())),
            },
            None => (None, None),
        };
        let mut tags = labels::of(self.st, &self.r);
        tags.insert(labels::ROOT.to_string(), labels::ROOT_WORKSPACE.to_string());
        let request = CreateSandbox {
            name: Some(self.r.workspace.session_key.clone()),
            labels: tags,
            auto_stop_interval: Some(AUTO_STOP_MINUTES),
            auto_archive_interval: Some(AUTO_ARCHIVE_MINUTES),
            // Run scope: a week stopped, as a backstop (our finish deletes it first); persistent
            // scopes: never deleted by Daytona (our deletes do it).
            auto_delete_interval: Some(if run_scoped { RUN_AUTO_DELETE_MINUTES } else { -1 }),
            ..CreateSandbox::default()
        };
        match (image, snapshot) {
            (Some(image), _) => request.with_runtime(Some(&image), true),
            (None, snapshot) => request.with_runtime(snapshot.as_deref(), false),
        }
    }

    /// Finds the sandbox by name or creates it, waits until it runs, and makes its workspace
    /// folder (`<home>/workspace`; an existing one is fine).
    async fn open_on_daytona(&self, client: &DaytonaClient) -> Result<(Sandbox, Rooted)> {
        let key = &self.r.workspace.session_key;
        let had_one = self.r.workspace.session_ref.is_some();
        let sandbox = match client.get_sandbox(key).await {
            Ok(s) => s,
            Err(DaytonaError::NotFound { .. }) if had_one => return Err(WorkspaceError::Lost),
            Err(DaytonaError::NotFound { .. }) => match client.create_sandbox(&self.create_request()).await {
                Ok(s) => s,
                // Another replica or request created it first: that one is ours too.
                Err(DaytonaError::Conflict { .. }) => client.get_sandbox(key).await.map_err(host_error)?,
                // The sandbox exists but could not start: read its state and reason.
                Err(DaytonaError::Invalid { message, .. }) if message.starts_with("Sandbox failed to start") => {
                    client.get_sandbox(key).await.map_err(host_error)?
                }
                Err(e) => return Err(create_error(e)),
            },
            Err(e) => return Err(host_error(e)),
        };
        let sandbox = self.wait_started(client, sandbox).await?;
        let tb = client.toolbox(&sandbox).await.map_err(host_error)?;
        let tb = root::of(&self.st.daytona_sandboxes, tb, &sandbox).await.map_err(host_error)?;
        if tb.is_workspace_folder() {
            tb.toolbox().create_folder(tb.root()).await.map_err(super::files::file_error)?;
        }
        Ok((sandbox, tb))
    }

    /// Polls until `started` (starting a stopped or archived one), up to 10 minutes; the workspace
    /// reads `preparing` while Daytona builds or the wait passes a second.
    async fn wait_started(&self, client: &DaytonaClient, mut sandbox: Sandbox) -> Result<Sandbox> {
        let began = Instant::now();
        let mut pause = Duration::from_millis(50);
        let mut preparing = false;
        let mut recovered = false;
        loop {
            let state = sandbox.state();
            if state == SandboxState::Started {
                return Ok(sandbox);
            }
            if state == SandboxState::Error && sandbox.recoverable == Some(true) && !recovered {
                recovered = true;
                tracing::info!(event = "daytona_recover", sandbox_id = %sandbox.id,
                    reason = sandbox.error_reason.as_deref().unwrap_or(""), "recovering an errored Daytona sandbox");
                match client.recover_sandbox(&sandbox.id).await {
                    Ok(s) => sandbox = s,
                    // Not recoverable after all, or no answer in time: the polling reads what it is.
                    Err(DaytonaError::Invalid { .. } | DaytonaError::Timeout | DaytonaError::Conflict { .. }) => {
                        sandbox = client.get_sandbox(&sandbox.id).await.map_err(host_error)?;
                    }
                    Err(e) => return Err(host_error(e)),
                }
                continue;
            }
            if state.is_failed() {
                return Err(failed_state(&sandbox));
            }
            if state.needs_start() {
                match client.start_sandbox(&sandbox.id).await {
                    Ok(s) => sandbox = s,
                    // Daytona held the start longer than we waited, or another start is under
                    // way: the polling below sees it through.
                    Err(DaytonaError::Conflict { .. } | DaytonaError::Timeout) => {}
                    Err(e) => return Err(host_error(e)),
                }
                if sandbox.state() != state {
                    continue;
                }
            }
            if !preparing && (state.is_building() || began.elapsed() > Duration::from_secs(1)) {
                let mut c = self.st.db.conn().await?;
                store::set_state(&mut c, &self.r.workspace.id, WorkspaceState::Preparing, db::now_ms()).await?;
                preparing = true;
            }
            if began.elapsed() > OPEN_WAIT_WHILE_BUILDING {
                return Err(WorkspaceError::Refused(format!(
                    "The Daytona sandbox did not start within {} minutes (it is {}).",
                    OPEN_WAIT_WHILE_BUILDING.as_secs() / 60,
                    state.as_str()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
            sandbox = match client.get_sandbox(&sandbox.id).await {
                Ok(s) => s,
                Err(DaytonaError::NotFound { .. }) => {
                    return Err(failed_state(&Sandbox { state: Some(SandboxState::Destroyed), ..sandbox }))
                }
                Err(e) => return Err(host_error(e)),
            };
        }
    }

    /// Writes a snapshot (the run's, or a gone sandbox's latest) or else, for a new workspace,
    /// the manifest's files, then the skills (every run); then records the sandbox as open for
    /// this run and notes on the run what its workspace started from.
    async fn mark_open(&mut self, sandbox: &Sandbox, tb: Rooted) -> Result<Rooted> {
        if let Some(proxy) = &sandbox.toolbox_proxy_url {
            self.st.daytona_sandboxes.keep_toolbox_proxy(&sandbox.id, proxy);
        }
        let is_new_workspace = self.r.workspace.session_ref.is_none();
        // Opened again mid-run (it stopped meanwhile, same sandbox): the run's files are there.
        let again = self.reopening && self.r.workspace.session_ref.as_deref() == Some(sandbox.id.as_str());
        if !again {
            opening::fill(self.st, &self.r, &tb, is_new_workspace, true).await?;
        }
        let runtime = self.r.runtime();
        opening::record_open(self.st, &mut self.r, &sandbox.id, runtime.as_deref()).await?;
        Ok(tb)
    }

    /// Daytona no longer has the sandbox: the workspace is lost, reported to this run only.
    async fn mark_lost(&mut self) -> Result<()> {
        opening::mark_lost(self.st, &mut self.r, "Daytona no longer has this workspace's sandbox").await
    }
}

/// A sandbox in a state no wait ends, named with Daytona's reason and the way out.
fn failed_state(s: &Sandbox) -> WorkspaceError {
    let reason = s.error_reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("Daytona gave no reason");
    WorkspaceError::Refused(format!(
        "The Daytona sandbox is in state “{}”: {reason}. Delete the workspace to start it fresh \
         (its files at Daytona go with it).",
        s.state().as_str()
    ))
}

/// A create Daytona refused (an unknown snapshot, a quota), in its words.
fn create_error(e: DaytonaError) -> WorkspaceError {
    match e {
        DaytonaError::Invalid { message, .. } => {
            WorkspaceError::Refused(format!("Daytona refused to create the sandbox: {message}"))
        }
        other => host_error(other),
    }
}
