//! JSON: `GET /api/v1/health`, the organization's "is everything OK?" for scripts.

use actix_web::web::{Data, Json};

use super::model::HealthReport;
use super::service;
use crate::api_route;
use crate::sandbox::connections::api::Listing;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![api_route!(GET "/api/v1/health" => health)]
}

/// This organization at a glance, as the console's Home shows it: each connection's last known
/// state as the background host check keeps it, with when that check began (no host is asked
/// here; `state` is null only before the host's first check), the sandboxes waiting to be destroyed
/// at their hosts, each sweep's last run on this console, and the workspace operations that failed
/// in the last hour. `ok` is false when an enabled connection's state is a problem, a pending
/// delete failed, or a sweep's last run failed. Roles that may see sandboxes (403 otherwise).
#[utoipa::path(get, path = "/api/v1/health", tag = "sandboxes",
    responses((status = 200, body = HealthReport), Problems<Listing>))]
pub async fn health(st: Data<AppState>, ApiCaller(c): ApiCaller) -> Result<Json<HealthReport>, ApiError> {
    Ok(Json(service::health(&st, &c, crate::db::now_ms()).await?))
}
