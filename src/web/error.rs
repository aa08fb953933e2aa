//! The only mapping from outcomes to HTTP statuses: each kind's status, problem type and title,
//! and (at the end) every capability's error as a kind and the words shown. Two wrappers answer
//! with it: [`super::problem::ApiError`] (`application/problem+json`) and
//! [`super::page_error::PageError`] (the error page, or for htmx a message swapped into `#flash`).
//! A 5xx says "Something went wrong" and the request id; the cause chain goes to the log.

use std::fmt;

use actix_web::http::StatusCode;
use serde::Serialize;

use crate::audit::error::AuditError;
use crate::auth::error::AuthError;
use crate::dashboard::error::DashboardError;
use crate::documents::error::DocumentError;
use crate::orgs::error::OrgError;
use crate::orgs::invitations::error::InvitationError;
use crate::sandbox::connections::error::{host_message, ConnectionError};
use crate::sandbox::hosts::error::{HostError, Refusal};
use crate::sandbox::operations::error::OperationsError;
use crate::sandbox::policy::error::PolicyError;
use crate::sandbox::running::error::RunningError;
use crate::tokens::error::TokenError;
pub use crate::validate::{FieldError, FieldErrors};
use crate::vault::error::VaultError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    BadRequest,
    Unauthenticated,
    /// An API token past its expiry (401, told apart from an unknown one).
    TokenExpired,
    Forbidden,
    NotFound,
    Conflict,
    Invalid,
    /// A save whose check of the host failed (422, saved only with `save_anyway`).
    HostCheckFailed,
    TooManyRequests,
    PayloadTooLarge,
    NeedsOrganization,
    /// Signed in with a password that was issued, not chosen: pages go to the password page.
    PasswordChangeRequired,
    /// The current organization requires two-factor sign-in and the person has not enrolled:
    /// pages go to the enrolment page.
    TwoFactorRequired,
    Gone,
    BadGateway,
    /// The snapshot (object) store failed.
    StoreFailed,
    /// The snapshot (object) store did not answer in time.
    StoreTimeout,
    /// A sandbox host (sandboxd, Daytona) did not answer, or its operation did not finish, in
    /// time (Daytona's 408 on a file operation).
    HostTimeout,
    Unavailable,
    Internal,
}

impl Kind {
    /// The status, the problem type's last segment and the title of each kind.
    fn parts(self) -> (StatusCode, &'static str, &'static str) {
        match self {
            Kind::BadRequest => (StatusCode::BAD_REQUEST, "bad-request", "Bad request"),
            Kind::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated", "Sign-in required"),
            Kind::TokenExpired => (StatusCode::UNAUTHORIZED, "token-expired", "API token expired"),
            Kind::Forbidden => (StatusCode::FORBIDDEN, "forbidden", "Not allowed"),
            Kind::NotFound => (StatusCode::NOT_FOUND, "not-found", "Not found"),
            Kind::Conflict => (StatusCode::CONFLICT, "conflict", "Conflict"),
            Kind::Invalid => (StatusCode::UNPROCESSABLE_ENTITY, "invalid-input", "Invalid input"),
            Kind::HostCheckFailed => {
                (StatusCode::UNPROCESSABLE_ENTITY, "host-check-failed", "The host did not pass the check")
            }
            Kind::TooManyRequests => (StatusCode::TOO_MANY_REQUESTS, "too-many-requests", "Too many requests"),
            Kind::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large", "Too large"),
            Kind::NeedsOrganization => (StatusCode::FORBIDDEN, "no-organization", "No organization"),
            Kind::PasswordChangeRequired => {
                (StatusCode::FORBIDDEN, "password-change-required", "Choose your password first")
            }
            Kind::TwoFactorRequired => {
                (StatusCode::FORBIDDEN, "two-factor-required", "Set up two-factor sign-in first")
            }
            Kind::Gone => (StatusCode::GONE, "gone", "Gone"),
            Kind::BadGateway => (StatusCode::BAD_GATEWAY, "bad-gateway", "The sandbox host did not cooperate"),
            Kind::StoreFailed => (StatusCode::BAD_GATEWAY, "store-failed", "The snapshot store failed"),
            Kind::StoreTimeout => (StatusCode::GATEWAY_TIMEOUT, "store-timeout", "The snapshot store did not answer"),
            Kind::HostTimeout => (StatusCode::GATEWAY_TIMEOUT, "host-timeout", "The sandbox host timed out"),
            Kind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Temporarily unavailable"),
            Kind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, "internal", "Something went wrong"),
        }
    }
    pub fn status(self) -> StatusCode {
        self.parts().0
    }
    pub fn slug(self) -> &'static str {
        self.parts().1
    }
    pub fn title(self) -> &'static str {
        self.parts().2
    }
    /// The `type` of an API problem.
    pub fn problem_type(self) -> String {
        format!("https://agenticos.dev/problems/{}", self.slug())
    }
}

