//! sandboxd's JSON shapes (`remote/wire.py`), as serde models.
//!
//! Responses ignore fields they do not know and default the ones an older or
//! newer host may leave out, as the Python models do; requests send only what
//! the contract names.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use reqwest::StatusCode;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::error::{Detail, SandboxdError};
use super::routes::{new_run_id, Route, WorkspaceOp};

// ---------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------

/// `GET /healthz`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServiceHealth {
    /// Always `"ok"`.
    pub status: String,
    /// Resident sandboxes.
    pub sessions: u64,
    /// The resident ceiling (`max_sessions`), if any.
    pub limit: Option<u64>,
    /// Open session records, resident and hibernated.
    pub open_sessions: u64,
    /// The open ceiling (`max_open_sessions`), if any.
    pub open_limit: Option<u64>,
    /// Allowed runtime aliases, sorted.
    pub runtimes: Vec<String>,
}

/// `GET /`: what the service is and which routes it serves.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServiceIndex {
    /// `"sandboxd"`.
    pub service: String,
    pub health: ServiceHealth,
    pub docs_url: Option<String>,
    pub openapi_url: Option<String>,
    /// `"/ui"` when the dashboard is enabled.
    pub ui_url: Option<String>,
    /// Sorted paths of every route but `/` (methods are not listed).
    pub endpoints: Vec<String>,
}

/// One allowed runtime and its effective ceilings.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct RuntimePolicy {
    pub alias: String,
    /// The image, or `"<base> + N package(s)"` for a built runtime.
    pub image: String,
    pub description: String,
    /// Whether the image is built from packages on first use.
    pub builds: bool,
    pub mem_limit: Option<String>,
    pub memswap_limit: Option<String>,
    pub cpus: Option<f64>,
    pub cpu_shares: Option<u64>,
    pub pids_limit: Option<u64>,
    pub network_mode: Option<String>,
    pub oci_runtime: Option<String>,
}

/// `GET /policy`: the live configuration.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServicePolicy {
    /// Sorted by alias.
    pub runtimes: Vec<RuntimePolicy>,
    pub default_runtime: String,
    pub max_sessions: Option<u64>,
    pub max_open_sessions: Option<u64>,
    pub max_sessions_per_tenant: Option<u64>,
    pub evict_idle_after: Option<u64>,
    pub mem_limit: Option<String>,
    pub memswap_limit: Option<String>,
    pub cpus: Option<f64>,
    pub cpu_shares: Option<u64>,
    pub pids_limit: Option<u64>,
    pub network_mode: Option<String>,
    pub oci_runtime: Option<String>,
    pub work_dir: String,
    pub idle_timeout: u64,
    /// Seconds; the ceiling of every command's deadline.
    pub execute_timeout: u64,
    pub max_read_bytes: u64,
    pub persist_containers: bool,
    pub sandbox_uid: Option<u64>,
    pub workspace_ttl: Option<u64>,
    pub container_ttl: Option<u64>,
    pub tmpfs_size: Option<String>,
    pub prewarm: bool,
    pub buildkit: bool,
    /// Reads, stat, realpath and list are served natively (`/files/*`).
    pub native_files: bool,
    /// Writes, mkdir and remove are served natively.
    pub native_writes: bool,
    pub native_realpath: bool,
}

/// A sandbox's resource use (`?usage=true`). Each figure may be unknown.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SessionUsage {
    pub memory_bytes: Option<u64>,
    pub memory_limit_bytes: Option<u64>,
    pub cpu_percent: Option<f64>,
    pub pids: Option<u64>,
}

/// Whether a session's sandbox is resident or put to sleep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    #[default]
    Running,
    Hibernated,
    /// A state this client does not know.
    #[serde(other)]
    Other,
}

