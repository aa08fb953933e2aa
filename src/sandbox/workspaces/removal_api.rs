//! JSON: deleting a conversation or an agent with its workspaces (DESIGN.md §10).

use actix_web::web::{Data, Json, Path};

use super::removal::{self, Removal};
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(DELETE "/api/v1/conversations/{id}" => delete_conversation),
        api_route!(DELETE "/api/v1/agents/{id}" => delete_agent),
    ]
}

/// Deletes a conversation with its runs and workspaces (operators and above, or its owner). The
/// workspace rows go and, in the same transaction, one tombstone per sandbox at a host; then each
/// sandbox is destroyed (`DELETE /sessions/{id}?purge=true`). One that cannot be destroyed now (a
/// host down, a key revoked) stays pending: the `sandbox-destroy-retry` sweep retries it, the
/// pause doubling from 2 minutes to 6 hours, and its connection's row shows it. `state`
/// workspaces are only rows. Audited as `conversation.deleted`.
#[utoipa::path(delete, path = "/api/v1/conversations/{id}", tag = "agents",
    params(("id" = String, Path, description = "conversation id")),
    responses((status = 200, body = Removal, description = "what was removed, and how many sandboxes are still pending removal"),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A member who does not own the conversation: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such conversation in this organization, or a member who is not in it: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn delete_conversation(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Removal>, ApiError> {
    Ok(Json(removal::delete_conversation(&st, &c, &id).await?))
}

/// Deletes an agent with its conversations, runs and workspaces of every scope (builders and
/// above), as deleting a conversation does: tombstones in the same transaction, then the
/// destroys; what fails stays pending for the sweep. Audited as `agent.deleted`.
#[utoipa::path(delete, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "agent id")),
    responses((status = 200, body = Removal, description = "what was removed, and how many sandboxes are still pending removal"),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only builders and above delete agents: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such agent in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json")))]
pub async fn delete_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Removal>, ApiError> {
    Ok(Json(removal::delete_agent(&st, &c, &id).await?))
}
