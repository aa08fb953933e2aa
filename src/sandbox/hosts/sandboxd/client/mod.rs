//! The sandboxd client: the only code in the product that talks to a sandboxd host.
//!
//! sandboxd is the HTTP service of the Python package `pydantic-ai-backend`
//! (`pydantic_ai_backends.remote`). This module speaks its wire contract
//! (`docs/sandboxd-wire.md`) for the release pinned in [`SANDBOXD_VERSION`]:
//! one typed method per route, serde models for every shape, and one error enum,
//! [`SandboxdError`], whose `Display` is fit to show a user.
//!
//! Rules this module keeps:
//!
//! - The token travels only as the `X-Sandbox-Token` header (marked sensitive),
//!   never in a URL, a log line, or an error's `Display`/`Debug`. Build the
//!   `reqwest::Client` with [`SandboxdClient::default_http`] (or at least with
//!   redirects off): reqwest keeps custom headers across a redirect, so a client
//!   that follows one could hand the token to another address.
//! - Error messages never name the host's address: members and the model may
//!   read them. The address goes to the `sandboxd` tracing target instead.
//! - Version skew is detected as docs/design.md §6 says: a bare FastAPI
//!   `404 {"detail":"Not Found"}`, or a `409` when re-attaching a stored session
//!   reference, makes the client read the host's index (`GET /`). Only a route
//!   of [`required_routes`] that the index confirms missing becomes
//!   [`SandboxdError::VersionMismatch`]; otherwise the original error stands.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use reqwest::header::{HeaderValue, CONTENT_TYPE};
use reqwest::{Method, StatusCode};
use secrecy::{ExposeSecret as _, SecretString};
use serde::de::DeserializeOwned;
use serde::Serialize;
use url::Url;

mod error;
mod routes;
mod transport;
mod trees;
mod wire;

pub use error::{FileErrorKind, SandboxdError};
pub use routes::{is_session_id, new_run_id, required_routes};
pub use wire::*;

use error::Detail;
use routes::{check_run_id, check_session_id, FileOp, Route, WorkspaceOp};
use transport::{lean, Answer};
use wire::{ContentBytesResponse, ContentResponse, IndexProbe, PathBody, PathResponse, ReadBody, RunBody, TreesBody};

/// The sandboxd release this client speaks (`pydantic-ai-backend` version and
/// `ghcr.io/vstorm-co/sandboxd` image tag). The main crate feeds the real value
/// from its pin file through [`SandboxdClient::with_expected_version`].
pub const SANDBOXD_VERSION: &str = "0.2.37";

/// The header that carries the token: the raw token, no scheme.
pub const TOKEN_HEADER: &str = "X-Sandbox-Token";

/// How long opening a session may take on an ordinary request.
pub const OPEN_WAIT: Duration = Duration::from_secs(30);

/// How long opening a session may take while its runtime image builds.
pub const OPEN_WAIT_WHILE_BUILDING: Duration = crate::sandbox::hosts::error::OPEN_WAIT_WHILE_BUILDING;

/// The host's own deadline for a command run without `timeout_seconds`
/// (`SANDBOXD_EXECUTE_TIMEOUT` default).
pub const DEFAULT_EXECUTE_TIMEOUT: Duration = Duration::from_secs(300);

/// Most sessions one `trees` request may name.
pub const MAX_TREES: usize = 100;

/// FastAPI's body for a path no route matches.
const BARE_NOT_FOUND: &str = "Not Found";

/// Deadlines of the calls that do not take one from their caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Health, index, policy, session listings, events, stopping a run: 5 s.
    pub read: Duration,
    /// File operations, stored-workspace reads, closing a session: 30 s.
    pub operation: Duration,
    /// Added to a command's own deadline for `run`: 10 s.
    pub run_margin: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self { read: Duration::from_secs(5), operation: Duration::from_secs(30), run_margin: Duration::from_secs(10) }
    }
}

/// A client of one sandboxd host. Cheap to clone: clones share the HTTP
/// connection pool and the version-warning memory.
#[derive(Clone)]
pub struct SandboxdClient {
    http: reqwest::Client,
    /// Send on this thread's own [`Self::default_http`] client instead of `http`: see
    /// [`Self::with_thread_pools`].
    thread_pools: bool,
    /// Calls go through [`transport::lean`] (see [`Self::with_thread_pools`]).
    lean: bool,
    base: Arc<Url>,
    token: SecretString,
    expected_version: Arc<str>,
    timeouts: Timeouts,
    /// The missing routes last logged, so a mismatch is logged once, not per call.
    warned: Arc<Mutex<Option<Vec<String>>>>,
    /// The saved connection this client calls, for the metrics' `connection` label.
    connection: Option<Arc<str>>,
}

