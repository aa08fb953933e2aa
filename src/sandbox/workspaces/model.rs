use serde::Serialize;

use super::error::WorkspaceError;
use crate::agents::model::{Agent, Run};
use crate::sandbox::connections::model::Connection;
use crate::vocabulary::scope::Scope;

/// What every workspace route of a finished run answers (409): nothing it asks reaches a host.
pub const FINISHED: &str = "This run is finished.";

/// Whether a run has ended (`POST /runs/{id}/finish`).
pub fn is_finished(run: &Run) -> bool {
    run.status == "finished"
}

/// Where a run's workspace stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceState {
    /// Nothing was opened yet: no host was asked.
    NotOpened,
    /// Opening waits on a runtime build ("The sandbox is being prepared").
    Preparing,
    /// Opened on its host (or, for `state`, written to): operations go straight to it.
    Open,
    /// The host no longer has this session's files; the next run starts fresh.
    Lost,
    /// Reported for a finished run (never stored): its workspace routes answer 409.
    Finished,
}

impl WorkspaceState {
    pub fn parse(s: &str) -> WorkspaceState {
        match s {
            "preparing" => WorkspaceState::Preparing,
            "open" => WorkspaceState::Open,
            "lost" => WorkspaceState::Lost,
            _ => WorkspaceState::NotOpened,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            WorkspaceState::NotOpened => "not_opened",
            WorkspaceState::Preparing => "preparing",
            WorkspaceState::Open => "open",
            WorkspaceState::Lost => "lost",
            WorkspaceState::Finished => "finished",
        }
    }
}

/// A workspace row.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Workspace {
    pub id: String,
    pub session_key: String,
    /// `sandboxd` or `state`.
    pub backend: String,
    pub scope: Scope,
    pub connection_id: Option<String>,
    pub agent_id: Option<String>,
    pub conversation_id: Option<String>,
    pub run_id: Option<String>,
    pub user_id: Option<String>,
    pub runtime: Option<String>,
    pub session_ref: Option<String>,
    pub state: WorkspaceState,
    pub lost_run_id: Option<String>,
    /// For a recovery copy (docs/design.md §11): the `state` workspace whose run's files it keeps.
    /// Listed as [`recovery_label`] of its source; deleted with it.
    pub recovery_of: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// How a recovery copy is named wherever it is listed: "recovery copy of …" and the source's name.
pub fn recovery_label(source_name: &str) -> String {
    format!("recovery copy of {source_name}")
}

/// A directory entry, for `ls` and `stat`.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Entry {
    /// The last part of the path (empty for the workspace root).
    pub name: String,
    /// Relative to the workspace root.
    pub path: String,
    /// Whether it is a folder.
    pub is_dir: bool,
    /// Bytes, for a file; null for a folder (or when the host does not say).
    pub size: Option<u64>,
    /// Present (true) for a symbolic link, listed but not followed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_link: bool,
}

/// What a command produced. `stdout` and `stderr` as text by default; with
/// `"output_encoding": "base64"`, `stdout_base64` and `stderr_base64` instead (the exact bytes).
/// The host stops a command whose combined output passes its fixed limit of 10 MiB
/// (`output_limited`), counted in the sandbox as the command writes — on the base64 text when
/// base64 was asked for, so about 7.5 MiB of bytes; only the first 64 KiB of each stream is kept
/// then.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ExecResult {
    /// UTF-8 (bytes that are not UTF-8 replaced); absent with base64 output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    /// Standard error, as `stdout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// None when the command did not finish (timed out, output limit).
    pub exit_code: Option<i32>,
    /// Stopped at its `timeout_seconds`.
    pub timed_out: bool,
    /// Stopped at the host's output limit (10 MiB together); the first 64 KiB of each stream kept.
    pub output_limited: bool,
    /// Standard output's bytes, base64 (standard alphabet, padded); only with base64 output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_base64: Option<String>,
    /// Standard error's bytes, as `stdout_base64`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_base64: Option<String>,
    /// Standard output and standard error arrived together, in the order written, all in
    /// `stdout` (`stderr` empty): the host does not keep them apart (a Daytona workspace, whose
    /// `process/execute` combines them). False when each stream is in its own field.
    pub output_combined: bool,
}

/// A run and the workspace it resolves to.
#[derive(Clone)]
pub struct Resolved {
    pub run: Run,
    pub agent: Agent,
    pub workspace: Workspace,
    pub connection: Option<Connection>,
    pub org_id: String,
}

impl Resolved {
    /// The runtime the workspace asks for: the agent's, else its connection's default; none for
    /// the host's own default (and for a document).
    pub fn runtime(&self) -> Option<String> {
        self.agent.runtime.clone().or_else(|| self.connection.as_ref().and_then(|c| c.default_runtime.clone()))
    }
}

/// The workspace a run resolves to, from our rows, or why the run gets none.
#[derive(Debug)]
pub enum RunWorkspace {
    Known(Box<Workspace>),
    /// Nothing asked for it yet, so it has no row (a page that looks creates none): it would be a
    /// `scope` workspace on `backend`, not opened.
    NotYet {
        scope: Scope,
        backend: String,
    },
    /// A scope it cannot have, a missing connection, …
    Refused(WorkspaceError),
}
