//! The `daytona` backend: the workspace is a Daytona sandbox named by its session key, so every
//! run of a scope finds the same one by name (`open.rs`). Files and commands go through the
//! sandbox's toolbox (`open_files.rs`); a snapshot is written into it as it opens (in bulk: `bulk.rs`); a
//! `run`-scoped sandbox is deleted at the run's end (Daytona deletes it a week after it stopped,
//! as a backstop); every sandbox auto-stops when idle, is kept awake while its run runs
//! (`keepalive.rs`), and is started again (restored when archived) by the next operation, in the
//! same run or the next. The workspace is the `workspace` folder under the sandbox user's home
//! (`root.rs`), so the home's dotfiles stay out of it. Documents and snapshots read its files
//! without a run (`stored.rs`).

mod bulk;
mod files;
pub mod keepalive;
pub mod known;
pub mod labels;
mod open;
mod open_files;
pub mod root;
pub mod stored;

use futures_util::future::BoxFuture;

use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::client::{DaytonaClient, DaytonaError};
use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::sandbox::workspaces::backend::Result;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::model::Resolved;
use crate::sandbox::workspaces::on_host::{HostWorkspace, OnOpen};
use crate::sandbox::workspaces::opening;
use crate::state::AppState;
use root::Rooted;

pub struct DaytonaBackend<'a> {
    st: &'a AppState,
    r: Resolved,
    /// Opening again a sandbox this run had open (it stopped meanwhile): its files are the run's
    /// already, so nothing (no snapshot, no manifest, no skills) is written into it again.
    reopening: bool,
}

impl<'a> DaytonaBackend<'a> {
    pub(crate) fn new(st: &'a AppState, r: Resolved) -> Self {
        DaytonaBackend { st, r, reopening: false }
    }

    async fn client(&self) -> Result<DaytonaClient> {
        let conn = opening::connection(&self.r)?;
        Ok(connections::daytona_client_for(self.st, &self.r.org_id, conn).await?)
    }
}

/// The most output of a command read from Daytona (stdout and stderr together): the platform's
/// host output limit. Past it the answer is `output_limited` with its first [`LIMITED_KEEP`]
/// bytes; the rest is read past, never held.
pub const OUTPUT_LIMIT: usize = 10 * 1024 * 1024;

/// What an `output_limited` answer keeps, as a sandboxd host does.
pub const LIMITED_KEEP: usize = 64 * 1024;

impl HostWorkspace for DaytonaBackend<'_> {
    type Open = Rooted;

    /// Runs `op` on the open sandbox. A toolbox that says the sandbox is not running (stopped,
    /// archived or deleted meanwhile: Daytona's auto-stop and auto-archive; see
    /// [`DaytonaError::NotRunning`]) gets the sandbox opened again — found by name, started or
    /// restored and waited for, or the workspace lost when Daytona no longer has it — and `op`
    /// tried once more. The request never reached the sandbox, so a command is not run twice.
    fn on_open<'a, T: Send + 'a>(&'a mut self, op: OnOpen<'a, Rooted, T>) -> BoxFuture<'a, Result<T>> {
        Box::pin(async move {
            let tb = self.ensure_open().await?;
            match op(tb).await {
                Err(WorkspaceError::Host(HostError::Refused {
                    why: Refusal::NotRunning | Refusal::Conflict,
                    detail,
                    ..
                })) => {
                    tracing::info!(event = "daytona_reopen", workspace_id = %self.r.workspace.id, reason = %detail,
                        "the Daytona sandbox is not running: opening it again");
                    opening::not_opened_for_this_run(self.st, &mut self.r).await?;
                    self.reopening = true;
                    let tb = self.ensure_open().await;
                    self.reopening = false;
                    op(tb?).await
                }
                other => other,
            }
        })
    }

    fn run(&self) -> (&AppState, &Resolved) {
        (self.st, &self.r)
    }

    /// Deletes the run's sandbox; one already gone is fine. A failure is the error (the caller
    /// leaves a tombstone for the sweep).
    fn finish(&mut self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let Some(id) = self.r.workspace.session_ref.clone() else { return Ok(()) };
            let client = self.client().await?;
            self.st.daytona_sandboxes.forget(&id);
            match client.delete_sandbox(&id).await {
                Ok(()) | Err(DaytonaError::NotFound { .. }) => Ok(()),
                Err(e) => Err(files::host_error(e)),
            }
        })
    }
}