impl fmt::Debug for SandboxdClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SandboxdClient")
            .field("base", &log_address(&self.base))
            .field("token", &"[REDACTED]")
            .field("expected_version", &self.expected_version)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

/// The body of a request.
enum Body<'a> {
    None,
    Json(serde_json::Value),
    Bytes(&'a [u8]),
}

/// One call: the route, how to send it, and how long to wait.
struct Call<'a> {
    method: Method,
    route: Route<'a>,
    query: Vec<(&'static str, String)>,
    body: Body<'a>,
    timeout: Duration,
    authenticated: bool,
    /// A 409 here is a version-skew signal (re-attaching a stored reference).
    reattach: bool,
    /// Sent on a connection opened for it, never on an idle one (see [`Call::fresh`]).
    fresh: bool,
}

impl<'a> Call<'a> {
    fn new(method: Method, route: Route<'a>, timeout: Duration) -> Self {
        Self {
            method,
            route,
            query: Vec::new(),
            body: Body::None,
            timeout,
            authenticated: true,
            reattach: false,
            fresh: false,
        }
    }

    fn get(route: Route<'a>, timeout: Duration) -> Self {
        Self::new(Method::GET, route, timeout)
    }

    fn post(route: Route<'a>, timeout: Duration) -> Self {
        Self::new(Method::POST, route, timeout)
    }

    fn query(mut self, name: &'static str, value: impl ToString) -> Self {
        self.query.push((name, value.to_string()));
        self
    }

    fn json(mut self, body: &impl Serialize) -> Result<Self, SandboxdError> {
        let value = serde_json::to_value(body)
            .map_err(|e| SandboxdError::invalid(format!("could not encode the request: {e}")))?;
        self.body = Body::Json(value);
        Ok(self)
    }

    fn anonymous(mut self) -> Self {
        self.authenticated = false;
        self
    }

    /// Send on a new connection: for a call that must not be sent twice (`POST /run`). An idle
    /// keep-alive connection may be closed by the host at the moment a request is written on it
    /// (RFC 9112 section 9.3.1: only an idempotent request may then be retried); the request is
    /// lost with "connection closed before message completed", and a command cannot be sent again
    /// without perhaps running twice (a full test run: a `POST /run` taken from the pool failed so
    /// with `IDLE_MAX` at 2 s of uvicorn's 5). A new connection costs a connect (loopback: tens of
    /// microseconds; a remote host: one round trip), small beside starting a process there.
    fn fresh(mut self) -> Self {
        self.fresh = true;
        self
    }
}