/// One session record.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SessionInfo {
    pub session_id: String,
    /// Runtime alias.
    pub runtime: String,
    #[serde(default)]
    pub tenant: Option<String>,
    /// A hibernated session is never alive; a dead resident one is
    /// `alive: false, state: running`.
    pub alive: bool,
    #[serde(default)]
    pub state: SessionState,
    /// Epoch seconds.
    pub created_at: f64,
    /// Epoch seconds.
    pub last_activity: f64,
    pub idle_seconds: f64,
    /// Only with `usage = true`.
    #[serde(default)]
    pub usage: Option<SessionUsage>,
}

/// `POST /sessions`: the session and its own token.
#[derive(Clone, Deserialize)]
pub struct SessionCreated {
    pub session: SessionInfo,
    /// Works on this session's routes only; redacted in `Debug`.
    pub token: SecretString,
}

impl fmt::Debug for SessionCreated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCreated").field("session", &self.session).field("token", &"[REDACTED]").finish()
    }
}

/// `GET /sessions`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SessionList {
    /// In creation order, hibernated ones included.
    pub sessions: Vec<SessionInfo>,
    pub limit: Option<u64>,
    pub open_limit: Option<u64>,
    pub tenant_limit: Option<u64>,
}

/// What a logged operation was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EventOp {
    Run,
    Read,
    Write,
    Stat,
    Realpath,
    Ls,
    Mkdir,
    Remove,
    /// An operation this client does not know.
    #[serde(other)]
    Other,
}

/// One entry of a session's operation log (a 200-entry ring on the host).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SessionEvent {
    /// Per session, from 1, monotonic; a gap means entries fell off the ring.
    pub seq: u64,
    /// Epoch seconds.
    pub at: f64,
    pub op: EventOp,
    /// The argv joined shell-style, or the path; at most 200 chars + `…`.
    pub target: String,
    pub ok: bool,
    /// `exit N`, `timed out`, `output limit`, `sandbox gone`, `not found`,
    /// `via the sandbox`, an exception name, or empty.
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub duration_ms: f64,
}

/// `GET /sessions/{id}/events`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SessionEvents {
    pub events: Vec<SessionEvent>,
    /// The last sequence number assigned, 0 if none: pass it as the next `after`.
    pub latest_seq: u64,
}

/// `POST /sessions/{id}/run`: exactly one of finished, timed out, over the limit.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RunResponse {
    /// UTF-8; undecodable bytes replaced. Only the first 64 KiB when stopped.
    pub stdout: String,
    pub stderr: String,
    /// Set when the command finished (127: no such program, 128+N: signal N).
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    /// Combined output went over the host's fixed 10 MiB.
    #[serde(default)]
    pub output_limited: bool,
    #[serde(default)]
    pub output_limit: Option<u64>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// It finished, with this exit code (non-zero included).
    Exited(i32),
    /// Stopped at its deadline.
    TimedOut,
    /// Stopped for writing more than the host's output limit.
    OutputLimited,
}

impl RunResponse {
    /// How the command ended.
    pub fn outcome(&self) -> RunOutcome {
        match self.exit_code {
            Some(code) if !self.timed_out && !self.output_limited => RunOutcome::Exited(code),
            _ if self.output_limited => RunOutcome::OutputLimited,
            _ => RunOutcome::TimedOut,
        }
    }

    pub(super) fn is_well_formed(&self) -> bool {
        u8::from(self.exit_code.is_some()) + u8::from(self.timed_out) + u8::from(self.output_limited) == 1
    }
}

/// A file or directory, from a live session or a stored workspace.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FileEntry {
    pub name: String,
    /// Absolute (`/workspace/…`) from `/files/*`; workspace-relative, no
    /// leading slash, from `/workspaces/*`.
    pub path: String,
    pub is_dir: bool,
    /// Bytes; none for directories.
    #[serde(default)]
    pub size: Option<u64>,
    /// ISO-8601 UTC, only from `/workspaces/*` listings and only for files.
    #[serde(default)]
    pub modified_at: Option<String>,
}

