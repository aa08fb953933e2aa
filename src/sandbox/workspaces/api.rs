//! JSON: the workspace of a run, for agent runtimes (`/api/v1/runs/{run_id}/workspace/...`).
//! Paths are relative to the workspace root or absolute under `/workspace`; escapes are refused
//! with 400, and a write, mkdir or remove without a `path` with 422 naming it, before anything
//! reaches a host.

use std::collections::BTreeMap;

use actix_web::web::{Bytes, Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::command::{ExecInput, OutputEncoding};
use super::error::WorkspaceError;
use super::model::{Entry, ExecResult, WorkspaceState};
use super::service;
use crate::agents::model::Run;
use crate::api_route;
use crate::sandbox::snapshots::session_state;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(POST "/api/v1/runs/{run_id}/workspace/exec" => exec),
        api_route!(GET "/api/v1/runs/{run_id}/workspace/files" => read_file),
        api_route!(PUT "/api/v1/runs/{run_id}/workspace/files" => write_file),
        api_route!(GET "/api/v1/runs/{run_id}/workspace/ls" => list_dir),
        api_route!(POST "/api/v1/runs/{run_id}/workspace/mkdir" => make_dir),
        api_route!(POST "/api/v1/runs/{run_id}/workspace/remove" => remove_path),
        api_route!(GET "/api/v1/runs/{run_id}/workspace/stat" => stat_path),
        api_route!(GET "/api/v1/runs/{run_id}/workspace/briefing" => briefing),
        api_route!(GET "/api/v1/runs/{run_id}/workspace/state" => workspace_state),
        api_route!(POST "/api/v1/runs/{run_id}/finish" => finish_run),
    ]
}

crate::error_subset! {
    /// Resolving the run's workspace from our rows: no file is touched and no host is asked.
    pub struct Resolving: WorkspaceError only WorkspaceError::NotFound(_)
        | WorkspaceError::Forbidden(_)
        | WorkspaceError::Refused(_)
        | WorkspaceError::Internal(_)
}

crate::error_subset! {
    /// Finishing a run: refused only for the caller's role or a run that does not exist; what
    /// fails after the run is marked finished is logged, not answered.
    pub struct Finishing: WorkspaceError only
        WorkspaceError::NotFound(_) | WorkspaceError::Forbidden(_) | WorkspaceError::Internal(_)
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecBody {
    /// A program and its arguments.
    pub argv: Option<Vec<String>>,
    /// Or a line for POSIX `/bin/sh -c`.
    pub command: Option<String>,
    /// Seconds, 1 to 3600 (default 120).
    pub timeout_seconds: Option<u64>,
    /// Environment variables: names are letters, digits and `_`; no NUL byte in names or values.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `text` (default): `stdout`/`stderr` as UTF-8; `base64`: `stdout_base64`/`stderr_base64`
    /// with the exact bytes (encoded in the sandbox, which needs `base64` there, as coreutils and
    /// busybox have it).
    #[serde(default)]
    pub output_encoding: OutputEncoding,
}

/// Runs a command in the run's sandbox. Each argument (a `command` line is one) and each
/// `NAME=value` of `env` is at most 131,071 bytes, the most a sandbox can start (400 otherwise,
/// before anything reaches the host). The host's output limit: a command whose standard output
/// and error together pass 10 MiB is stopped there (`output_limited`, only the first 64 KiB of
/// each kept); with base64 output the limit counts the encoded text. A non-zero exit, a timeout
/// and the output limit are answered 200 and recorded as failed operations. A `state` workspace
/// runs no commands (400), nor does an agent whose shell is off (409).
#[utoipa::path(post, path = "/api/v1/runs/{run_id}/workspace/exec", tag = "workspace", request_body = ExecBody,
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 200, body = ExecResult), Problems<WorkspaceError>))]
pub async fn exec(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    body: Json<ExecBody>,
) -> Result<Json<ExecResult>, ApiError> {
    let b = body.into_inner();
    let input = ExecInput {
        argv: b.argv,
        command: b.command,
        timeout_seconds: b.timeout_seconds,
        env: b.env,
        output_encoding: b.output_encoding,
    };
    Ok(Json(service::exec(&st, &c, &run_id, input).await?))
}

