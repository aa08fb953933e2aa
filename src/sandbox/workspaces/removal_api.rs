//! JSON: deleting a conversation or an agent with its workspaces (docs/design.md §10).

use actix_web::web::{Data, Json, Path};

use super::error::WorkspaceError;
use super::removal::{self, Removal};
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        api_route!(DELETE "/api/v1/conversations/{id}" => delete_conversation),
        api_route!(DELETE "/api/v1/agents/{id}" => delete_agent),
    ]
}

crate::error_subset! {
    /// Removing rows: the sandboxes are destroyed afterwards, and one a host does not destroy now
    /// is left pending, not refused.
    pub struct Removing: WorkspaceError only
        WorkspaceError::NotFound(_) | WorkspaceError::Forbidden(_) | WorkspaceError::Internal(_)
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
        Problems<Removing>))]
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
        Problems<Removing>))]
pub async fn delete_agent(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<Removal>, ApiError> {
    Ok(Json(removal::delete_agent(&st, &c, &id).await?))
}