/// The address for a log line: scheme, host, port and path; no user info.
fn log_address(url: &Url) -> String {
    let mut url = url.clone();
    // Both only fail for URLs that cannot carry credentials anyway.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

impl SandboxdClient {
    /// A client of the host at `base` (e.g. `http://sandboxd:8080`), sending
    /// `token` as its service token. Expects [`SANDBOXD_VERSION`].
    ///
    /// `http` should not follow redirects; see [`Self::default_http`].
    pub fn new(http: reqwest::Client, base: Url, token: SecretString) -> Self {
        Self {
            http,
            thread_pools: false,
            lean: false,
            base: Arc::new(base),
            token,
            expected_version: Arc::from(SANDBOXD_VERSION),
            timeouts: Timeouts::default(),
            warned: Arc::new(Mutex::new(None)),
            connection: None,
        }
    }

    /// Label this client's calls with the saved connection `id` (metrics).
    pub fn for_connection(mut self, id: &str) -> Self {
        self.connection = Some(Arc::from(id));
        self
    }

    /// The HTTP client this module expects: no redirects (reqwest would carry
    /// the token header to wherever one points), a 5 s connect timeout.
    pub fn default_http() -> reqwest::Result<reqwest::Client> {
        transport::http_builder()
            // sandboxd (uvicorn) closes a connection idle for 5 s; dropping ours sooner keeps a
            // request from being sent on a connection the host is closing at that moment.
            .pool_idle_timeout(lean::IDLE_MAX)
            .build()
    }

    /// Send every request on a connection of the calling thread: for a plain `http://` host
    /// (and no proxy in the environment) a keep-alive HTTP/1.1 connection of [`transport::lean`],
    /// otherwise a [`Self::default_http`] client of the thread, created on its first request
    /// there; not through the client given to [`Self::new`].
    ///
    /// Each actix worker runs its own single-threaded runtime. A pooled connection is driven by
    /// a task of the runtime that opened it, so with one client shared by every worker a request
    /// handled on one worker usually went out through a connection of another: two wake-ups of
    /// another thread per request (the request handed over, the answer handed back), about a
    /// tenth of a millisecond on this 2-core machine. With a client per thread, the worker that
    /// handles a request also drives its connection to the host. The lean connection then
    /// saves reqwest's layers (pool, connector, proxy lookup, URL handling), about a third of
    /// the console's CPU per proxied read (docs/benchmarks.md, "Workspace load").
    pub fn with_thread_pools(mut self) -> Self {
        self.thread_pools = true;
        self.lean = lean::usable(&self.base).is_some() && !transport::proxy_configured();
        self
    }

    /// The client a request goes out on (see [`Self::with_thread_pools`]).
    fn http(&self) -> reqwest::Client {
        thread_local! {
            static THREAD_HTTP: std::cell::OnceCell<Option<reqwest::Client>> = const { std::cell::OnceCell::new() };
        }
        if !self.thread_pools {
            return self.http.clone();
        }
        THREAD_HTTP
            .with(|cell| cell.get_or_init(|| Self::default_http().ok()).clone())
            .unwrap_or_else(|| self.http.clone())
    }

    /// Expect another sandboxd release (the main crate's pin file).
    pub fn with_expected_version(mut self, version: impl Into<String>) -> Self {
        self.expected_version = Arc::from(version.into());
        self
    }

    /// Use other deadlines for the calls that do not take one.
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The same host with another token, e.g. a session's own token.
    pub fn with_token(&self, token: SecretString) -> Self {
        Self { token, ..self.clone() }
    }

    /// The host's base address. For logs and operators, not for users.
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The sandboxd release this client expects.
    pub fn expected_version(&self) -> &str {
        &self.expected_version
    }

    // -- service ------------------------------------------------------------

    /// `GET /healthz` (no token).
    pub async fn health(&self) -> Result<ServiceHealth, SandboxdError> {
        self.json(Call::get(Route::Health, self.timeouts.read).anonymous()).await
    }

    /// `GET /` (no token): what the service is and which routes it serves.
    pub async fn index(&self) -> Result<ServiceIndex, SandboxdError> {
        self.json(Call::get(Route::Index, self.timeouts.read).anonymous()).await
    }

    /// `GET /policy`: runtimes, ceilings and the native-file flags.
    pub async fn policy(&self) -> Result<ServicePolicy, SandboxdError> {
        self.json(Call::get(Route::Policy, self.timeouts.read)).await
    }

    /// `PUT /policy`: change ceilings live; answers the whole new policy. They
    /// apply to sandboxes started afterwards.
    pub async fn update_policy(&self, update: &PolicyUpdate) -> Result<ServicePolicy, SandboxdError> {
        let call = Call::new(Method::PUT, Route::Policy, self.timeouts.read).json(update)?;
        self.json(call).await
    }

    /// The routes of [`required_routes`] the host's index does not list. For
    /// `doctor`; an index without an `endpoints` list lacks them all.
    pub async fn missing_routes(&self) -> Result<Vec<String>, SandboxdError> {
        let index = self.index().await?;
        Ok(missing_from(&index.endpoints))
    }

    /// Fails with [`SandboxdError::VersionMismatch`] (and logs it) when the
    /// host lacks a route this client calls.
    pub async fn check_version(&self) -> Result<(), SandboxdError> {
        let missing = self.missing_routes().await?;
        if missing.is_empty() {
            return Ok(());
        }
        self.warn_mismatch(&Route::Index, &missing);
        Err(self.mismatch(missing))
    }

    // -- sessions -------------------------------------------------------------

    /// `GET /sessions`: every open session, hibernated ones included.
    /// `usage` samples each sandbox (slow with Docker: over a second each).
    pub async fn sessions(&self, usage: bool) -> Result<SessionList, SandboxdError> {
        self.json(Call::get(Route::Sessions, self.timeouts.read).query("usage", usage)).await
    }

    /// `GET /sessions/{id}`: one session, as it is (never woken or healed).
    pub async fn session(&self, session_id: &str, usage: bool) -> Result<SessionInfo, SandboxdError> {
        check_session_id(session_id)?;
        self.json(Call::get(Route::Session(session_id), self.timeouts.read).query("usage", usage)).await
    }

    /// `GET /sessions/{id}/events?after=N`: log entries with `seq > after`.
    pub async fn events(&self, session_id: &str, after: u64) -> Result<SessionEvents, SandboxdError> {
        check_session_id(session_id)?;
        self.json(Call::get(Route::Events(session_id), self.timeouts.read).query("after", after)).await
    }

    /// `POST /sessions`: open (or, with `reuse`/`attach`, find) a session.
    ///
    /// The sandbox starts inside this request, so give `wait` room:
    /// [`OPEN_WAIT`] normally, [`OPEN_WAIT_WHILE_BUILDING`] while a runtime
    /// image builds. Refusals come back as the host words them:
    /// [`SandboxdError::Capacity`] for a cap, [`SandboxdError::Conflict`] for an
    /// open id or a runtime clash, [`SandboxdError::NotFound`] for an `attach`
    /// with nothing left to attach to. A 409 on `attach` is also checked
    /// against the host's routes (version skew).
    pub async fn open_session(&self, request: &OpenSession, wait: Duration) -> Result<SessionCreated, SandboxdError> {
        if let Some(id) = &request.session_id {
            check_session_id(id)?;
        }
        if request.attach && request.session_id.is_none() {
            return Err(SandboxdError::invalid("attaching needs the id of the session to attach to"));
        }
        let mut call = Call::post(Route::Sessions, wait).json(request)?;
        call.reattach = request.attach;
        self.json(call).await
    }

    /// `DELETE /sessions/{id}?purge=`: stop the sandbox and forget the session.
    /// Without `purge` its workspace stays on disk (attach and `/workspaces/*`
    /// still find it); with `purge` the files go too. An unknown id is
    /// [`SandboxdError::NotFound`].
    pub async fn delete_session(&self, session_id: &str, purge: bool) -> Result<(), SandboxdError> {
        check_session_id(session_id)?;
        let call = Call::new(Method::DELETE, Route::Session(session_id), self.timeouts.operation).query("purge", purge);
        self.no_content(call).await
    }

    // -- commands -------------------------------------------------------------

    /// `POST /sessions/{id}/run`: run one command to its end.
    ///
    /// A non-zero exit, a timeout and an over-limit output are all `Ok`; see
    /// [`RunResponse::outcome`]. The call waits for the command's deadline plus
    /// [`Timeouts::run_margin`]. If no answer comes (transport failure), or the
    /// returned future is dropped before the answer, the command is stopped on
    /// the host, best effort.
    pub async fn run(&self, session_id: &str, request: &RunRequest) -> Result<RunResponse, SandboxdError> {
        check_session_id(session_id)?;
        check_run_id(&request.run_id)?;
        if request.argv.is_empty() {
            return Err(SandboxdError::invalid("a command needs at least a program name"));
        }
        if request.timeout.is_some_and(|t| t.is_zero()) {
            return Err(SandboxdError::invalid("a command's timeout must be above zero"));
        }
        let wait = request.timeout.unwrap_or(DEFAULT_EXECUTE_TIMEOUT) + self.timeouts.run_margin;
        let call = Call::post(Route::Run(session_id), wait).fresh().json(&RunBody {
            argv: &request.argv,
            env: &request.env,
            timeout_seconds: request.timeout.map(|t| t.as_secs_f64()),
            run_id: &request.run_id,
        })?;

        let mut guard = StopOnDrop {
            client: self.clone(),
            session_id: session_id.to_owned(),
            run_id: request.run_id.clone(),
            armed: true,
        };
        let answer = self.send(call).await;
        guard.armed = false;
        let response = match answer {
            Ok(response) => response,
            Err(error) => {
                if error.is_transport() {
                    // The command may still be running there.
                    if let Err(stop) = self.stop_run(session_id, &request.run_id).await {
                        tracing::debug!(target: "sandboxd", error = %stop, "could not stop an abandoned run");
                    }
                }
                return Err(error);
            }
        };
        let output: RunResponse = self.decode(&Route::Run(session_id), response).await?;
        if !output.is_well_formed() {
            return Err(SandboxdError::NotJson);
        }
        Ok(output)
    }

    /// `POST /sessions/{id}/runs/{run_id}/stop`: stop a running command (its
    /// `run` then returns exit code 143). Always succeeds for an unknown or
    /// finished run.
    pub async fn stop_run(&self, session_id: &str, run_id: &str) -> Result<(), SandboxdError> {
        check_session_id(session_id)?;
        check_run_id(run_id)?;
        self.no_content(Call::post(Route::StopRun(session_id, run_id), self.timeouts.read)).await
    }

    // -- native files of a live session ---------------------------------------

    /// `POST /sessions/{id}/files/read`: a whole file (≤ the host's
    /// `max_read_bytes`). `path` is absolute, under the work directory.
    pub async fn read_file(&self, session_id: &str, path: &str) -> Result<Vec<u8>, SandboxdError> {
        check_session_id(session_id)?;
        let route = Route::File(session_id, FileOp::Read);
        let call = Call::post(route, self.timeouts.operation).json(&PathBody { path })?;
        let response = self.send(call).await?;
        let is_bytes = response
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/octet-stream"));
        if !is_bytes {
            return Err(SandboxdError::NotJson);
        }
        // Without a copy where the body is held once (a snapshot's parts are megabytes).
        Ok(Vec::from(response.body))
    }

    /// `POST /sessions/{id}/files/write?path=`: create or replace a file
    /// (parents created, atomic). Over the host's `max_read_bytes` it is
    /// [`SandboxdError::NotNative`].
    pub async fn write_file(&self, session_id: &str, path: &str, contents: &[u8]) -> Result<(), SandboxdError> {
        check_session_id(session_id)?;
        let mut call = Call::post(Route::File(session_id, FileOp::Write), self.timeouts.operation).query("path", path);
        call.body = Body::Bytes(contents);
        self.no_content(call).await
    }

    /// `POST /sessions/{id}/files/list`: a directory, sorted by name.
    pub async fn list(&self, session_id: &str, path: &str) -> Result<Vec<FileEntry>, SandboxdError> {
        self.file_json(session_id, FileOp::List, path).await
    }

    /// `POST /sessions/{id}/files/stat` (links not followed).
    pub async fn stat(&self, session_id: &str, path: &str) -> Result<FileEntry, SandboxdError> {
        self.file_json(session_id, FileOp::Stat, path).await
    }

    /// `POST /sessions/{id}/files/realpath`.
    pub async fn realpath(&self, session_id: &str, path: &str) -> Result<String, SandboxdError> {
        let answer: PathResponse = self.file_json(session_id, FileOp::Realpath, path).await?;
        Ok(answer.path)
    }

    /// `POST /sessions/{id}/files/mkdir` (`mkdir -p`).
    pub async fn mkdir(&self, session_id: &str, path: &str) -> Result<(), SandboxdError> {
        self.file_no_content(session_id, FileOp::Mkdir, path).await
    }

    /// `POST /sessions/{id}/files/remove`: a file, a link itself, or a
    /// directory recursively.
    pub async fn remove(&self, session_id: &str, path: &str) -> Result<(), SandboxdError> {
        self.file_no_content(session_id, FileOp::Remove, path).await
    }

    // -- stored workspaces (no sandbox needed) --------------------------------

    /// `POST /workspaces/{id}/ls`: one directory, directories first.
    pub async fn workspace_ls(&self, session_id: &str, path: &str) -> Result<Vec<FileEntry>, SandboxdError> {
        check_session_id(session_id)?;
        let call = Call::post(Route::Workspace(session_id, WorkspaceOp::Ls), self.timeouts.operation)
            .json(&PathBody { path })?;
        self.json(call).await
    }

    /// `POST /workspaces/{id}/tree`: a breadth-first listing within `options`.
    pub async fn workspace_tree(&self, session_id: &str, options: &TreeOptions) -> Result<Tree, SandboxdError> {
        self.workspace_tree_of(session_id, options).await
    }

    /// [`workspace_tree`](Self::workspace_tree), its entries decoded as `E`.
    pub async fn workspace_tree_of<E: DeserializeOwned>(
        &self,
        session_id: &str,
        options: &TreeOptions,
    ) -> Result<Tree<E>, SandboxdError> {
        check_session_id(session_id)?;
        let call =
            Call::post(Route::Workspace(session_id, WorkspaceOp::Tree), self.timeouts.operation).json(options)?;
        self.json(call).await
    }

    /// `POST /workspaces/trees`: the same listing of up to [`MAX_TREES`]
    /// workspaces in one request, in request order. A workspace that fails is
    /// an entry whose [`TreeResult::result`] is the error.
    pub async fn workspace_trees<S: AsRef<str>>(
        &self,
        sessions: &[S],
        options: &TreeOptions,
    ) -> Result<Vec<TreeResult>, SandboxdError> {
        Ok(self.workspace_trees_timed::<FileEntry, S>(sessions, options).await?.0)
    }

    /// [`workspace_trees`](Self::workspace_trees), its entries decoded as `E`, and how long the
    /// host took: from sending the request until its whole answer arrived (decoding the answer,
    /// on several threads when it is large, is not counted).
    pub async fn workspace_trees_timed<E, S>(
        &self,
        sessions: &[S],
        options: &TreeOptions,
    ) -> Result<(Vec<TreeResult<E>>, std::time::Duration), SandboxdError>
    where
        E: DeserializeOwned + Send + 'static,
        S: AsRef<str>,
    {
        if sessions.is_empty() || sessions.len() > MAX_TREES {
            return Err(SandboxdError::invalid(format!(
                "a listing of several workspaces names 1 to {MAX_TREES} of them, not {}",
                sessions.len()
            )));
        }
        let ids: Vec<&str> = sessions.iter().map(AsRef::as_ref).collect();
        for id in &ids {
            check_session_id(id)?;
        }
        let call = Call::post(Route::Trees, self.timeouts.operation).json(&TreesBody { sessions: ids, options })?;
        let route = call.route;
        let started = std::time::Instant::now();
        let body = self.send(call).await?.body;
        let waited = started.elapsed();
        match trees::decode::<E, _>(body).await {
            Some(results) => Ok((results, waited)),
            None => {
                tracing::debug!(target: "sandboxd", route = %route.template(), "answer is not sandboxd's JSON");
                Err(SandboxdError::NotJson)
            }
        }
    }

    /// `POST /workspaces/{id}/read`: text, decoded as a session would, lines
    /// `offset..offset+limit` (the final newline is dropped; more lines are
    /// announced at the end).
    pub async fn workspace_read(
        &self,
        session_id: &str,
        path: &str,
        offset: u64,
        limit: u64,
    ) -> Result<String, SandboxdError> {
        check_session_id(session_id)?;
        let call = Call::post(Route::Workspace(session_id, WorkspaceOp::Read), self.timeouts.operation)
            .json(&ReadBody { path, offset, limit })?;
        let answer: ContentResponse = self.json(call).await?;
        Ok(answer.content)
    }

    /// `POST /workspaces/{id}/read_bytes`: a whole file, exactly.
    pub async fn workspace_read_bytes(&self, session_id: &str, path: &str) -> Result<Vec<u8>, SandboxdError> {
        check_session_id(session_id)?;
        let call = Call::post(Route::Workspace(session_id, WorkspaceOp::ReadBytes), self.timeouts.operation)
            .json(&PathBody { path })?;
        let answer: ContentBytesResponse = self.json(call).await?;
        base64::engine::general_purpose::STANDARD
            .decode(answer.content_b64.as_bytes())
            .map_err(|_| SandboxdError::NotJson)
    }

    // -- plumbing ---------------------------------------------------------------

    async fn file_json<T: DeserializeOwned>(
        &self,
        session_id: &str,
        op: FileOp,
        path: &str,
    ) -> Result<T, SandboxdError> {
        check_session_id(session_id)?;
        let call = Call::post(Route::File(session_id, op), self.timeouts.operation).json(&PathBody { path })?;
        self.json(call).await
    }

    async fn file_no_content(&self, session_id: &str, op: FileOp, path: &str) -> Result<(), SandboxdError> {
        check_session_id(session_id)?;
        let call = Call::post(Route::File(session_id, op), self.timeouts.operation).json(&PathBody { path })?;
        self.no_content(call).await
    }

    fn url(&self, route: &Route<'_>, query: &[(&'static str, String)]) -> Result<Url, SandboxdError> {
        let mut url = Url::clone(&self.base);
        url.set_query(None);
        url.set_fragment(None);
        {
            let mut path = url
                .path_segments_mut()
                .map_err(|()| SandboxdError::Unreachable { reason: "the address is not an http(s) URL".to_owned() })?;
            path.pop_if_empty().extend(route.segments());
        }
        if route.segments().is_empty() && !url.path().ends_with('/') {
            let with_slash = format!("{}/", url.path());
            url.set_path(&with_slash);
        }
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        Ok(url)
    }

    /// Sends a call; a 2xx answer is returned, anything else becomes its error
    /// (after the version check the answer calls for).
    async fn send(&self, call: Call<'_>) -> Result<Answer, SandboxdError> {
        let started = std::time::Instant::now();
        let operation = call.route.operation(&call.method);
        let answer = self.send_unmeasured(call).await;
        let outcome = answer.as_ref().map_or_else(SandboxdError::kind, |_| "ok");
        crate::instruments::host_call(self.connection.as_deref(), operation, outcome, started.elapsed());
        answer
    }

    async fn send_unmeasured(&self, call: Call<'_>) -> Result<Answer, SandboxdError> {
        let route = call.route;
        match self.exchange(call).await {
            Ok(response) => Ok(response),
            // Every sandboxd release serves these two: whatever answers 404
            // there (FastAPI's bare "Not Found" or any other) is something else.
            Err(Failure::Final(SandboxdError::NotFound { .. }) | Failure::SkewSignal(_))
                if matches!(route, Route::Index | Route::Health) =>
            {
                Err(SandboxdError::NotJson)
            }
            Err(Failure::Final(error)) => Err(error),
            Err(Failure::SkewSignal(error)) => Err(self.confirm_mismatch(&route, error).await),
        }
    }

    /// One request and its answer, without the version check.
    async fn exchange(&self, call: Call<'_>) -> Result<Answer, Failure> {
        let url = self.url(&call.route, &call.query)?;
        let token = match call.authenticated {
            true => {
                let mut value =
                    HeaderValue::from_str(self.token.expose_secret()).map_err(|_| SandboxdError::CredentialRefused)?;
                value.set_sensitive(true);
                Some((TOKEN_HEADER, value))
            }
            false => None,
        };
        let (content_type, body) = match call.body {
            Body::None => (None, bytes::Bytes::new()),
            Body::Json(value) => {
                let encoded = serde_json::to_vec(&value)
                    .map_err(|e| SandboxdError::invalid(format!("could not encode the request: {e}")))?;
                (Some("application/json"), bytes::Bytes::from(encoded))
            }
            Body::Bytes(bytes) => (Some("application/octet-stream"), bytes::Bytes::copy_from_slice(bytes)),
        };
        let response = if self.lean {
            let request = lean::Request {
                method: call.method.clone(),
                url: &url,
                token,
                content_type,
                body,
                timeout: call.timeout,
                fresh: call.fresh,
            };
            lean::send(request).await?
        } else {
            let http = match call.fresh {
                true => transport::unpooled(),
                false => self.http(),
            };
            let mut request = http.request(call.method.clone(), url).timeout(call.timeout);
            if let Some((name, value)) = token {
                request = request.header(name, value);
            }
            if let Some(ct) = content_type {
                request = request.header(CONTENT_TYPE, ct);
            }
            transport::through_reqwest(request.body(body)).await?
        };
        let status = response.status;
        tracing::debug!(target: "sandboxd", route = %call.route.template(), status = status.as_u16(), "sandboxd answered");
        if status.is_success() {
            return Ok(response);
        }
        if status.is_redirection() || status.is_informational() {
            return Err(SandboxdError::NotJson.into());
        }
        let Some(detail) = Detail::parse(&response.body) else {
            // A gateway in front of a host that is down answers HTML 502-504.
            if matches!(status.as_u16(), 502..=504) {
                return Err(SandboxdError::Unreachable { reason: format!("a gateway answered {status}") }.into());
            }
            return Err(SandboxdError::NotJson.into());
        };
        let is_bare_not_found = status == StatusCode::NOT_FOUND && detail == Detail::Text(BARE_NOT_FOUND.to_owned());
        let is_reattach_conflict = status == StatusCode::CONFLICT && call.reattach;
        let error = SandboxdError::from_answer(status, detail, call.route.is_native_file());
        if is_bare_not_found || is_reattach_conflict {
            return Err(Failure::SkewSignal(error));
        }
        Err(Failure::Final(error))
    }

    async fn json<T: DeserializeOwned>(&self, call: Call<'_>) -> Result<T, SandboxdError> {
        let route = call.route;
        let response = self.send(call).await?;
        self.decode(&route, response).await
    }

    async fn decode<T: DeserializeOwned>(&self, route: &Route<'_>, response: Answer) -> Result<T, SandboxdError> {
        self.parse(route, &response.body)
    }

    fn parse<T: DeserializeOwned>(&self, route: &Route<'_>, body: &[u8]) -> Result<T, SandboxdError> {
        serde_json::from_slice(body).map_err(|error| {
            tracing::debug!(target: "sandboxd", route = %route.template(), %error, "answer is not sandboxd's JSON");
            SandboxdError::NotJson
        })
    }

    async fn no_content(&self, call: Call<'_>) -> Result<(), SandboxdError> {
        let response = self.send(call).await?;
        if response.status == StatusCode::NO_CONTENT {
            Ok(())
        } else {
            Err(SandboxdError::NotJson)
        }
    }

    /// After a bare 404 or a re-attach 409: the host's index decides whether
    /// this is a version mismatch. An index that does not answer, or that lists
    /// every required route, leaves `original` as it is; an index that answers
    /// 404 too means the address is not a sandbox service.
    async fn confirm_mismatch(&self, route: &Route<'_>, original: SandboxdError) -> SandboxdError {
        let call = Call::get(Route::Index, self.timeouts.read).anonymous();
        let index = match self.exchange(call).await {
            Ok(response) => self.decode::<IndexProbe>(&Route::Index, response).await,
            Err(Failure::SkewSignal(error) | Failure::Final(error)) => Err(error),
        };
        let endpoints = match index {
            Ok(IndexProbe { endpoints: Some(endpoints) }) if !endpoints.is_empty() => endpoints,
            Ok(_) => return original,
            // Every sandboxd release serves its index: an address answering 404 there too is
            // not a sandbox service, whatever the route said.
            Err(SandboxdError::NotFound { .. }) => {
                tracing::debug!(target: "sandboxd", route = %route.template(), "the index answers 404 too: not a sandbox service");
                return SandboxdError::NotJson;
            }
            Err(error) => {
                tracing::debug!(target: "sandboxd", route = %route.template(), %error, "index unreadable; no version check");
                return original;
            }
        };
        let missing = missing_from(&endpoints);
        if missing.is_empty() {
            return original;
        }
        self.warn_mismatch(route, &missing);
        self.mismatch(missing)
    }

    fn mismatch(&self, missing: Vec<String>) -> SandboxdError {
        SandboxdError::VersionMismatch { missing, expected: self.expected_version.to_string() }
    }

    /// Logs a mismatch with the host's address, once per missing set.
    fn warn_mismatch(&self, route: &Route<'_>, missing: &[String]) {
        let first_time = match self.warned.lock() {
            Ok(mut last) => {
                if last.as_deref() == Some(missing) {
                    false
                } else {
                    *last = Some(missing.to_vec());
                    true
                }
            }
            Err(_) => true,
        };
        if first_time {
            tracing::warn!(
                target: "sandboxd",
                event = "sandboxd_version_mismatch",
                address = %log_address(&self.base),
                missing = %missing.join(", "),
                expected = %self.expected_version,
                route = %route.template(),
                "sandboxd does not serve routes this platform calls"
            );
        }
    }
}

