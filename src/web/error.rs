//! The only mapping from outcomes to HTTP statuses, behind two wrappers: [`ApiError`] answers
//! `application/problem+json`; [`PageError`] renders the error page (or, for htmx, a message
//! swapped into `#flash`). A 5xx says "Something went wrong" and the request id; the cause chain
//! goes to the log.

use std::fmt;

use actix_web::http::{header, StatusCode};
use actix_web::{HttpResponse, ResponseError};
use askama::Template;
use serde::Serialize;

use super::context;

pub use crate::validate::{FieldError, FieldErrors};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    BadRequest,
    Unauthenticated,
    Forbidden,
    NotFound,
    Conflict,
    Invalid,
    TooManyRequests,
    PayloadTooLarge,
    NeedsOrganization,
    Gone,
    BadGateway,
    Unavailable,
    Internal,
}

impl Kind {
    pub fn status(self) -> StatusCode {
        match self {
            Kind::BadRequest => StatusCode::BAD_REQUEST,
            Kind::Unauthenticated => StatusCode::UNAUTHORIZED,
            Kind::Forbidden => StatusCode::FORBIDDEN,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::Conflict => StatusCode::CONFLICT,
            Kind::Invalid => StatusCode::UNPROCESSABLE_ENTITY,
            Kind::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Kind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Kind::NeedsOrganization => StatusCode::FORBIDDEN,
            Kind::Gone => StatusCode::GONE,
            Kind::BadGateway => StatusCode::BAD_GATEWAY,
            Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
    fn slug(self) -> &'static str {
        match self {
            Kind::BadRequest => "bad-request",
            Kind::Unauthenticated => "unauthenticated",
            Kind::Forbidden => "forbidden",
            Kind::NotFound => "not-found",
            Kind::Conflict => "conflict",
            Kind::Invalid => "invalid-input",
            Kind::TooManyRequests => "too-many-requests",
            Kind::PayloadTooLarge => "payload-too-large",
            Kind::NeedsOrganization => "no-organization",
            Kind::Gone => "gone",
            Kind::BadGateway => "bad-gateway",
            Kind::Unavailable => "unavailable",
            Kind::Internal => "internal",
        }
    }
    fn title(self) -> &'static str {
        match self {
            Kind::BadRequest => "Bad request",
            Kind::Unauthenticated => "Sign-in required",
            Kind::Forbidden => "Not allowed",
            Kind::NotFound => "Not found",
            Kind::Conflict => "Conflict",
            Kind::Invalid => "Invalid input",
            Kind::TooManyRequests => "Too many requests",
            Kind::PayloadTooLarge => "Too large",
            Kind::NeedsOrganization => "No organization",
            Kind::Gone => "Gone",
            Kind::BadGateway => "The sandbox host did not cooperate",
            Kind::Unavailable => "Temporarily unavailable",
            Kind::Internal => "Something went wrong",
        }
    }
}

/// An outcome to show to a person or a client; capability errors convert into it.
#[derive(Debug)]
pub struct AppError {
    pub kind: Kind,
    pub detail: String,
    pub fields: FieldErrors,
    pub retry_after: Option<u64>,
    pub source: Option<anyhow::Error>,
}

impl AppError {
    pub fn new(kind: Kind, detail: impl Into<String>) -> Self {
        AppError { kind, detail: detail.into(), fields: FieldErrors::new(), retry_after: None, source: None }
    }
    pub fn not_found() -> Self {
        Self::new(Kind::NotFound, "There is nothing here, or you may not see it.")
    }
    pub fn forbidden() -> Self {
        Self::new(Kind::Forbidden, "Your role in this organization does not allow this.")
    }
    pub fn unauthenticated() -> Self {
        Self::new(Kind::Unauthenticated, "Sign in, or send a valid API token.")
    }
    pub fn invalid(fields: FieldErrors) -> Self {
        let detail = fields.0.iter().map(|f| format!("{}: {}", f.field, f.message)).collect::<Vec<_>>().join("; ");
        AppError { kind: Kind::Invalid, detail, fields, retry_after: None, source: None }
    }
    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        AppError {
            kind: Kind::Internal,
            detail: "Something went wrong".into(),
            fields: FieldErrors::new(),
            retry_after: None,
            source: Some(source.into()),
        }
    }
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    fn is_server_error(&self) -> bool {
        self.kind.status().is_server_error()
    }

    /// What a person or client may read: a 5xx never shows its cause.
    pub fn public_detail(&self) -> String {
        if self.kind == Kind::Internal {
            "Something went wrong".to_string()
        } else {
            self.detail.clone()
        }
    }

    fn log(&self) {
        if self.is_server_error() {
            let chain = self.source.as_ref().map(|e| format!("{e:#}")).unwrap_or_default();
            tracing::error!(kind = self.kind.slug(), detail = %self.detail, cause = %chain, "request failed");
        }
    }
}

impl fmt::Display for AppError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.title(), self.detail)
    }
}

impl From<crate::db::DbError> for AppError {
    fn from(e: crate::db::DbError) -> Self {
        match e {
            crate::db::DbError::NotFound => AppError::not_found(),
            other => AppError::internal(other),
        }
    }
}

impl From<anyhow::Error> for AppError {
    fn from(e: anyhow::Error) -> Self {
        AppError::internal(e)
    }
}

impl From<askama::Error> for AppError {
    fn from(e: askama::Error) -> Self {
        AppError::internal(e)
    }
}

// ---------------------------------------------------------------------------------------------
// API: application/problem+json

