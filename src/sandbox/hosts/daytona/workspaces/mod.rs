//! The `daytona` backend: the workspace is a Daytona sandbox named by its session key, so every
//! run of a scope finds the same one by name (`open.rs`). Files and commands go through the
//! sandbox's toolbox (`files.rs`); a snapshot is written into it as it opens (`restore.rs`); a
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
mod restore;
pub mod root;
pub mod stored;

use std::future::Future;

use futures_util::future::BoxFuture;

use crate::agents::runs::service as runs;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::client::{sh_command, DaytonaClient, DaytonaError, ExecuteRequest};
use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::sandbox::workspaces::backend::{Result, WorkspaceBackend};
use crate::sandbox::workspaces::command::Command;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::sandbox::workspaces::manifest;
use crate::sandbox::workspaces::model::{Entry, ExecResult, Resolved};
use crate::state::AppState;
use crate::vocabulary::paths::WorkspacePath;
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
        let conn =
            self.r.connection.as_ref().ok_or_else(|| WorkspaceError::Internal(anyhow::anyhow!("no connection")))?;
        Ok(connections::daytona_client_for(self.st, &self.r.org_id, conn).await?)
    }

    /// Runs `op` on the open sandbox. A toolbox that says the sandbox is not running (stopped,
    /// archived or deleted meanwhile: Daytona's auto-stop and auto-archive; see
    /// [`DaytonaError::NotRunning`]) gets the sandbox opened again — found by name, started or
    /// restored and waited for, or the workspace lost when Daytona no longer has it — and `op`
    /// tried once more. The request never reached the sandbox, so a command is not run twice.
    async fn on_sandbox<T, F, Fut>(&mut self, op: F) -> Result<T>
    where
        F: Fn(Rooted) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let tb = self.ensure_open().await?;
        match op(tb).await {
            Err(WorkspaceError::Host(HostError::Refused {
                why: Refusal::NotRunning | Refusal::Conflict,
                detail,
                ..
            })) => {
                tracing::info!(event = "daytona_reopen", workspace_id = %self.r.workspace.id, reason = %detail,
                    "the Daytona sandbox is not running: opening it again");
                self.not_opened_for_this_run().await?;
                self.reopening = true;
                let tb = self.ensure_open().await;
                self.reopening = false;
                op(tb?).await
            }
            other => other,
        }
    }

    /// The next operation of this run opens the sandbox again.
    async fn not_opened_for_this_run(&mut self) -> Result<()> {
        runs::set_workspace_opened(self.st, &self.r.run.id, false).await?;
        self.st.resolve_cache.forget_workspace(&self.r.workspace.id);
        self.r.run.workspace_opened = false;
        Ok(())
    }
}

/// The most output of a command read from Daytona (stdout and stderr together): the platform's
/// host output limit. Past it the answer is `output_limited` with its first [`LIMITED_KEEP`]
/// bytes; the rest is read past, never held.
pub const OUTPUT_LIMIT: usize = 10 * 1024 * 1024;

/// What an `output_limited` answer keeps, as a sandboxd host does.
pub const LIMITED_KEEP: usize = 64 * 1024;

/// The output a manifest's `git clone` may print before it is cut.
const CLONE_OUTPUT_LIMIT: usize = 1024 * 1024;

/// `process/execute` of `command` (as `sh -c`) in the workspace root, our deadline always sent: a 408 is a timed-out
/// result (Daytona kills the command and sends no output). Daytona returns stdout and stderr
/// together, in the order written: they come back as `stdout` (`stderr` empty), the answer
/// saying so (`output_combined`). Daytona lets the
/// command run to its end, so an `output_limited` answer keeps its exit code.
async fn execute(
    tb: &Rooted,
    command: &Command,
    envs: std::collections::BTreeMap<String, String>,
) -> Result<ExecResult> {
    let request = ExecuteRequest {
        command: sh_command(&command.host_argv()),
        cwd: tb.cwd(),
        envs,
        timeout: command.timeout.as_secs().max(1),
    };
    match tb.toolbox().execute(&request, OUTPUT_LIMIT).await {
        Ok(mut o) => {
            let exit = o.exit();
            if o.output_limited {
                let mut cut = LIMITED_KEEP.min(o.result.len());
                while !o.result.is_char_boundary(cut) {
                    cut -= 1;
                }
                o.result.truncate(cut);
            }
            Ok(ExecResult {
                output_combined: true,
                ..command.result(o.result, String::new(), exit, false, o.output_limited)
            })
        }
        Err(DaytonaError::RequestTimeout) => {
            Ok(ExecResult { output_combined: true, ..command.result(String::new(), String::new(), None, true, false) })
        }
        Err(e) => Err(files::host_error(e)),
    }
}

impl manifest::Target for Rooted {
    /// Commands start in the workspace root.
    fn command_path(&self, path: &WorkspacePath) -> String {
        if path.is_root() {
            ".".to_string()
        } else {
            format!("./{}", path.relative())
        }
    }
    fn mkdir<'a>(&'a self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::mkdir(self.clone(), path))
    }
    fn write<'a>(&'a self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(files::write(self.clone(), path, bytes))
    }
    fn clone_repo<'a>(&'a self, argv: &'a [String]) -> BoxFuture<'a, Result<std::result::Result<(), String>>> {
        Box::pin(async move {
            let request = ExecuteRequest {
                command: sh_command(argv),
                cwd: self.cwd(),
                envs: Default::default(),
                timeout: manifest::git::TIMEOUT.as_secs(),
            };
            match self.toolbox().execute(&request, CLONE_OUTPUT_LIMIT).await {
                Ok(o) if o.exit() == Some(0) => Ok(Ok(())),
                Ok(o) => {
                    let line = o.result.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no reason given");
                    Ok(Err(format!("exit {}: {}", o.exit().unwrap_or(-1), line.chars().take(300).collect::<String>())))
                }
                Err(DaytonaError::RequestTimeout) => Ok(Err("it timed out".into())),
                Err(e) => Err(files::host_error(e)),
            }
        })
    }
}

impl WorkspaceBackend for DaytonaBackend<'_> {
    fn read<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<u8>>> {
        Box::pin(self.on_sandbox(move |tb| files::read(tb, path)))
    }

    fn write<'a>(&'a mut self, path: &'a WorkspacePath, bytes: &'a [u8]) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_sandbox(move |tb| files::write(tb, path, bytes)))
    }

    fn ls<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Vec<Entry>>> {
        Box::pin(self.on_sandbox(move |tb| files::ls(tb, path)))
    }

    fn mkdir<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_sandbox(move |tb| files::mkdir(tb, path)))
    }

    fn remove<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.on_sandbox(move |tb| files::remove(tb, path)))
    }

    fn stat<'a>(&'a mut self, path: &'a WorkspacePath) -> BoxFuture<'a, Result<Entry>> {
        Box::pin(self.on_sandbox(move |tb| files::stat(tb, path)))
    }

    fn exec<'a>(&'a mut self, command: &'a Command) -> BoxFuture<'a, Result<ExecResult>> {
        Box::pin(async move {
            if !self.r.agent.shell_enabled {
                return Err(WorkspaceError::Refused(
                    "This agent's shell is switched off in its sandbox settings.".into(),
                ));
            }
            let base = manifest::env::resolve(self.st, &self.r).await?;
            let envs: std::collections::BTreeMap<String, String> =
                base.into_iter().chain(command.env.clone()).collect();
            let envs = &envs;
            self.on_sandbox(move |tb| async move { execute(&tb, command, envs.clone()).await }).await
        })
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
