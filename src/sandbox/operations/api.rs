//! JSON: the operation log, and its export.

use actix_web::http::header;
use actix_web::web::{Data, Json};
use actix_web::{HttpRequest, HttpResponse};
use serde::Deserialize;

use super::error::OperationsError;
use super::export::{self, Format};
use super::filter::FilterInput;
use super::model::OperationsPage;
use super::service;
use crate::api_route;
use crate::state::AppState;
use crate::web::openapi_errors::{Input, Problems};
use crate::web::route::ApiRoute;
use crate::web::{ApiCaller, ApiError, AppError, FieldErrors};

pub fn routes() -> Vec<ApiRoute> {
    vec![
        // Before any `/api/v1/operations/{id}` route there may ever be.
        api_route!(GET "/api/v1/operations/export" => export_operations),
        api_route!(GET "/api/v1/operations" => list_operations),
    ]
}

/// The log's filters; every one given applies (AND), an empty one filters nothing.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct OperationsQuery {
    /// One host session's rows (its key, as the Running tab shows it).
    session_key: Option<String>,
    /// One workspace's rows (a UUID).
    workspace_id: Option<String>,
    /// One connection's (host's) rows (a UUID).
    connection_id: Option<String>,
    /// One agent's rows (a UUID).
    agent_id: Option<String>,
    /// One run's rows (a UUID).
    run_id: Option<String>,
    /// One conversation's rows (a UUID).
    conversation_id: Option<String>,
    /// Only these operations: `read`, `write`, `ls`, `mkdir`, `remove`, `execute`; repeat the
    /// parameter or separate with commas.
    op: Option<Vec<String>>,
    /// `true`: only the operations that failed (a command: anything but exit 0).
    failed_only: Option<bool>,
    /// Text the target (path or command) or the detail contains, any case; `%`, `_` and `\` are
    /// literal. At most 200 characters.
    q: Option<String>,
    /// From this time on (inclusive): epoch milliseconds, or a UTC time written `2026-12-02`,
    /// `2026-12-02T14:30`, `2026-12-02T14:30:05` or RFC 3339.
    since: Option<String>,
    /// Until this time (inclusive, to the end of the day, minute or second written), in the same
    /// forms as `since`.
    until: Option<String>,
    /// Rows a page, 1 to 200 (default 50). Not used by the export.
    limit: Option<u32>,
    /// Where the page starts: a previous answer's `next_cursor`, `prev_cursor` or `poll_cursor`,
    /// as given. Not used by the export.
    cursor: Option<String>,
}

/// The export's own parameter beside the filters.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ExportQuery {
    /// `ndjson` (one JSON object a line, as `items` of the list) or `csv` (a header line, then
    /// one row a line, times as UTC RFC 3339); without it, `Accept: text/csv` chooses CSV and
    /// anything else NDJSON.
    format: Option<String>,
}

/// The organization's operation log: what every workspace did on its hosts (one row per read,
/// write, ls, mkdir, remove or execute; never a payload), newest first, filtered, paged by cursor
/// so any page costs what the first does. Operators and above; members get 403. Another
/// organization's rows never appear.
#[utoipa::path(get, path = "/api/v1/operations", tag = "sandboxes", params(OperationsQuery),
    responses((status = 200, body = OperationsPage), Problems<OperationsError>))]
pub async fn list_operations(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    req: HttpRequest,
) -> Result<Json<OperationsPage>, ApiError> {
    let input = FilterInput::from_query(req.query_string());
    Ok(Json(service::page(&st, &c, &input).await?))
}

/// Every row of the organization's operation log the filters let through (as the list's, without
/// `limit` and `cursor`), newest first, streamed as NDJSON or CSV for audits and spreadsheets.
/// Operators and above; members get 403.
#[utoipa::path(get, path = "/api/v1/operations/export", tag = "sandboxes", params(OperationsQuery, ExportQuery),
    responses((status = 200, description = "The rows, streamed: `application/x-ndjson` or `text/csv`.", content((String = "application/x-ndjson"), (String = "text/csv"))),
        Problems<(OperationsError, Input)>))]
pub async fn export_operations(
    st: Data<AppState>,
    ApiCaller(c): ApiCaller,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let input = FilterInput::from_query(req.query_string());
    let filter = service::export_filter(&c, &input)?;
    let format_param = url::form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(k, _)| k == "format")
        .map(|(_, v)| v.into_owned());
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::choose(format_param.as_deref(), accept)
        .ok_or_else(|| ApiError(AppError::invalid(FieldErrors::one("format", "Use ndjson or csv."))))?;
    Ok(export::attachment(st, c.org_id.clone(), filter, format))
}