/// The required routes absent from `endpoints`, in [`required_routes`] order.
fn missing_from(endpoints: &[String]) -> Vec<String> {
    required_routes().into_iter().filter(|route| !endpoints.iter().any(|e| e == route)).collect()
}

/// Why an exchange failed: an error as it stands, or one that may be version
/// skew (a bare 404, a 409 on re-attach), for the index to confirm.
enum Failure {
    Final(SandboxdError),
    SkewSignal(SandboxdError),
}

impl From<SandboxdError> for Failure {
    fn from(error: SandboxdError) -> Self {
        Self::Final(error)
    }
}

/// Stops a run on the host when its `run` future is dropped before the answer.
struct StopOnDrop {
    client: SandboxdClient,
    session_id: String,
    run_id: String,
    armed: bool,
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let session_id = std::mem::take(&mut self.session_id);
        let run_id = std::mem::take(&mut self.run_id);
        runtime.spawn(async move {
            if let Err(error) = client.stop_run(&session_id, &run_id).await {
                tracing::debug!(target: "sandboxd", %error, "could not stop a cancelled run");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base: &str) -> SandboxdClient {
        SandboxdClient::new(reqwest::Client::new(), Url::parse(base).unwrap(), SecretString::from("s3cret-token"))
    }

    #[test]
    fn urls_keep_the_base_path_and_encode_ids_as_one_segment() {
        let c = client("http://h:8080/sandboxd/");
        let url = c.url(&Route::File("a.b", FileOp::Read), &[]).unwrap();
        assert_eq!(url.as_str(), "http://h:8080/sandboxd/sessions/a.b/files/read");
        let url = c.url(&Route::File("x", FileOp::Write), &[("path", "/workspace/a b&c".to_owned())]).unwrap();
        assert_eq!(url.as_str(), "http://h:8080/sandboxd/sessions/x/files/write?path=%2Fworkspace%2Fa+b%26c");
        let url = client("http://h:8080").url(&Route::Index, &[]).unwrap();
        assert_eq!(url.as_str(), "http://h:8080/");
        let url = client("http://h:8080/p").url(&Route::Index, &[]).unwrap();
        assert_eq!(url.as_str(), "http://h:8080/p/");
        let url = client("http://h:8080/p?x=1").url(&Route::Health, &[]).unwrap();
        assert_eq!(url.as_str(), "http://h:8080/p/healthz");
    }

    #[test]
    fn debug_output_never_shows_the_token() {
        let c = client("http://user:pw@h:8080/");
        let debug = format!("{c:?}");
        assert!(!debug.contains("s3cret-token"), "{debug}");
        assert!(!debug.contains("pw"), "{debug}");
        let created: SessionCreated = serde_json::from_str(
            r#"{"session":{"session_id":"a","runtime":"w","alive":true,"created_at":1,"last_activity":1,"idle_seconds":0},"token":"tok-123"}"#,
        )
        .unwrap();
        assert!(!format!("{created:?}").contains("tok-123"));
        assert_eq!(created.token.expose_secret(), "tok-123");
    }
}
