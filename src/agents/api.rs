//! JSON: agents (with their sandbox settings), conversations, runs. Request bodies are the
//! services' inputs (documented as `AgentBody`, `ConversationBody`, `RunBody`).

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::check::AgentInput;
use super::conversations::service::{self as conversations, ConversationInput};
use super::model::{Agent, Conversation, Run};
use super::runs::service::{self as runs, RunInput};
use super::service;
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

/// 201 with what was created.
fn created(body: impl Serialize) -> HttpResponse {
    HttpResponse::Created().json(body)
}

#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", responses((status = 200, body = [Agent])))]
pub async fn list_agents(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<Agent>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentInput,
    responses((status = 201, body = Agent), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<AgentInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(service::create(&st, &c, body.into_inner()).await?))
}

#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents", params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_agent(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::get(&st, &c, &id).await?))
}

#[utoipa::path(put, path = "/api/v1/agents/{id}", tag = "agents", request_body = AgentInput,
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn update_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<AgentInput>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::update(&st, &c, &id, body.into_inner()).await?))
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

#[utoipa::path(post, path = "/api/v1/conversations", tag = "agents", request_body = ConversationInput,
    responses((status = 201, body = Conversation), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<ConversationInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(conversations::create(&st, &c, body.into_inner()).await?))
}

#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "agents", params(("id" = String, Path, description = "conversation id")),
    responses((status = 200, body = Conversation), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(conversations::get(&st, &c, &id).await?))
}

#[utoipa::path(post, path = "/api/v1/runs", tag = "agents", request_body = RunInput,
    responses((status = 201, body = Run), (status = 422, body = Problem, content_type = "application/problem+json")))]
pub async fn create_run(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<RunInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(runs::create(&st, &c, body.into_inner()).await?))
}

#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "agents", params(("id" = String, Path, description = "run id")),
    responses((status = 200, body = Run), (status = 404, body = Problem, content_type = "application/problem+json")))]
pub async fn get_run(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Run>, ApiError> {
    Ok(Json(runs::get(&st, &c, &id).await?))
}
