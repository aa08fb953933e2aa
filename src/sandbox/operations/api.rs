//! JSON: the operation log, and its export.

use actix_web::http::header;
use actix_web::web::{Data, Json};
use actix_web::{HttpRequest, HttpResponse};
use serde::Deserialize;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::{RefOr, Required, Schema};
use utoipa::PartialSchema;

use super::error::OperationsError;
use super::export::{self, Format};
use super::filter::{self, FilterInput, Value};
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

/// The log's query parameters in the OpenAPI document, each as `filter::FILTERS` (every one given
/// applies, AND; an empty one filters nothing) and `filter::PAGING` describe it.
pub struct OperationsQuery;

impl utoipa::IntoParams for OperationsQuery {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        filter::params()
            .map(|p| {
                let list = p.value == Value::Ops;
                ParameterBuilder::new()
                    .name(p.key)
                    .parameter_in(ParameterIn::Query)
                    .required(Required::False)
                    .description(Some(p.doc))
                    .schema(Some(schema_of(p.value)))
                    .style(list.then_some(ParameterStyle::Form))
                    .explode(list.then_some(true))
                    .build()
            })
            .collect()
    }
}

/// A parameter's schema, by how its value is written.
fn schema_of(value: Value) -> RefOr<Schema> {
    match value {
        Value::Ops => <Vec<String> as PartialSchema>::schema(),
        Value::Failures => <bool as PartialSchema>::schema(),
        Value::Limit => <u32 as PartialSchema>::schema(),
        Value::Text(_) | Value::Id | Value::Search(_) | Value::Time { .. } | Value::Cursor => {
            <String as PartialSchema>::schema()
        }
    }
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
    Ok(export::attachment(st, &c, filter, format))
}
