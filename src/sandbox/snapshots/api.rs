//! JSON: a workspace's snapshots (`/api/v1/workspaces/{id}/snapshots`), one snapshot's archive
//! (`/api/v1/snapshots/{id}/archive`) and an agent's snapshot settings
//! (`/api/v1/agents/{id}/snapshot-settings`). Anything of another organization, or a workspace
//! the caller may not see, is 404.

use actix_web::web::{Data, Json, Path};
use actix_web::HttpResponse;
use futures_util::StreamExt;
use serde::Deserialize;

use super::model::{Settings, Snapshot};
use super::service;
use crate::agents::service as agents;
use crate::api_route;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/workspaces/{id}/snapshots" => list_snapshots),
        api_route!(POST "/api/v1/workspaces/{id}/snapshots" => take_snapshot),
        api_route!(GET "/api/v1/snapshots/{id}/archive" => snapshot_archive),
        api_route!(GET "/api/v1/agents/{id}/snapshot-settings" => get_snapshot_settings),
        api_route!(PUT "/api/v1/agents/{id}/snapshot-settings" => put_snapshot_settings),
    ]
}

/// The workspace's snapshots, newest first: time, size and file count each.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/snapshots", tag = "snapshots",
    params(("id" = String, Path, description = "workspace id (a run's workspace `state` names it)")),
    responses((status = 200, body = [Snapshot]),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such workspace in this organization, or one the caller may not see: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn list_snapshots(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Vec<Snapshot>>, ApiError> {
    Ok(Json(service::list(&st, &c, &id).await?))
}

/// Saves the workspace's files now as one compressed archive (tar + gzip), leaving out the agent's
/// skills, our own folders and toolchain folders (`node_modules/`, `.venv/`, `.git/` …). Read from
/// the host's stored workspace, so a finished run's workspace can be saved too. Older snapshots
/// beyond the agent's `keep_last` are deleted.
#[utoipa::path(post, path = "/api/v1/workspaces/{id}/snapshots", tag = "snapshots",
    params(("id" = String, Path, description = "workspace id")),
    responses((status = 201, body = Snapshot),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such workspace in this organization, or one the caller may not see: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Nothing to save: a document workspace (the state backend), one never opened, or its host gone: `https://agenticos.dev/problems/conflict`.", body = Problem, content_type = "application/problem+json"),
        (status = 410, description = "The host no longer has the workspace's files: `https://agenticos.dev/problems/gone`.", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The host could not be asked or did not answer well: `https://agenticos.dev/problems/bad-gateway`; or the snapshot store failed: `https://agenticos.dev/problems/store-failed`.", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "The snapshot store did not answer within its deadlines (`AGENTICOS_SNAPSHOT_*_TIMEOUT_SECONDS`), or the whole snapshot took longer than its own: `https://agenticos.dev/problems/store-timeout`.", body = Problem, content_type = "application/problem+json")))]
pub async fn take_snapshot(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let s = service::take_on_demand(&st, &c, &id).await?;
    Ok(HttpResponse::Created().json(s))
}

/// The snapshot's archive (`application/gzip`, a tar inside), streamed from the store.
#[utoipa::path(get, path = "/api/v1/snapshots/{id}/archive", tag = "snapshots",
    params(("id" = String, Path, description = "snapshot id")),
    responses((status = 200, description = "the archive", content_type = "application/gzip", body = Vec<u8>),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such snapshot in this organization, or of a workspace the caller may not see: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The snapshot store failed: `https://agenticos.dev/problems/store-failed`.", body = Problem, content_type = "application/problem+json"),
        (status = 504, description = "The snapshot store did not answer in time: `https://agenticos.dev/problems/store-timeout`.", body = Problem, content_type = "application/problem+json")))]
pub async fn snapshot_archive(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let s = service::get(&st, &c, &id).await?;
    let stream = st.snapshots.get(&s.object_key).await.map_err(|e| st.snapshots.refusal(e))?;
    let body = stream.map(|r| r.map_err(|e| std::io::Error::other(e.to_string())));
    Ok(HttpResponse::Ok()
        .content_type("application/gzip")
        .insert_header(("Content-Disposition", format!("attachment; filename=\"snapshot-{}.tar.gz\"", s.id)))
        .streaming(body))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    /// `never` (the default), `on_finish` or `on_finish_when_changed` (a recorded write, mkdir,
    /// remove or command since the latest snapshot).
    #[serde(default)]
    pub snapshots: String,
    /// How many snapshots of each workspace are kept, 1 to 100 (default 5).
    #[serde(default)]
    pub keep_last: Option<i64>,
}

/// The agent, of the caller's organization (404 otherwise).
async fn agent_of_org(st: &AppState, caller: &crate::access::Caller, id: &str) -> Result<(), ApiError> {
    agents::get(st, caller, id).await.map(|_| ()).map_err(ApiError::from)
}

/// When the agent's runs take a snapshot at their end, and how many are kept.
#[utoipa::path(get, path = "/api/v1/agents/{id}/snapshot-settings", tag = "snapshots",
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Settings),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A role below operator: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn get_snapshot_settings(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Settings>, ApiError> {
    if !c.role.can_see_sandboxes() {
        return Err(WorkspaceError::Forbidden("Operators and above see agents' settings.".into()).into());
    }
    agent_of_org(&st, &c, &id).await?;
    Ok(Json(service::settings(&st, &id).await?))
}

/// Sets when the agent's runs take a snapshot at their end, and how many are kept.
#[utoipa::path(put, path = "/api/v1/agents/{id}/snapshot-settings", tag = "snapshots", request_body = SettingsBody,
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Settings),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A role that may not edit agents: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A setting out of range, naming it: `https://agenticos.dev/problems/invalid-input`.", body = Problem, content_type = "application/problem+json")))]
pub async fn put_snapshot_settings(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<SettingsBody>,
) -> Result<Json<Settings>, ApiError> {
    if !c.role.can_edit_agents() {
        return Err(WorkspaceError::Forbidden("Your role in this organization may not edit agents.".into()).into());
    }
    agent_of_org(&st, &c, &id).await?;
    let b = body.into_inner();
    Ok(Json(service::put_settings(&st, &c.org_id, &id, &b.snapshots, b.keep_last).await?))
}