/// A file's bytes, exactly as stored: any content, no encoding.
#[derive(utoipa::ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct FileBytes(pub Vec<u8>);

#[derive(Deserialize, utoipa::IntoParams)]
pub struct PathQuery {
    /// Relative to the workspace root, or absolute under `/workspace`.
    #[serde(default)]
    pub path: String,
}

/// Reads a file of the run's workspace: its bytes as `application/octet-stream`, at most 8 MiB.
/// The run's first operation opens its workspace (writing the agent's skills and manifest files).
/// Recorded as a `read`.
#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/files", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    responses((status = 200, body = FileBytes, content_type = "application/octet-stream", description = "the file's bytes"),
        Problems<WorkspaceError>))]
pub async fn read_file(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    q: Query<PathQuery>,
) -> Result<HttpResponse, ApiError> {
    let bytes = service::read(&st, &c, &run_id, &q.path).await?;
    Ok(HttpResponse::Ok().content_type("application/octet-stream").body(bytes))
}

/// Writes a file of the run's workspace from the request body (`application/octet-stream`, at
/// most 8 MiB), replacing what was there and creating its parent folders. Recorded as a `write`.
/// A `state` workspace that the write would take past its storage limit
/// (`AGENTICOS_STATE_LIMIT_BYTES`) is 413 and nothing is written; one over a lowered limit accepts
/// only writes that make it smaller.
#[utoipa::path(put, path = "/api/v1/runs/{run_id}/workspace/files", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    request_body(content = FileBytes, content_type = "application/octet-stream", description = "the file's new bytes, at most 8 MiB"),
    responses((status = 204, description = "written; parent folders are created"), Problems<WorkspaceError>))]
pub async fn write_file(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    q: Query<PathQuery>,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    service::write(&st, &c, &run_id, &q.path, &body).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Lists a folder of the run's workspace (the root by default). A folder the host will not list
/// natively (one holding a symbolic link) is listed through the sandbox's shell, links marked and
/// not followed. Recorded as an `ls`.
#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/ls", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    responses((status = 200, body = [Entry], description = "the folder's entries"), Problems<WorkspaceError>))]
pub async fn list_dir(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    q: Query<PathQuery>,
) -> Result<Json<Vec<Entry>>, ApiError> {
    Ok(Json(service::ls(&st, &c, &run_id, &q.path).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PathBody {
    /// Relative to the workspace root, or absolute under `/workspace`; never the root itself.
    #[serde(default)]
    pub path: String,
}

/// Makes a folder in the run's workspace, with its parents. Recorded as a `mkdir`.
#[utoipa::path(post, path = "/api/v1/runs/{run_id}/workspace/mkdir", tag = "workspace", request_body = PathBody,
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 204, description = "the folder exists"), Problems<WorkspaceError>))]
pub async fn make_dir(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    body: Json<PathBody>,
) -> Result<HttpResponse, ApiError> {
    service::mkdir(&st, &c, &run_id, &body.path).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Removes a file, or a folder with everything in it, from the run's workspace. Recorded as a
/// `remove`.
#[utoipa::path(post, path = "/api/v1/runs/{run_id}/workspace/remove", tag = "workspace", request_body = PathBody,
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 204, description = "removed"), Problems<WorkspaceError>))]
pub async fn remove_path(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    body: Json<PathBody>,
) -> Result<HttpResponse, ApiError> {
    service::remove(&st, &c, &run_id, &body.path).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Whether a path of the run's workspace exists, and what it is. A question, not an operation:
/// not recorded.
#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/stat", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    responses((status = 200, body = Entry, description = "what is at the path"), Problems<WorkspaceError>))]
pub async fn stat_path(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    q: Query<PathQuery>,
) -> Result<Json<Entry>, ApiError> {
    Ok(Json(service::stat(&st, &c, &run_id, &q.path).await?))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Briefing {
    /// The runtime this run resolves to (none for a document workspace).
    pub runtime: Option<String>,
    /// The paragraph to append to the run's instructions; none for an alias the catalog does not ship.
    pub briefing: Option<String>,
}

/// The runtime the run's workspace resolves to and the catalog's paragraph about it, for the
/// run's instructions. Read from our rows and the catalog: no host is asked.
#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/briefing", tag = "workspace",
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 200, body = Briefing), Problems<Resolving>))]
pub async fn briefing(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
) -> Result<Json<Briefing>, ApiError> {
    let (runtime, briefing) = service::briefing(&st, &c, &run_id).await?;
    Ok(Json(Briefing { runtime, briefing }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct StateBody {
    /// `not_opened`, `preparing` ("The sandbox is being prepared": a runtime build is pending),
    /// `open`, `lost` (reported to the run that met the loss; any other run opens fresh) or
    /// `finished` (the run is finished: its workspace routes answer 409).
    pub state: WorkspaceState,
    /// The workspace the run resolves to (shared with other runs by its scope).
    pub workspace_id: String,
    /// What names the workspace's session on its host: derived from the scope's subject, the
    /// organization and the connection.
    pub session_key: String,
    /// `sandboxd`, `daytona` or `state`.
    pub backend: String,
    /// Who shares the files: `run`, `conversation`, `channel`, `user` or `agent`.
    pub scope: String,
    /// What the workspace started from when this run opened it new: `restored from the snapshot
    /// of <time>` (the snapshot the run named, or the latest one of a workspace whose files were
    /// gone) or `started empty` (its files were gone and there was no snapshot); null otherwise.
    pub started_from: Option<String>,
}

/// Where the run's workspace stands, from our rows only (no host is asked, nothing is opened).
#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/state", tag = "workspace",
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 200, body = StateBody), Problems<Resolving>))]
pub async fn workspace_state(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
) -> Result<Json<StateBody>, ApiError> {
    let (r, state) = service::state(&st, &c, &run_id).await?;
    let backend = shown_backend(&r);
    Ok(Json(StateBody {
        state,
        workspace_id: r.workspace.id,
        session_key: r.workspace.session_key,
        backend,
        scope: r.workspace.scope.as_str().to_string(),
        started_from: crate::sandbox::snapshots::restore::note_of(&st, &run_id).await?,
    }))
}

