//! JSON: the workspace of a run, for agent runtimes (`/api/v1/runs/{run_id}/workspace/...`).
//! Paths are relative to the workspace root or absolute under `/workspace`; escapes are refused
//! with 400, and a write, mkdir or remove without a `path` with 422 naming it, before anything
//! reaches a host.

use std::collections::BTreeMap;

use actix_web::web::{Bytes, Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::command::{ExecInput, OutputEncoding};
use super::model::{Entry, ExecResult, WorkspaceState};
use super::service;
use crate::agents::model::Run;
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
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
/// and the output limit are answered 200 and recorded as failed operations.
#[utoipa::path(post, path = "/api/v1/runs/{run_id}/workspace/exec", tag = "workspace", request_body = ExecBody,
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 200, body = ExecResult), (status = 400, body = Problem, content_type = "application/problem+json", description = "bad input: no command, a NUL byte, a bad `env` name, over the length a sandbox can start, a timeout out of range"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "the run is finished, the shell is off, the connection is switched off"),
        (status = 410, body = Problem, content_type = "application/problem+json", description = "the workspace's files are gone"),
        (status = 429, body = Problem, content_type = "application/problem+json", description = "the host's per-tenant cap"),
        (status = 502, body = Problem, content_type = "application/problem+json")))]
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

#[derive(Deserialize, utoipa::IntoParams)]
pub struct PathQuery {
    /// Relative to the workspace root, or absolute under `/workspace`.
    #[serde(default)]
    pub path: String,
}

#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/files", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    responses((status = 200, content_type = "application/octet-stream", description = "the file's bytes"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 413, body = Problem, content_type = "application/problem+json", description = "the file is over 8 MiB")))]
pub async fn read_file(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    q: Query<PathQuery>,
) -> Result<HttpResponse, ApiError> {
    let bytes = service::read(&st, &c, &run_id, &q.path).await?;
    Ok(HttpResponse::Ok().content_type("application/octet-stream").body(bytes))
}

#[utoipa::path(put, path = "/api/v1/runs/{run_id}/workspace/files", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 204, description = "written; parent folders are created"),
        (status = 413, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "no `path`: the field error names it")))]
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

#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/ls", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    responses((status = 200, body = [Entry]), (status = 404, body = Problem, content_type = "application/problem+json")))]
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
    #[serde(default)]
    pub path: String,
}

#[utoipa::path(post, path = "/api/v1/runs/{run_id}/workspace/mkdir", tag = "workspace", request_body = PathBody,
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 204), (status = 409, body = Problem, content_type = "application/problem+json", description = "a file is already at this path"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "no `path`: the field error names it")))]
pub async fn make_dir(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    body: Json<PathBody>,
) -> Result<HttpResponse, ApiError> {
    service::mkdir(&st, &c, &run_id, &body.path).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = "/api/v1/runs/{run_id}/workspace/remove", tag = "workspace", request_body = PathBody,
    params(("run_id" = String, Path, description = "run id")),
    responses((status = 204), (status = 403, body = Problem, content_type = "application/problem+json", description = "the path leads (through a symbolic link) to the workspace root"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json", description = "no `path`: the field error names it")))]
pub async fn remove_path(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
    body: Json<PathBody>,
) -> Result<HttpResponse, ApiError> {
    service::remove(&st, &c, &run_id, &body.path).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/stat", tag = "workspace", params(("run_id" = String, Path, description = "run id"), PathQuery),
    responses((status = 200, body = Entry), (status = 404, body = Problem, content_type = "application/problem+json", description = "gone")))]
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

#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/briefing", tag = "workspace",
    params(("run_id" = String, Path, description = "run id")), responses((status = 200, body = Briefing)))]
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
    pub workspace_id: String,
    pub session_key: String,
    /// `sandboxd` or `state`.
    pub backend: String,
    pub scope: String,
}

#[utoipa::path(get, path = "/api/v1/runs/{run_id}/workspace/state", tag = "workspace",
    params(("run_id" = String, Path, description = "run id")), responses((status = 200, body = StateBody)))]
pub async fn workspace_state(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
) -> Result<Json<StateBody>, ApiError> {
    let (r, state) = service::state(&st, &c, &run_id).await?;
    Ok(Json(StateBody {
        state,
        workspace_id: r.workspace.id,
        session_key: r.workspace.session_key,
        backend: r.workspace.backend,
        scope: r.workspace.scope.as_str().to_string(),
    }))
}

#[utoipa::path(post, path = "/api/v1/runs/{run_id}/finish", tag = "workspace",
    params(("run_id" = String, Path, description = "run id")), responses((status = 200, body = Run)))]
pub async fn finish_run(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    run_id: Path<String>,
) -> Result<Json<Run>, ApiError> {
    Ok(Json(service::finish(&st, &c, &run_id).await?))
}
