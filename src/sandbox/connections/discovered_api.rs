//! JSON: `GET /api/v1/sandbox-connections/discovered`, the engine's sandboxd containers.

use actix_web::web::{Data, Json};

use super::discovered::{self, Discovery};
use super::error::ConnectionError;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::{ApiCaller, ApiError};

crate::error_subset! {
    /// Discovering asks the local Docker engine, not a host through a connection.
    pub struct Discovering: ConnectionError only ConnectionError::Forbidden | ConnectionError::Internal(_)
}

/// The sandboxd containers this deployment's Docker engine runs, by image name (any tag), for
/// builders and above (those who add connections): each one's name, state, image tag against
/// `catalog/sandboxd.version` (a mismatch is the version-mismatch message naming the image; no
/// request is ever sent to a container) and the address it publishes on loopback. Read from the
/// engine's container list only: no container's environment is read. A container whose address a
/// connection of the organization already reaches (any spelling of it) names that connection in
/// `connected_as` and is not offered again. Without a configured engine
/// (`AGENTICOS_DOCKER_SOCKET`, `DOCKER_HOST`): `engine_enabled` false and an empty list.
#[utoipa::path(get, path = "/api/v1/sandbox-connections/discovered", tag = "sandbox connections",
    responses((status = 200, body = Discovery), Problems<Discovering>))]
pub async fn discovered_containers(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<Discovery>, ApiError> {
    Ok(Json(discovered::discover(&st, &c).await?))
}
