//! Answering the API: every `/api/v1` error is `application/problem+json` (RFC 9457), its status
//! and type from the table in [`super::error`].

use std::fmt;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};

use super::context;
use super::error::{AppError, Kind, Problem};

pub struct ApiError(pub AppError);

impl<E: Into<AppError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        ApiError(e.into())
    }
}

impl fmt::Debug for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

pub fn problem_response(err: &AppError) -> HttpResponse {
    err.log();
    let status = err.kind.status();
    let body = Problem {
        kind: err.kind.problem_type(),
        title: err.kind.title().to_string(),
        status: status.as_u16(),
        detail: err.public_detail(),
        errors: err.fields.0.clone(),
        request_id: context::request_id(),
    };
    let mut res = HttpResponse::build(status);
    res.content_type("application/problem+json");
    if let Some(s) = err.retry_after {
        res.insert_header((header::RETRY_AFTER, s.to_string()));
    }
    if matches!(err.kind, Kind::Unauthenticated | Kind::TokenExpired) {
        res.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
    }
    res.body(serde_json::to_string(&body).unwrap_or_default())
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.0.kind.status()
    }
    fn error_response(&self) -> HttpResponse {
        problem_response(&self.0)
    }
}
