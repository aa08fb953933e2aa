//! JSON: this organization's running sandbox sessions.

use actix_web::web::{Data, Json, Query};

use super::model::RunningSessions;
use super::service;
use super::UsageQuery;
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![api_route!(GET "/api/v1/sandbox-sessions" => list_sandbox_sessions)]
}

/// This organization's sessions on each switched-on sandboxd connection (never another tenant's),
/// with the host-wide counts. A host that cannot be read carries a `problem` instead of sessions.
#[utoipa::path(get, path = "/api/v1/sandbox-sessions", tag = "sandboxes", params(UsageQuery),
    responses((status = 200, body = RunningSessions),
        (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn list_sandbox_sessions(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    query: Query<UsageQuery>,
) -> Result<Json<RunningSessions>, ApiError> {
    Ok(Json(service::list(&st, &c, query.usage()).await?))
}