/// A breadth-first listing and whether a bound stopped it. Its entries are [`FileEntry`]s, or
/// whatever leaner shape a caller decodes them into (`documents` keeps only what it shows).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Tree<E = FileEntry> {
    pub entries: Vec<E>,
    /// A directory was left unopened at `max_depth`, `max_entries` was reached
    /// with more to list, or a directory could not be read: not every file.
    pub truncated: bool,
}

impl<E> Default for Tree<E> {
    fn default() -> Self {
        Tree { entries: Vec::new(), truncated: false }
    }
}

/// One workspace's answer in a `trees` response.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(bound(deserialize = "E: Deserialize<'de>"))]
pub struct TreeResult<E = FileEntry> {
    pub session_id: String,
    #[serde(default)]
    pub tree: Option<Tree<E>>,
    /// What `tree` alone would have answered, when it failed.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub status_code: Option<u16>,
}

impl<E> TreeResult<E> {
    /// The tree, or the error `workspace_tree` would have given for this
    /// workspace alone.
    pub fn result(&self) -> Result<&Tree<E>, SandboxdError> {
        self.tree.as_ref().ok_or_else(|| self.error())
    }

    /// [`TreeResult::result`], taking the tree rather than copying its entries.
    pub fn into_result(mut self) -> Result<Tree<E>, SandboxdError> {
        self.tree.take().ok_or_else(|| self.error())
    }

    fn error(&self) -> SandboxdError {
        let status = self
            .status_code
            .and_then(|code| StatusCode::from_u16(code).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let detail = self.error.clone().unwrap_or_else(|| "no tree and no reason given".to_owned());
        SandboxdError::from_answer(
            status,
            Detail::Text(detail),
            Route::Workspace(&self.session_id, WorkspaceOp::Tree).is_native_file(),
        )
    }
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "E: Deserialize<'de>"))]
pub(super) struct TreesResponse<E> {
    pub(super) results: Vec<TreeResult<E>>,
}

#[derive(Deserialize)]
pub(super) struct ContentResponse {
    pub(super) content: String,
}

#[derive(Deserialize)]
pub(super) struct ContentBytesResponse {
    pub(super) content_b64: String,
}

#[derive(Deserialize)]
pub(super) struct PathResponse {
    pub(super) path: String,
}

/// Only what a version check needs of `GET /`; `endpoints` absent means the
/// index cannot confirm anything.
#[derive(Deserialize)]
pub(super) struct IndexProbe {
    #[serde(default)]
    pub(super) endpoints: Option<Vec<String>>,
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// `POST /sessions`: open a session, or attach to one.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpenSession {
    /// The session's name on the host; `None` lets the host pick `s-<16 hex>`.
    pub session_id: Option<String>,
    /// Runtime alias; `None` means the host's default.
    pub runtime: Option<String>,
    /// Counted against the host's per-tenant cap (the organization id).
    pub tenant: Option<String>,
    /// If the id is already open, return it (same token) instead of 409.
    pub reuse: bool,
    /// Only attach, never create (implies `reuse`): re-attaching a stored
    /// session reference. A 404 then means its files are gone.
    pub attach: bool,
}

impl OpenSession {
    /// Open `session_id` by name: the first call creates it, later ones reuse it.
    pub fn named(session_id: impl Into<String>) -> Self {
        Self { session_id: Some(session_id.into()), reuse: true, ..Self::default() }
    }

    /// Re-attach to a stored session reference; never creates an empty one.
    pub fn attach(session_id: impl Into<String>) -> Self {
        Self { session_id: Some(session_id.into()), attach: true, ..Self::default() }
    }

    pub fn runtime(mut self, runtime: impl Into<String>) -> Self {
        self.runtime = Some(runtime.into());
        self
    }

    pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }
}

