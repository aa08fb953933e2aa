//! JSON: the audit log.

use actix_web::web::{Data, Json, Query};
use serde::{Deserialize, Serialize};

use super::error::AuditError;
use super::filter::FilterInput;
use super::model::AuditEvent;
use super::service;
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::Problems;
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError};

pub fn routes() -> Vec<ApiRoute> {
    vec![api_route!(GET "/api/v1/audit-events" => list_events)]
}

/// A page of the log and its filters; an empty filter filters nothing.
#[derive(Deserialize, utoipa::IntoParams)]
pub struct AuditQuery {
    /// 1-based page number (50 events a page).
    pub page: Option<u32>,
    /// Part of who did it (an e-mail address, `… (token NAME)`, `sign-in`), any case.
    pub actor: Option<String>,
    /// One event code, e.g. `member.invited`.
    pub event: Option<String>,
    /// From this time on (inclusive): epoch milliseconds, or a UTC time written
    /// `2026-12-02`, `2026-12-02T14:30`, `2026-12-02T14:30:05` or RFC 3339
    /// (`2026-12-02T14:30:05Z`, `…+01:00`).
    pub from: Option<String>,
    /// Until this time (inclusive, to the end of the day, minute or second written), in the same
    /// forms as `from`.
    pub to: Option<String>,
}

impl AuditQuery {
    pub fn filters(&self) -> FilterInput {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        FilterInput { actor: text(&self.actor), event: text(&self.event), from: text(&self.from), to: text(&self.to) }
    }
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

/// The organization's audit log, newest first, filtered by actor, event and time (admins and owners).
#[utoipa::path(get, path = "/api/v1/audit-events", tag = "audit", params(AuditQuery),
    responses((status = 200, body = AuditPage), Problems<AuditError>))]
pub async fn list_events(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    q: Query<AuditQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let p = service::page(&st.db, &c, q.page, &q.filters()).await?;
    Ok(Json(AuditPage { items: p.items, page: p.page, per_page: p.per_page, has_next: p.has_next }))
}