/// The backend a client sees: the row's own word (`state`, `sandboxd`, `daytona`).
fn shown_backend(r: &crate::sandbox::workspaces::model::Resolved) -> String {
    r.workspace.backend.clone()
}

/// Ends a run: it is marked finished first (from then on its workspace routes answer 409 and
/// reach no host), its operations are committed, a `run`-scoped workspace is purged on its host,
/// and a loss it met is forgotten so the next run opens fresh. A run of a shared `state`
/// workspace (any scope but `run`) worked on its own view: its changes are merged into the shared
/// document by path. Changes to different paths all land; where a run that finished earlier
/// changed a path otherwise, the earlier version stays; when the merged workspace would grow over
/// the storage limit (files and empty folders count), the shared document stays unchanged. In
/// both cases this run's files are kept in a recovery copy (a workspace of its own, deleted with
/// its source), and the answer's `workspace_error` says what happened and names the copy, whose
/// id is `recovery_workspace_id`. Finishing again changes nothing and asks no host; a purge that
/// fails is logged, and the run is finished either way.
#[utoipa::path(post, path = "/api/v1/runs/{run_id}/finish", tag = "workspace",
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 200, body = Finished, description = "the run, finished, with its `session_state`"),
        Problems<Finishing>))]
pub async fn finish_run(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
) -> Result<Json<Finished>, ApiError> {
    let (run, workspace_id) = service::finish(&st, &c, &run_id).await?;
    let session_state = workspace_id.map(|w| session_state::issue(&st, &c.org_id, &run.agent_id, &w));
    Ok(Json(Finished { run, session_state }))
}

/// A finished run, and the state a later run of the same agent may continue from.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Finished {
    #[serde(flatten)]
    pub run: Run,
    /// Opaque and signed: names this run's workspace. Pass it as `session_state` to
    /// `POST /api/v1/runs` for a later run of the same agent to continue in the same workspace
    /// (refused across organizations and agents, and once the workspace is deleted). Null when
    /// the run had no workspace.
    pub session_state: Option<String>,
}