/// `POST /sessions/{id}/run`: one program, no shell unless asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRequest {
    /// The program and its arguments, passed literally. At least one item.
    pub argv: Vec<String>,
    /// Layered over the sandbox's environment.
    pub env: BTreeMap<String, String>,
    /// The command's deadline; the host caps it at its `execute_timeout`.
    /// `None` leaves it to the host, and this client then waits
    /// [`DEFAULT_EXECUTE_TIMEOUT`](super::DEFAULT_EXECUTE_TIMEOUT) plus its
    /// margin: set it when the host's `execute_timeout` is longer.
    pub timeout: Option<Duration>,
    /// 32 lowercase hex digits; names the command for
    /// [`SandboxdClient::stop_run`](super::SandboxdClient::stop_run).
    pub run_id: String,
}

impl RunRequest {
    /// Run `argv` with a fresh run id.
    pub fn new<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            argv: argv.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            timeout: None,
            run_id: new_run_id(),
        }
    }

    /// Run `command` with POSIX `/bin/sh -c`.
    pub fn shell(command: impl Into<String>) -> Self {
        Self::new(["/bin/sh".to_owned(), "-c".to_owned(), command.into()])
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }
}

#[derive(Serialize)]
pub(super) struct RunBody<'a> {
    pub(super) argv: &'a [String],
    pub(super) env: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) timeout_seconds: Option<f64>,
    pub(super) run_id: &'a str,
}

#[derive(Serialize)]
pub(super) struct PathBody<'a> {
    pub(super) path: &'a str,
}

/// Bounds of a `tree`/`trees` listing. The default is docs/design.md's: the
/// workspace root, 6 levels, 2,000 entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeOptions {
    /// Workspace-relative, or absolute under the work directory.
    pub path: String,
    /// 1 lists the directory alone; at most 64.
    pub max_depth: u32,
    /// Per workspace; at most 100,000.
    pub max_entries: u32,
}

impl Default for TreeOptions {
    fn default() -> Self {
        Self { path: ".".to_owned(), max_depth: 6, max_entries: 2000 }
    }
}

#[derive(Serialize)]
pub(super) struct TreesBody<'a> {
    pub(super) sessions: Vec<&'a str>,
    #[serde(flatten)]
    pub(super) options: &'a TreeOptions,
}

#[derive(Serialize)]
pub(super) struct ReadBody<'a> {
    pub(super) path: &'a str,
    pub(super) offset: u64,
    pub(super) limit: u64,
}

/// Ceilings of one runtime in a [`PolicyUpdate`]: `None` leaves one alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuntimeLimitsUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_limit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memswap_limit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_shares: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<u64>,
}

/// `PUT /policy`. For every field, `None` leaves the setting alone; for the
/// nullable ones, `Some(None)` removes the setting (sent as `null`, "no limit")
/// and `Some(Some(v))` sets it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PolicyUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_runtime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sessions: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_sessions: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_sessions_per_tenant: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evict_idle_after: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execute_timeout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_read_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace_ttl: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_ttl: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_limit: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memswap_limit: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_shares: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<Option<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmpfs_size: Option<Option<String>>,
    /// Ceilings per existing runtime alias; a new alias is refused (400).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtimes: Option<BTreeMap<String, RuntimeLimitsUpdate>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_outcomes() {
        let mut r = RunResponse {
            stdout: String::new(),
            stderr: String::new(),
            exit_code: Some(3),
            timed_out: false,
            output_limited: false,
            output_limit: None,
        };
        assert_eq!(r.outcome(), RunOutcome::Exited(3));
        assert!(r.is_well_formed());
        r.exit_code = None;
        assert!(!r.is_well_formed());
        r.timed_out = true;
        assert_eq!(r.outcome(), RunOutcome::TimedOut);
        r.timed_out = false;
        r.output_limited = true;
        assert_eq!(r.outcome(), RunOutcome::OutputLimited);
    }

    #[test]
    fn policy_updates_tell_absent_from_null() {
        let update =
            PolicyUpdate { max_sessions_per_tenant: Some(None), execute_timeout: Some(120), ..PolicyUpdate::default() };
        assert_eq!(
            serde_json::to_string(&update).unwrap(),
            r#"{"max_sessions_per_tenant":null,"execute_timeout":120}"#
        );
    }
}
