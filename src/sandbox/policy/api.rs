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
        (status = 403, body = Problem, content_type = "application/problem+json"),
        (status = 404, body = Problem, content_type = "application/problem+json"),
        (status = 409, body = Problem, content_type = "application/problem+json", description = "no credential, or not a sandboxd connection"),
        (status = 502, body = Problem, content_type = "application/problem+json", description = "the host did not answer, refused the key, or is another release")))]
pub async fn get_connection_policy(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<HostPolicy>, ApiError> {
    Ok(Json(service::read(&st, &c, &id).await?))
}
