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
use crate::agents::error::AgentError;
use crate::agents::service as agents;
use crate::api_route;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
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

crate::error_subset! {
    /// A workspace's snapshots: our rows only.
    pub struct Listing: WorkspaceError only WorkspaceError::NotFound(_) | WorkspaceError::Internal(_)
}

crate::error_subset! {
    /// One snapshot's archive, read from the snapshot store.
    pub struct Archive: WorkspaceError only WorkspaceError::NotFound(_)
        | WorkspaceError::StoreNoAnswer { .. }
        | WorkspaceError::StoreFailed { .. }
        | WorkspaceError::Internal(_)
}

crate::error_subset! {
    /// The agent whose snapshot settings these are: one of another organization is not found.
    pub struct OfAgent: AgentError except AgentError::Invalid(_)
}

crate::error_subset! {
    /// Reading an agent's snapshot settings: operators and above.
    pub struct Viewing: WorkspaceError only WorkspaceError::Forbidden(_) | WorkspaceError::Internal(_)
}

crate::error_subset! {
    /// Setting them: roles that edit agents, and settings in range.
    pub struct Configuring: WorkspaceError only
        WorkspaceError::Forbidden(_) | WorkspaceError::Invalid(_) | WorkspaceError::Internal(_)
}

/// The workspace's snapshots, newest first: time, size and file count each.
#[utoipa::path(get, path = "/api/v1/workspaces/{id}/snapshots", tag = "snapshots",
    params(("id" = String, Path, description = "workspace id (a run's workspace `state` names it)")),
    responses((status = 200, body = [Snapshot]), Problems<Listing>))]
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
    responses((status = 201, body = Snapshot), Problems<WorkspaceError>))]
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
        Problems<Archive>))]
pub async fn snapshot_archive(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let s = service::get(&st, &c, &id).await?;
    let stream = st
        .snapshots
        .get(&s.object_key)
        .await
        .map_err(|e| st.snapshots.read_refusal(e, "the download did not start"))?;
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
    responses((status = 200, body = Settings), Problems<(Viewing, OfAgent)>))]
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
    responses((status = 200, body = Settings), Problems<(Configuring, OfAgent)>))]
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
