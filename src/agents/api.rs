//! JSON: agents (with their sandbox settings), conversations, runs. Request bodies are the
//! services' inputs (documented as `AgentBody`, `ConversationBody`, `RunBody`).

use actix_web::web::{Data, Json, Path, Query};
use actix_web::HttpResponse;
use serde::{Deserialize, Serialize};

use super::check::AgentInput;
use super::conversations::service::{self as conversations, ConversationInput};
use super::error::AgentError;
use super::model::{Agent, AgentSummary, Conversation, ConversationList, Paging, Run, RunList};
use super::runs::service::{self as runs, RunInput, RunsQuery};
use super::service;
use crate::api_route;
use crate::sandbox::connections::error::ConnectionError;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
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

crate::error_subset! {
    /// The agents: operators and above.
    pub struct Listing: AgentError only AgentError::Forbidden | AgentError::Internal(_)
}

crate::error_subset! {
    /// One agent, read: no input to refuse.
    pub struct Reading: AgentError except AgentError::Invalid(_)
}

crate::error_subset! {
    /// A page of conversations or runs: whatever the caller may see, only the query is checked.
    pub struct Page: AgentError only AgentError::Invalid(_) | AgentError::Internal(_)
}

crate::error_subset! {
    /// A new conversation or run: what it names is checked as input (an unknown agent is 422).
    pub struct Starting: AgentError except AgentError::NotFound
}

crate::error_subset! {
    /// One conversation or run: one the caller may not see is not found.
    pub struct Visible: AgentError only AgentError::NotFound | AgentError::Internal(_)
}

/// 201 with what was created.
fn created(body: impl Serialize) -> HttpResponse {
    HttpResponse::Created().json(body)
}

/// The organization's agents by name, as the agents page lists them (operators and above): each
/// one's sandbox settings as a summary, without the contents of its skills and manifest files —
/// `GET /api/v1/agents/{id}` answers the whole agent.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents", responses((status = 200, body = [AgentSummary]),
        Problems<Listing>))]
pub async fn list_agents(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Vec<AgentSummary>>, ApiError> {
    Ok(Json(service::list(&st, &c).await?))
}

/// Creates (publishes) an agent with its sandbox settings (builders and above); settings that
/// could never work are refused.
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentInput,
    responses((status = 201, body = Agent), Problems<AgentError>))]
pub async fn create_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<AgentInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(service::create(&st, &c, body.into_inner(), None).await?))
}

/// One agent with its settings, skills and manifest files included (operators and above, as the
/// agents page; a member is refused like the list).
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents", params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), Problems<Reading>))]
pub async fn get_agent(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::get(&st, &c, &id).await?))
}

/// Replaces an agent's sandbox settings (builders and above); the same checks as creating one.
#[utoipa::path(put, path = "/api/v1/agents/{id}", tag = "agents", request_body = AgentInput,
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Agent), Problems<AgentError>))]
pub async fn update_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
    body: Json<AgentInput>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(service::update(&st, &c, &id, body.into_inner(), None).await?))
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
    responses((status = 200, body = Runtimes), Problems<(Reading, ConnectionError)>))]
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
    responses((status = 200, body = ConversationList), Problems<Page>))]
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
    responses((status = 201, body = Conversation), Problems<Starting>))]
pub async fn create_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<ConversationInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(conversations::create(&st, &c, body.into_inner()).await?))
}

/// One conversation: for operators and above, or a member who is in it (as its page).
#[utoipa::path(get, path = "/api/v1/conversations/{id}", tag = "agents", params(("id" = String, Path, description = "conversation id")),
    responses((status = 200, body = Conversation), Problems<Visible>))]
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
    responses((status = 200, body = RunList), Problems<Page>))]
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
    responses((status = 201, body = Run), Problems<Starting>))]
pub async fn create_run(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    body: Json<RunInput>,
) -> Result<HttpResponse, ApiError> {
    Ok(created(runs::create(&st, &c, body.into_inner()).await?))
}

/// One run: for operators and above, or a member of its conversation (as the conversation's page).
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "agents", params(("id" = String, Path, description = "run id")),
    responses((status = 200, body = Run), Problems<Visible>))]
pub async fn get_run(st: Data<AppState>, ApiCaller(c): ApiCaller, id: Path<String>) -> Result<Json<Run>, ApiError> {
    Ok(Json(runs::get(&st, &c, &id).await?))
}
