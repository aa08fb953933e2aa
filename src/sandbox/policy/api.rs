//! JSON: the live policy of one connection.

use actix_web::web::{Data, Json, Path};

use super::error::PolicyError;
use super::model::HostPolicy;
use super::service;
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![api_route!(GET "/api/v1/sandbox-connections/{id}/policy" => get_connection_policy)]
}

/// The runtimes the host allows (marked against this deployment's catalog), its default runtime,
/// the ceilings in force and what needs the operator's attention — read live from the host.
#[utoipa::path(get, path = "/api/v1/sandbox-connections/{id}/policy", tag = "sandboxes",
    params(("id" = String, Path, description = "connection id")),
    responses((status = 200, body = HostPolicy), Problems<PolicyError>))]
pub async fn get_connection_policy(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    id: Path<String>,
) -> Result<Json<HostPolicy>, ApiError> {
    Ok(Json(service::read(&st, &c, &id).await?))
}
