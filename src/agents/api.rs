//! JSON: agents (with their sandbox settings), conversations, runs. Request bodies are the
//! services' inputs (documented as `AgentBody`, `ConversationBody`, `RunBody`).

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::check::AgentInput;
use super::conversations::service::{self as conversations, ConversationInput};
use super::model::{Agent, AgentSummary, Conversation, ConversationList, Paging, Run, RunList};
use super::runs::service::{self as runs, RunInput, RunsQuery};
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
        api_route!(GET "/api/v1/conversations" => list_conversations),
        api_route!(POST "/api/v1/conversations" => create_conversation),
        api_route!(GET "/api/v1/conversations/{id}" => get_conversation),
        api_route!(GET "/api/v1/runs" => list_runs),
        api_route!(POST "/api/v1/runs" => create_run),
        api_route!(GET "/api/v1/runs/{id}" => get_run),
    ]
}

/// 201 with what was created.
fn created(body: impl Serialize) -> HttpResponse {
    HttpResponse::Created().json(body)
}

/// The organization's agents by name, as the agents page lists them (operators and above): each
/// one's sandbox settings as a summary, without the contents of its skills and manifest files —
/// `GET /api/v1/agents/{id}` answers the whole agent.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", responses((status = 200, body = [AgentSummary]),
    (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "A member may not see the agents: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json")))]
pub async fn list_agents(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<AgentSummary>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

/// Creates (publishes) an agent with its sandbox settings (builders and above); settings that
/// could never work are refused.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentInput,
    responses((status = 201, body = Agent), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "Only builders and above edit agents: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
    (status = 422, description = "A name taken or missing, an unknown backend or scope, a connection that cannot serve, a runtime neither the catalog nor the host knows, `shell_enabled` on `state`, a bad file: `https://agenticos.dev/problems/invalid-input`, each message at its field.", body = Problem, content_type = "application/problem+json")))]
pub async fn create_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<AgentInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(service::create(&st, &c, body.into_inner()).await?))
}

/// One agent with its settings, skills and manifest files included (operators and above, as the
/// agents page; a member is refused like the list).
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents", params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "A member may not see agents: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
    (status = 404, description = "No such agent in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn get_agent(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::get(&st, &c, &id).await?))
}

/// Replaces an agent's sandbox settings (builders and above); the same checks as creating one.
#[utoipa::path(put, path = "/api/v1/agents/{id}", tag = "agents", request_body = AgentInput,
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "Only builders and above edit agents: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
    (status = 404, description = "No such agent in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
    (status = 422, description = "As for creating an agent: `https://agenticos.dev/problems/invalid-input`, each message at its field.", body = Problem, content_type = "application/problem+json")))]
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

/// The runtimes the agent's connection's host allows right now (asked live).
#[utoipa::path(get, path = "/api/v1/agents/{id}/runtimes", tag = "agents", params(("id" = String, Path, description = "agent id"), RuntimesQuery),
    responses((status = 200, body = Runtimes), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "A member may not see agents or hosts: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
    (status = 404, description = "No such agent or connection in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
    (status = 502, description = "The host could not be asked or did not answer well: `https://agenticos.dev/problems/bad-gateway`.", body = Problem, content_type = "application/problem+json")))]
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

/// The conversations the caller may see, newest first, one page at a time: all of the
/// organization's for operators and above, only those a member is in otherwise.
#[utoipa::path(get, path = "/api/v1/conversations", tag = "agents", params(Paging),
    responses((status = 200, body = ConversationList),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`limit` outside 1 to 200: `https://agenticos.dev/problems/invalid-input`, naming `limit`.", body = Problem, content_type = "application/problem+json")))]
pub async fn list_conversations(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    q: Query<Paging>,
) -> Result<Json<ConversationList>, ApiError> {
    Ok(Json(conversations::page(&st, &c, q.into_inner()).await?))
}

/// Starts a conversation with an agent, owned by the caller and shared with the members named
/// (operators and above).
#[utoipa::path(post, path = "/api/v1/conversations", tag = "agents", request_body = ConversationInput,
    responses((status = 201, body = Conversation), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "A member may not start conversations here: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
    (status = 422, description = "An unknown agent, a title missing, a person who is not a member, a channel key too long: `https://agenticos.dev/problems/invalid-input`, each message at its field.", body = Problem, content_type = "application/problem+json")))]
pub async fn create_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<ConversationInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(conversations::create(&st, &c, body.into_inner()).await?))
}

/// One conversation: for operators and above, or a member who is in it (as its page).
#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "agents", params(("id" = String, Path, description = "conversation id")),
    responses((status = 200, body = Conversation), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 404, description = "No such conversation in this organization, or a member who is not in it: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn get_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Conversation>, ApiError> {
    Ok(Json(conversations::get(&st, &c, &id).await?))
}

/// The runs the caller may see, newest first, one page at a time, narrowed by agent, conversation
/// and status: all of the organization's for operators and above; for a member, only the runs of
/// the conversations they are in (as those conversations' pages show them).
#[utoipa::path(get, path = "/api/v1/runs", tag = "agents", params(RunsQuery),
    responses((status = 200, body = RunList),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`limit` outside 1 to 200 or an unknown `status`: `https://agenticos.dev/problems/invalid-input`, naming the field.", body = Problem, content_type = "application/problem+json")))]
pub async fn list_runs(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    q: Query<RunsQuery>,
) -> Result<Json<RunList>, ApiError> {
    Ok(Json(runs::page(&st, &c, q.into_inner()).await?))
}

/// Starts a run of an agent (operators and above). A run its agent's scope could never give a
/// workspace is refused: a `conversation` or `channel` scope needs its conversation (of a
/// channel), a `user` scope a signed-in person (no widget run; a trigger only as its creator).
#[utoipa::path(post, path = "/api/v1/runs", tag = "agents", request_body = RunInput,
    responses((status = 201, body = Run), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 403, description = "A member may not start runs here: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
    (status = 422, description = "An unknown agent or conversation, a person who is not a member, a scope without its subject: `https://agenticos.dev/problems/invalid-input`, each message at its field.", body = Problem, content_type = "application/problem+json")))]
pub async fn create_run(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<RunInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(runs::create(&st, &c, body.into_inner()).await?))
}

/// One run: for operators and above, or a member of its conversation (as the conversation's page).
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "agents", params(("id" = String, Path, description = "run id")),
    responses((status = 200, body = Run), (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
    (status = 404, description = "No such run in this organization, or a member who is not in its conversation: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn get_run(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Run>, ApiError> {
    Ok(Json(runs::get(&st, &c, &id).await?))
}