/// What a person or client reads when the database did not answer.
pub const DATABASE_UNAVAILABLE: &str = "The database did not answer; try again in a few seconds.";

/// The seconds a client is asked to wait after [`DATABASE_UNAVAILABLE`].
pub const DATABASE_RETRY_AFTER: u64 = 5;

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
    /// Something failed on our side: 500, or 503 with `Retry-After` when the cause is a database
    /// that did not answer ([`crate::db::unavailable_in`]: down, cut mid-request, out of
    /// connections, locked), which a client may retry.
    pub fn internal(source: impl Into<anyhow::Error>) -> Self {
        let source = source.into();
        if crate::db::unavailable_in(&source) {
            return AppError {
                kind: Kind::Unavailable,
                detail: DATABASE_UNAVAILABLE.into(),
                fields: FieldErrors::new(),
                retry_after: Some(DATABASE_RETRY_AFTER),
                source: Some(source),
            };
        }
        AppError {
            kind: Kind::Internal,
            detail: "Something went wrong".into(),
            fields: FieldErrors::new(),
            retry_after: None,
            source: Some(source),
        }
    }
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// What a person or client may read: a 5xx never shows its cause.
    pub fn public_detail(&self) -> String {
        if self.kind == Kind::Internal {
            "Something went wrong".to_string()
        } else {
            self.detail.clone()
        }
    }

    /// A 5xx goes to the log with its cause chain.
    pub(super) fn log(&self) {
        if self.kind.status().is_server_error() {
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

/// RFC 9457 problem details, as every `/api/v1` error answers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// The problem type, `https://agenticos.dev/problems/<kind>`: `bad-request`, `unauthenticated`,
    /// `token-expired`, `forbidden`, `no-organization`, `password-change-required`, `not-found`,
    /// `conflict`, `gone`, `payload-too-large`, `invalid-input`, `host-check-failed`,
    /// `too-many-requests`, `bad-gateway`, `store-failed`, `store-timeout`, `host-timeout`,
    /// `unavailable` or `internal`. Each operation lists those it can answer.
    #[serde(rename = "type")]
    pub kind: String,
    /// The type's short title.
    pub title: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// What went wrong, in words a person reads; a 5xx says only "Something went wrong".
    pub detail: String,
    /// One entry per invalid field (422); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// The request's id (also its `X-Request-Id` header), to find it in the log.
    pub request_id: String,
}

// ---------------------------------------------------------------------------------------------
// The table: each capability's error as a kind and the words a person or client reads.

impl From<AuthError> for AppError {
    fn from(e: AuthError) -> Self {
        match e {
            AuthError::Invalid(f) => AppError::invalid(f),
            e @ (AuthError::BadCredentials | AuthError::WrongPassword) => {
                AppError::new(Kind::Unauthenticated, e.to_string())
            }
            AuthError::NotFound => AppError::not_found(),
            AuthError::Invitation(e) => e.into(),
            e @ AuthError::LockedOut { retry_after } => {
                AppError::new(Kind::TooManyRequests, e.to_string()).with_retry_after(retry_after)
            }
            AuthError::SetupDone => AppError::not_found(),
            AuthError::SecondStepGone => AppError::unauthenticated(),
            AuthError::Forbidden => AppError::forbidden(),
            AuthError::ResetRefused(message) => AppError::new(Kind::Conflict, message),
            e @ AuthError::ResetLinkGone => AppError::new(Kind::Gone, e.to_string()),
            AuthError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<OrgError> for AppError {
    fn from(e: OrgError) -> Self {
        match e {
            OrgError::NotFound => AppError::not_found(),
            OrgError::Forbidden => AppError::forbidden(),
            OrgError::Invalid(f) => AppError::invalid(f),
            e @ (OrgError::Outranked { .. } | OrgError::AboveOwnRole(_) | OrgError::LastOwner(_)) => {
                AppError::new(Kind::Conflict, e.to_string())
            }
            OrgError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<InvitationError> for AppError {
    fn from(e: InvitationError) -> Self {
        match e {
            InvitationError::NotFound => AppError::not_found(),
            e @ InvitationError::UnknownCode => AppError::new(Kind::NotFound, e.to_string()),
            e @ InvitationError::Gone(_) => AppError::new(Kind::Gone, e.to_string()),
            InvitationError::Forbidden => AppError::forbidden(),
            e @ InvitationError::NotYours => AppError::new(Kind::Forbidden, e.to_string()),
            InvitationError::Invalid(f) => AppError::invalid(f),
            e @ (InvitationError::Outranked { .. } | InvitationError::AlreadyAccepted) => {
                AppError::new(Kind::Conflict, e.to_string())
            }
            InvitationError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<TokenError> for AppError {
    fn from(e: TokenError) -> Self {
        match e {
            TokenError::NotFound => AppError::not_found(),
            TokenError::Forbidden => AppError::forbidden(),
            TokenError::Invalid(f) => AppError::invalid(f),
            TokenError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<VaultError> for AppError {
    fn from(e: VaultError) -> Self {
        match e {
            VaultError::NotFound => AppError::not_found(),
            VaultError::Forbidden => AppError::forbidden(),
            VaultError::Invalid(f) => AppError::invalid(f),
            e @ VaultError::InUse(_) => AppError::new(Kind::Conflict, e.to_string()),
            VaultError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<AuditError> for AppError {
    fn from(e: AuditError) -> Self {
        match e {
            AuditError::Forbidden => AppError::forbidden(),
            AuditError::Invalid(f) => AppError::invalid(f),
            AuditError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<OperationsError> for AppError {
    fn from(e: OperationsError) -> Self {
        match e {
            OperationsError::Forbidden => AppError::forbidden(),
            OperationsError::Invalid(f) => AppError::invalid(f),
            OperationsError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<DashboardError> for AppError {
    fn from(e: DashboardError) -> Self {
        match e {
            DashboardError::Capacity(e) => e.into(),
            DashboardError::Invitations(e) => e.into(),
            DashboardError::Health(e) => e.into(),
            DashboardError::Internal(e) => AppError::internal(e),
        }
    }
}

/// A host's failure, in connections' words: 429 when the host is full, else 502.
impl From<&HostError> for AppError {
    fn from(e: &HostError) -> Self {
        let kind = match e {
            HostError::Refused { why: Refusal::Capacity, .. } => Kind::TooManyRequests,
            _ => Kind::BadGateway,
        };
        AppError::new(kind, host_message(e))
    }
}

impl From<ConnectionError> for AppError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::NotFound => AppError::not_found(),
            ConnectionError::Forbidden => AppError::forbidden(),
            ConnectionError::Invalid(f) => AppError::invalid(f),
            e @ (ConnectionError::NoAddress
            | ConnectionError::AddressRefused(_)
            | ConnectionError::NotSandboxd
            | ConnectionError::NoneYet
            | ConnectionError::Unknown
            | ConnectionError::NoCredential
            | ConnectionError::KeyRefused(_)
            | ConnectionError::InUse(_)
            | ConnectionError::SandboxesLeft { .. }) => AppError::new(Kind::Conflict, e.to_string()),
            ConnectionError::Host(h) => AppError::from(&h),
            // The probe's reason, at the field it is about; `save_anyway` saves regardless.
            ConnectionError::Unhealthy(check) => AppError {
                fields: FieldErrors::one(check.field, check.message.clone()),
                ..AppError::new(Kind::HostCheckFailed, check.message)
            },
            ConnectionError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<PolicyError> for AppError {
    fn from(e: PolicyError) -> Self {
        match e {
            PolicyError::NotFound => AppError::not_found(),
            PolicyError::Forbidden => AppError::forbidden(),
            e @ PolicyError::NotSandboxd => AppError::new(Kind::Conflict, e.to_string()),
            PolicyError::HostUnavailable(e) => e.into(),
            PolicyError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<RunningError> for AppError {
    fn from(e: RunningError) -> Self {
        match e {
            RunningError::NotFound => AppError::not_found(),
            e @ RunningError::OwnedElsewhere(_) => AppError::new(Kind::NotFound, e.to_string()),
            RunningError::InUse(message) => AppError::new(Kind::Conflict, message),
            RunningError::Forbidden => AppError::forbidden(),
            RunningError::HostUnavailable(e) => e.into(),
            RunningError::Internal(e) => AppError::internal(e),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Agents and workspaces (agents/error.rs, sandbox/workspaces/error.rs)

use crate::agents::error::AgentError;
use crate::sandbox::workspaces::error::WorkspaceError;

impl From<AgentError> for AppError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::NotFound => AppError::not_found(),
            AgentError::Forbidden => AppError::forbidden(),
            AgentError::Invalid(f) => AppError::invalid(f),
            AgentError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<WorkspaceError> for AppError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::NotFound(m) => AppError::new(Kind::NotFound, m),
            WorkspaceError::IsADirectory(m)
            | WorkspaceError::NotADirectory(m)
            | WorkspaceError::NotRegular(m)
            | WorkspaceError::BadPath(m) => AppError::new(Kind::BadRequest, m),
            WorkspaceError::Invalid(f) => AppError::invalid(f),
            WorkspaceError::PermissionDenied(m) => AppError::new(Kind::Forbidden, m),
            WorkspaceError::Shell(m) | WorkspaceError::Manifest(m) => AppError::new(Kind::BadGateway, m),
            WorkspaceError::AlreadyExists(m) | WorkspaceError::Refused(m) => AppError::new(Kind::Conflict, m),
            WorkspaceError::Forbidden(m) => AppError::new(Kind::Forbidden, m),
            WorkspaceError::TooLarge(m) => AppError::new(Kind::PayloadTooLarge, m),
            e @ WorkspaceError::NoCommands => AppError::new(Kind::BadRequest, e.to_string()),
            e @ WorkspaceError::Lost => AppError::new(Kind::Gone, e.to_string()),
            WorkspaceError::Host(HostError::Refused { why: Refusal::HandedBack, detail, .. }) => {
                AppError::new(Kind::Conflict, format!("The host refused this file operation: {detail}"))
            }
            WorkspaceError::Host(HostError::Refused { why: Refusal::Invalid, detail, .. }) => {
                AppError::new(Kind::BadRequest, detail)
            }
            // No answer in time, or an operation the host ended at its deadline (Daytona's 408).
            WorkspaceError::Host(h @ HostError::TimedOut) => AppError::new(Kind::HostTimeout, host_message(&h)),
            // The host's per-tenant cap is a 429 in its own words; any other failure a 502.
            WorkspaceError::Host(h) => AppError::from(&h),
            WorkspaceError::StoreNoAnswer { message, source } => {
                AppError { source: Some(source), ..AppError::new(Kind::StoreTimeout, message) }
            }
            WorkspaceError::StoreFailed { message, source } => {
                AppError { source: Some(source), ..AppError::new(Kind::StoreFailed, message) }
            }
            WorkspaceError::Internal(e) => AppError::internal(e),
        }
    }
}

impl From<DocumentError> for AppError {
    fn from(e: DocumentError) -> Self {
        match e {
            DocumentError::NotFound(m) => AppError::new(Kind::NotFound, m),
            DocumentError::Invalid(f) => AppError::invalid(f),
            DocumentError::BadPath(m) => AppError::new(Kind::BadRequest, m),
            DocumentError::TooLarge(m) => AppError::new(Kind::PayloadTooLarge, m),
            DocumentError::Host(m) => AppError::new(Kind::BadGateway, m),
            DocumentError::Internal(e) => AppError::internal(e),
        }
    }
}
