//! JSON: agents (with their sandbox settings), conversations, runs.

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::model::{Agent, Conversation, Run, WorkspaceFile};
use super::service::{self, AgentInput, ConversationInput, RunInput};
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(GET "/api/v1/agents" => list_agents),
        api_route!(POST "/api/v1/agents" => create_agent),
        api_route!(GET "/api/v1/agents/{id}" => get_agent),
        api_route!(PUT "/api/v1/agents/{id}" => update_agent),
        api_route!(GET "/api/v1/agents/{id}/runtimes" => agent_runtimes),
        api_route!(POST "/api/v1/conversations" => create_conversation),
        api_route!(GET "/api/v1/conversations/{id}" => get_conversation),
        api_route!(POST "/api/v1/runs" => create_run),
        api_route!(GET "/api/v1/runs/{id}" => get_run),
    ]
}

/// An agent's sandbox settings. Saving publishes them; incoherent settings are refused.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentBody {
    #[serde(default)]
    pub name: String,
    /// `state` (a document; files only) or `service` (a sandbox host; files and a shell).
    #[serde(default)]
    pub backend: String,
    /// None: the organization's default connection (`service` only).
    #[serde(default)]
    pub connection_id: Option<String>,
    /// `run`, `conversation`, `channel`, `user` or `agent` (with `agent`, every user of the agent
    /// reads each other's files).
    #[serde(default)]
    pub scope: String,
    /// A runtime alias; none: the connection's default.
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default = "yes")]
    pub shell_enabled: bool,
    /// Written under `skills/` at each run's first workspace operation.
    #[serde(default)]
    pub skills: Vec<WorkspaceFile>,
    /// Files and empty folders written into a new workspace.
    #[serde(default)]
    pub manifest_files: Vec<WorkspaceFile>,
}

fn yes() -> bool {
    true
}

impl From<AgentBody> for AgentInput {
    fn from(b: AgentBody) -> Self {
        AgentInput {
            name: b.name,
            backend: b.backend,
            connection_id: b.connection_id,
            scope: b.scope,
            runtime: b.runtime,
            shell_enabled: b.shell_enabled,
            skills: b.skills,
            manifest_files: b.manifest_files,
        }
    }
}

#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", responses((status = 200, body = [Agent])))]
pub async fn list_agents(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Agent>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentBody,
    responses((status = 201, body = Agent), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<AgentBody>,
) -> Result<HttpResponse, ApiError> {
    let a = service::create(&st, &c, body.into_inner().into()).await?;
    Ok(HttpResponse::Created().json(a))
}

#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents", params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_agent(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::get(&st, &c, &id).await?))
}

#[utoipa::path(put, path = "/api/v1/agents/{id}", tag = "agents", request_body = AgentBody,
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn update_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<AgentBody>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::update(&st, &c, &id, body.into_inner().into()).await?))
}

#[derive(Deserialize, utoipa::IntoParams)]
pub struct RuntimesQuery {
    /// The connection to ask (default: the agent's, else the organization's default).
    pub connection_id: Option<String>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Runtimes {
    /// What the host allows right now.
    pub runtimes: Vec<String>,
}

#[utoipa::path(get, path = "/api/v1/agents/{id}/runtimes", tag = "agents", params(("id" = String, Path, description = "agent id"), RuntimesQuery),
    responses((status = 200, body = Runtimes), (status = 502, body = Problem, content_type = "application/problem+json")))]
pub async fn agent_runtimes(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    q: Query<RuntimesQuery>,
) -> Result<Json<Runtimes>, ApiError> {
    let agent = service::get(&st, &c, &id).await?;
    let conn = q.connection_id.clone().or(agent.connection_id);
    Ok(Json(Runtimes { runtimes: service::live_runtimes(&st, &c, conn.as_deref()).await? }))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationBody {
    #[serde(default)]
    pub agent_id: String,
    #[serde(default)]
    pub title: String,
    /// Members it is shared with (the creator is its owner and a member).
    #[serde(default)]
    pub member_user_ids: Vec<String>,
    /// The channel it belongs to (for `channel` scope).
    #[serde(default)]
    pub channel_key: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/conversations", tag = "agents", request_body = ConversationBody,
    responses((status = 201, body = Conversation), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<ConversationBody>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let conv = service::create_conversation(
        &st,
        &c,
        ConversationInput {
            agent_id: b.agent_id,
            title: b.title,
            member_user_ids: b.member_user_ids,
            channel_key: b.channel_key,
        },
    )
    .await?;
    Ok(HttpResponse::Created().json(conv))
}

#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "agents", params(("id" = String, Path, description = "conversation id")),
    responses((status = 200, body = Conversation), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(service::get_conversation(&st, &c, &id).await?))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    #[serde(default)]
    pub agent_id: String,
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// `member`, `widget`, `trigger`, `channel` or `api`.
    #[serde(default)]
    pub started_by: String,
    /// The person the run acts for (member, api; a trigger's creator).
    #[serde(default)]
    pub user_id: Option<String>,
    #[serde(default)]
    pub trigger_as_creator: bool,
    /// A channel sender's platform id.
    #[serde(default)]
    pub channel_sender: Option<String>,
}

#[utoipa::path(post, path = "/api/v1/runs", tag = "agents", request_body = RunBody,
    responses((status = 201, body = Run), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_run(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<RunBody>,
) -> Result<HttpResponse, ApiError> {
    let b = body.into_inner();
    let run = service::create_run(
        &st,
        &c,
        RunInput {
            agent_id: b.agent_id,
            conversation_id: b.conversation_id,
            started_by: b.started_by,
            user_id: b.user_id,
            trigger_as_creator: b.trigger_as_creator,
            channel_sender: b.channel_sender,
        },
    )
    .await?;
    Ok(HttpResponse::Created().json(run))
}

#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "agents", params(("id" = String, Path, description = "run id")),
    responses((status = 200, body = Run), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_run(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Run>, ApiError> {
    Ok(Json(service::get_run(&st, &c, &id).await?))
}
