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
    /// 1-based page number (default 1; 0 reads as 1).
    pub page: Option<u32>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AuditPage {
    /// The events of this page, newest first.
    pub items: Vec<AuditEvent>,
    /// This page's number, from 1.
    pub page: u32,
    /// How many events a page holds (50).
    pub per_page: u32,
    /// Whether an older page follows (ask for `page` + 1).
    pub has_next: bool,
}

/// The organization's audit log, newest first, 50 events a page (admins and owners, as the Audit
/// log page). Keys, tokens and passwords never appear in it.
#[utoipa::path(get, path = "/api/v1/audit-events", tag = "audit", params(PageQuery),
    responses((status = 200, body = AuditPage),
        (status = 401, description = "No valid API token or session: `https://agenticos.dev/problems/unauthenticated`.", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "Only admins and owners read the audit log: `https://agenticos.dev/problems/forbidden`.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "`page` is not a whole number from 0 to 4294967295: `https://agenticos.dev/problems/invalid-input`.", body = Problem, content_type = "application/problem+json")))]
pub async fn list_events(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    q: Query<PageQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let p = service::page(&st.db, &c, q.page).await?;
    Ok(Json(AuditPage { items: p.items, page: p.page, per_page: p.per_page, has_next: p.has_next }))
}
