//! JSON: the live policy of one connection.

use actix_web::web::{Data, Json, Path};

use super::model::HostPolicy;
use super::service;
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![api_route!(GET "/api/v1/sandbox-connections/{id}/policy" => get_connection_policy)]
}

/// The runtimes the host allows (marked against this deployment's catalog), its default runtime,
/// the ceilings in force and what needs the operator's attention — read live from the host.
#[utoipa::path(get, path = "/api/v1/sandbox-connections/{id}/policy", tag = "sandboxes",
    params(("id" = String, Path, description = "connection id")),
    responses((status = 200, body = HostPolicy),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "A member may not see sandbox hosts: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such connection in this organization: `https://agenticos.dev/problems/not-found`.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Not a sandboxd connection, no key in the vault, or a key that may not be sent to its address (no request was sent): `https://agenticos.dev/problems/conflict`.", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "The host is at its capacity: `https://agenticos.dev/problems/too-many-requests`.", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The host did not answer, refused the key, or is another release: `https://agenticos.dev/problems/bad-gateway`.", body = Problem, content_type = "application/problem+json")))]
pub async fn get_connection_policy(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<HostPolicy>, ApiError> {
    Ok(Json(service::read(&st, &c, &id).await?))
}