/// RFC 9457 problem details, as every `/api/v1` error answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    pub request_id: String,
}

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
        kind: format!("https://agenticos.dev/problems/{}", err.kind.slug()),
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
    if err.kind == Kind::Unauthenticated {
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

// ---------------------------------------------------------------------------------------------
// Pages

#[derive(Template)]
#[template(path = "errors/error.html")]
pub struct ErrorPage {
    pub status: u16,
    pub title: String,
    pub detail: String,
    pub request_id: String,
}

#[derive(Template)]
#[template(path = "errors/_flash.html")]
pub struct FlashPartial {
    pub level: &'static str,
    pub message: String,
}

pub struct PageError(pub AppError);

impl<E: Into<AppError>> From<E> for PageError {
    fn from(e: E) -> Self {
        PageError(e.into())
    }
}

impl fmt::Debug for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for PageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

pub fn page_error_response(err: &AppError) -> HttpResponse {
    err.log();
    let ctx = context::current();
    let is_htmx = ctx.as_ref().map(|c| c.is_htmx).unwrap_or(false);
    let status = err.kind.status();
    if matches!(err.kind, Kind::Unauthenticated | Kind::NeedsOrganization) {
        let to = if err.kind == Kind::Unauthenticated { super::paths::LOGIN } else { super::paths::ORGS_NEW };
        return if is_htmx {
            HttpResponse::Ok().insert_header(("HX-Redirect", to)).finish()
        } else {
            HttpResponse::SeeOther().insert_header((header::LOCATION, to)).finish()
        };
    }
    let mut res = HttpResponse::build(status);
    res.content_type("text/html; charset=utf-8");
    if let Some(s) = err.retry_after {
        res.insert_header((header::RETRY_AFTER, s.to_string()));
    }
    if is_htmx {
        let flash = FlashPartial { level: "error", message: err.public_detail() };
        res.insert_header(("HX-Retarget", "#flash"))
            .insert_header(("HX-Reswap", "innerHTML"))
            .insert_header(("HX-Reselect", ".flash"));
        return res.body(flash.render().unwrap_or_else(|_| "Something went wrong".into()));
    }
    let page = ErrorPage {
        status: status.as_u16(),
        title: err.kind.title().to_string(),
        detail: err.public_detail(),
        request_id: context::request_id(),
    };
    res.body(page.render().unwrap_or_else(|_| "Something went wrong".into()))
}

impl ResponseError for PageError {
    fn status_code(&self) -> StatusCode {
        self.0.kind.status()
    }
    fn error_response(&self) -> HttpResponse {
        page_error_response(&self.0)
    }
}

/// Renders a template into a 200 HTML response; a template error is a 500.
pub fn render<T: Template>(t: &T) -> Result<HttpResponse, PageError> {
    render_status(StatusCode::OK, t)
}

pub fn render_status<T: Template>(status: StatusCode, t: &T) -> Result<HttpResponse, PageError> {
    let body = t.render().map_err(AppError::from)?;
    Ok(HttpResponse::build(status).content_type("text/html; charset=utf-8").body(body))
}

/// 303 to `to` for plain forms; for htmx, `HX-Redirect`.
pub fn see_other(to: &str) -> HttpResponse {
    let is_htmx = context::current().map(|c| c.is_htmx).unwrap_or(false);
    if is_htmx {
        HttpResponse::Ok().insert_header(("HX-Redirect", to.to_string())).finish()
    } else {
        HttpResponse::SeeOther().insert_header((header::LOCATION, to.to_string())).finish()
    }
}

// ---------------------------------------------------------------------------------------------
// Agents and workspaces (agents/error.rs, sandbox/workspaces/error.rs)

use crate::agents::error::AgentError;
use crate::sandbox::client::SandboxdError;
use crate::sandbox::workspaces::error::WorkspaceError;

impl From<AgentError> for AppError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound => AppError::not_found(),
            AgentError::Forbidden => AppError::forbidden(),
            e @ (AgentError::Invalid(_) | AgentError::NameTaken) => AppError::invalid(e.fields().unwrap_or_default()),
            AgentError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<WorkspaceError> for AppError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::NotFound(m) => AppError::new(Kind::NotFound, m),
            WorkspaceError::IsADirectory(m) | WorkspaceError::NotADirectory(m) | WorkspaceError::BadPath(m) => {
                AppError::new(Kind::BadRequest, m)
            }
            WorkspaceError::AlreadyExists(m) | WorkspaceError::Refused(m) => AppError::new(Kind::Conflict, m),
            WorkspaceError::TooLarge(m) => AppError::new(Kind::PayloadTooLarge, m),
            e @ WorkspaceError::NoCommands => AppError::new(Kind::BadRequest, e.to_string()),
            e @ WorkspaceError::Lost => AppError::new(Kind::Gone, e.to_string()),
            WorkspaceError::Host(SandboxdError::NotNative { detail }) => {
                AppError::new(Kind::Conflict, format!("The host refused this file operation: {detail}"))
            }
            WorkspaceError::Host(SandboxdError::Invalid { detail }) => AppError::new(Kind::BadRequest, detail),
            // The host's per-tenant cap is a 429 in its own words; any other failure a 502.
            WorkspaceError::Host(h @ SandboxdError::Capacity { .. }) => {
                AppError::new(Kind::TooManyRequests, h.in_words())
            }
            WorkspaceError::Host(h) => AppError::new(Kind::BadGateway, h.in_words()),
            WorkspaceError::Internal(e) => AppError::internal(e),
        }
    }
}
