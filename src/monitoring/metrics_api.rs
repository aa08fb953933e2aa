//! `GET /metrics` in Prometheus's text format. Off (404) unless `AGENTICOS_METRICS=1`; then on its
//! own address (`AGENTICOS_METRICS_BIND`, which serves nothing else) and, with
//! `AGENTICOS_METRICS_TOKEN`, on the main address for that bearer token only (401 otherwise).

use actix_web::http::header;
use actix_web::web::Data;
use actix_web::{HttpRequest, HttpResponse};
use secrecy::ExposeSecret as _;
use subtle::ConstantTimeEq as _;

use super::service;
use crate::state::AppState;
use crate::web::{ApiError, AppError, Kind};

const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// On the main address: only with the metrics token configured, and only for it.
pub async fn on_main_address(st: Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    let metrics = &st.config.metrics;
    let Some(token) = metrics.token.as_ref().filter(|_| metrics.enabled) else {
        return Err(ApiError(AppError::new(Kind::NotFound, "There is nothing at /metrics on this address.")));
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    if !bool::from(given.as_bytes().ct_eq(token.expose_secret().as_bytes())) {
        return Err(ApiError(AppError::new(
            Kind::Unauthenticated,
            "/metrics needs `Authorization: Bearer` with the metrics token (AGENTICOS_METRICS_TOKEN).",
        )));
    }
    render(&st).await
}

/// On the metrics address: whoever reaches that address may read.
pub async fn on_own_address(st: Data<AppState>) -> Result<HttpResponse, ApiError> {
    render(&st).await
}

async fn render(st: &AppState) -> Result<HttpResponse, ApiError> {
    match service::scrape(st).await {
        Ok(Some(text)) => Ok(HttpResponse::Ok().content_type(CONTENT_TYPE).body(text)),
        Ok(None) => Err(ApiError(AppError::new(Kind::NotFound, "Metrics are off (AGENTICOS_METRICS)."))),
        Err(e) => Err(ApiError(AppError::internal(e))),
    }
}
