//! JSON: the audit log.

use actix_web::web::{Data, Json, Query};
use serde::{Deserialize, Serialize};

use super::model::AuditEvent;
use super::service;
use crate::api_route;
use crate::state::AppState;
use crate::web::error::Problem;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![api_route!(GET "/api/v1/audit-events" => list_events)]
}

#[derive(Deserialize, utoipa::IntoParams)]
pub struct PageQuery {
    /// 1-based page number.
    pub page: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AuditPage {
    pub items: Vec<AuditEvent>,
    pub page: u32,
    pub per_page: u32,
    pub has_next: bool,
}

#[utoipa::path(get, path = "/api/v1/audit-events", tag = "audit", params(PageQuery),
    responses((status = 200, body = AuditPage), (status = 403, body = Problem, content_type = "application/problem+json")))]
pub async fn list_events(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    q: Query<PageQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let p = service::page(&st.db, &c, q.page).await?;
    Ok(Json(AuditPage { items: p.items, page: p.page, per_page: p.per_page, has_next: p.has_next }))
}
