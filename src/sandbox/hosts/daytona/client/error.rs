//! The errors of a Daytona call, read from the status and, when there is one, the error body:
//! the main API's NestJS body (`{statusCode, error, message}`), the toolbox's `ErrorResponse`
//! (`{statusCode, message, code, …}`), or nothing at all (old daemons, docs/daytona.md §1.5).

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use crate::sandbox::hosts::error::error_chain;
use crate::sandbox::hosts::error::{HostError, Protocol, Refusal};

/// Which half of Daytona answered: the main API or a sandbox's toolbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Api,
    Toolbox,
}

/// Why a Daytona call failed. `Display` is written for the person using the platform: it never
/// names the API's address, a toolbox address or the key.
#[derive(Debug, thiserror::Error)]
pub enum DaytonaError {
    /// No HTTP answer: connection refused, name not resolved, connection reset.
    #[error("Daytona did not answer")]
    Unreachable {
        /// The transport's own words, without the address. For logs.
        reason: String,
    },

    /// No answer within the call's deadline.
    #[error("Daytona did not answer in time")]
    Timeout,

    /// 401 from the main API: the key is wrong or revoked.
    #[error("Daytona refused the API key it was given")]
    KeyRefused,

    /// 403 from the main API, in Daytona's words: the key lacks a permission (`Forbidden
    /// resource`), the organization is suspended, no quota in the region.
    #[error("{}", forbidden_words(.message))]
    Forbidden { message: String },

    /// The toolbox cannot reach the sandbox: it is not running (400 `…no IP address found. Is
    /// the Sandbox started?` from the runner, 400 `failed to get runner info: …` from the proxy
    /// when it is archived) or the proxy no longer lets this key reach it (401: deleted, or the key
    /// revoked). What the sandbox is now, only a `GET /sandbox/{id}` says.
    #[error("The Daytona sandbox is not running: {message}")]
    NotRunning { message: String },

    /// 404, in Daytona's words when it gave any.
    #[error("{message}")]
    NotFound { message: String },

    /// 409: a name already taken, a state change in progress.
    #[error("{message}")]
    Conflict { message: String },

    /// 429: throttled; `retry_after` from Daytona's `Retry-After-{throttler}` (or `Retry-After`)
    /// header.
    #[error("Daytona is throttling requests: {message}")]
    Throttled { message: String, retry_after: Option<Duration> },

    /// 400 or 422: the request itself is wrong (a path, a snapshot that does not exist, a state
    /// that does not allow it). `code` is the toolbox's `DaemonErrorCode` when it sent one.
    #[error("{message}")]
    Invalid { message: String, code: Option<String> },

    /// 403 from a toolbox: the sandbox's user may not touch this path.
    #[error("{message}")]
    AccessDenied { message: String },

    /// 408 from a toolbox: a command passed its `timeout` (it was killed; no output comes back).
    #[error("The command did not finish within its timeout")]
    RequestTimeout,

    /// 5xx, or any other status, with Daytona's message.
    #[error("Daytona answered {status}: {message}")]
    Status { status: u16, message: String },

    /// A redirect, which is never followed (the key must not travel to another address).
    #[error("Daytona answered with a redirect ({status}), which is not followed")]
    Redirected { status: u16 },

    /// Something answered, but not the way Daytona does (HTML, JSON of another shape).
    #[error("The address answered, but not like Daytona's API — check the API URL")]
    NotDaytona,

    /// A sandbox's `toolboxProxyUrl` the key may not be sent to (another scheme than the API's,
    /// user info, not an http(s) address).
    #[error("Daytona named a toolbox address the key may not be sent to: {reason}")]
    ToolboxRefused { reason: String },

    /// A request refused before sending (a path with a line break, an empty command).
    #[error("{0}")]
    Refused(String),
}

impl DaytonaError {
    /// The HTTP status behind this error, when Daytona answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::KeyRefused => Some(401),
            Self::Forbidden { .. } => Some(403),
            Self::NotRunning { .. } => Some(400),
            Self::NotFound { .. } => Some(404),
            Self::Conflict { .. } => Some(409),
            Self::Throttled { .. } => Some(429),
            Self::Invalid { .. } => Some(400),
            Self::AccessDenied { .. } => Some(403),
            Self::RequestTimeout => Some(408),
            Self::Status { status, .. } | Self::Redirected { status } => Some(*status),
            _ => None,
        }
    }

    /// Whether no HTTP answer came back at all.
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::Timeout)
    }

    /// Worth trying again later: no answer, 409 (a state change in progress), 429, 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::Timeout | Self::Conflict { .. } | Self::Throttled { .. } => true,
            Self::Status { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The failure in the words a person reads on a page or in a problem (never the address or
    /// the key).
    pub fn in_words(&self) -> String {
        match self {
            Self::KeyRefused => "Key refused: Daytona did not accept this API key.".into(),
            Self::Unreachable { .. } => "Daytona did not answer at this API URL.".into(),
            Self::Timeout => "Daytona did not answer in time.".into(),
            other => other.to_string(),
        }
    }

    /// The host-neutral failure this amounts to (the same statuses, problem types and row
    /// details as a sandboxd host's); itself back for a refusal before anything was sent (a
    /// toolbox address the key may not go to, a request refused here) or a 403 of the main API.
    pub fn into_host(self) -> Result<HostError, DaytonaError> {
        let refused = |status, why, detail| HostError::Refused { status, why, detail };
        Ok(match self {
            Self::Unreachable { reason } => HostError::Unreachable { reason },
            Self::Timeout | Self::RequestTimeout => HostError::TimedOut,
            Self::KeyRefused => HostError::refused(Refusal::Credential, ""),
            // Not running: a conflict with the sandbox's state, which a reopen resolves.
            Self::NotRunning { message } => {
                refused(409, Refusal::NotRunning, format!("The Daytona sandbox is not running: {message}"))
            }
            Self::NotFound { message } => HostError::NotFound { detail: message },
            Self::Conflict { message } => refused(409, Refusal::Conflict, message),
            Self::Throttled { message, .. } => refused(429, Refusal::Capacity, message),
            Self::Invalid { message, .. } | Self::AccessDenied { message } => refused(400, Refusal::Invalid, message),
            Self::Status { status, message } => refused(status, Refusal::Other, message),
            Self::Redirected { .. } | Self::NotDaytona => HostError::Protocol(Protocol::NotThisService),
            e @ (Self::ToolboxRefused { .. } | Self::Refused(_) | Self::Forbidden { .. }) => return Err(e),
        })
    }

    pub(super) fn from_transport(error: reqwest::Error) -> Self {
        if error.is_timeout() {
            return Self::Timeout;
        }
        Self::Unreachable { reason: error_chain(&error.without_url()) }
    }

    /// How long to wait before trying this call again, when trying again is worth it: a 429 (its
    /// `Retry-After-*` header, else 1 s; none past [`RETRY_AFTER_MAX`]) and a 502/503/504 (the
    /// toolbox proxy or a gateway between: `backoff`).
    pub fn retry_after(&self, backoff: Duration) -> Option<Duration> {
        match self {
            Self::Throttled { retry_after, .. } => {
                let wait = retry_after.unwrap_or(Duration::from_secs(1));
                (wait <= RETRY_AFTER_MAX).then_some(wait)
            }
            Self::Status { status: 502..=504, .. } => Some(backoff),
            _ => None,
        }
    }

    /// The error for a non-2xx answer from `side`.
    pub(super) fn from_answer(side: Side, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Self {
        let parsed = ErrorBody::parse(body);
        let message = parsed
            .as_ref()
            .map(|b| b.message.clone())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| status.canonical_reason().unwrap_or("no reason given").to_owned());
        let code = parsed.and_then(|b| b.code);
        match status.as_u16() {
            300..=399 => Self::Redirected { status: status.as_u16() },
            // The toolbox proxy answers 401 when the API says the key may not reach the sandbox:
            // a sandbox deleted (or never ours), or a key revoked (apps/proxy/pkg/proxy/auth.go).
            401 if side == Side::Toolbox => Self::NotRunning { message },
            401 => Self::KeyRefused,
            403 if side == Side::Api => Self::Forbidden { message },
            400 if side == Side::Toolbox && is_not_running(&message) => Self::NotRunning { message },
            // The proxy refusing the key says so by its code; a path the user may not touch is
            // FILE_ACCESS_DENIED, or (old daemons) no body at all.
            403 if matches!(code.as_deref(), Some("UNAUTHORIZED" | "FORBIDDEN")) => Self::KeyRefused,
            403 => Self::AccessDenied { message },
            404 => Self::NotFound { message },
            408 => Self::RequestTimeout,
            409 => Self::Conflict { message },
            429 => Self::Throttled { message, retry_after: retry_after(headers) },
            400 | 422 => Self::Invalid { message, code },
            other => Self::Status { status: other, message },
        }
    }
}

/// The longest `Retry-After` a call waits for before it gives up and says Daytona is throttling.
pub const RETRY_AFTER_MAX: Duration = Duration::from_secs(10);

/// Daytona's words for a toolbox call to a sandbox that is not running: the runner's (stopped,
/// starting, error: `apps/runner/pkg/api/controllers/proxy.go`) and the proxy's (archived, no
/// runner: `apps/proxy/pkg/proxy/get_sandbox_target.go`), at daytonaio/daytona v0.190.0.
fn is_not_running(message: &str) -> bool {
    message.contains("no IP address found. Is the Sandbox started?") || message.starts_with("failed to get runner info")
}

/// The longest of Daytona's `Retry-After-{throttler}` headers (and a plain `Retry-After`), in
/// whole seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("retry-after"))
        .filter_map(|(_, v)| v.to_str().ok()?.trim().parse::<u64>().ok())
        .max()
        .map(Duration::from_secs)
}

/// A 403 of the main API in words: the missing permission named, or Daytona's own message.
fn forbidden_words(message: &str) -> String {
    if message == "Forbidden resource" {
        "Daytona refused: the API key lacks a permission this needs (creating, starting and stopping sandboxes \
         need write:sandboxes; deleting them needs delete:sandboxes)."
            .into()
    } else {
        format!("Daytona refused: {message}")
    }
}

/// What an error body says, in any of Daytona's shapes.
#[derive(Debug, PartialEq)]
pub(super) struct ErrorBody {
    pub message: String,
    pub code: Option<String>,
}

impl ErrorBody {
    /// `message` (a string, or class-validator's list joined with ", "), else `error` or `errors`; `code`
    /// (else `error_code`). `None` for an empty or non-JSON body.
    pub(super) fn parse(body: &[u8]) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        let map = value.as_object()?;
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Array(items) => Some(
                items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            _ => None,
        };
        let message = map
            .get("message")
            .and_then(text)
            .or_else(|| map.get("error").and_then(text))
            // bulk-upload's `{"errors": […], "files": […]}`
            .or_else(|| map.get("errors").and_then(text))?;
        let code = map.get("code").or_else(|| map.get("error_code")).and_then(|c| c.as_str()).map(str::to_owned);
        Some(Self { message, code })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_the_throttlers_header_and_5xx_backs_off() {
        let mut h = HeaderMap::new();
        h.insert("retry-after-sandbox-lifecycle", "3".parse().unwrap());
        h.insert("x-ratelimit-reset-sandbox-lifecycle", "40".parse().unwrap());
        let throttled = DaytonaError::from_answer(Side::Api, StatusCode::TOO_MANY_REQUESTS, &h, b"");
        assert_eq!(throttled.retry_after(Duration::from_millis(1)), Some(Duration::from_secs(3)));
        h.insert("retry-after-authenticated", "600".parse().unwrap());
        let long = DaytonaError::from_answer(Side::Api, StatusCode::TOO_MANY_REQUESTS, &h, b"");
        assert_eq!(long.retry_after(Duration::from_millis(1)), None, "longer than a call waits");
        let bad_gateway = DaytonaError::from_answer(Side::Toolbox, StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"");
        assert_eq!(bad_gateway.retry_after(Duration::from_millis(5)), Some(Duration::from_millis(5)));
        let not_found = DaytonaError::from_answer(Side::Api, StatusCode::NOT_FOUND, &HeaderMap::new(), b"");
        assert_eq!(not_found.retry_after(Duration::from_millis(5)), None);
    }

    #[test]
    fn nestjs_daemon_and_empty_bodies_parse() {
        let nest = br#"{"path":"/api/sandbox/x","timestamp":"t","statusCode":404,"error":"Not Found","message":"Sandbox with ID or name x not found"}"#;
        assert_eq!(
            ErrorBody::parse(nest),
            Some(ErrorBody { message: "Sandbox with ID or name x not found".into(), code: None })
        );
        let validator = br#"{"statusCode":400,"error":"Bad Request","message":["name must be a string","labels must be an object"]}"#;
        assert_eq!(ErrorBody::parse(validator).unwrap().message, "name must be a string, labels must be an object");
        let daemon = br#"{"statusCode":404,"message":"file not found: a","code":"FILE_NOT_FOUND","timestamp":"t","path":"/files/info","method":"GET","source":"DAYTONA_DAEMON"}"#;
        assert_eq!(ErrorBody::parse(daemon).unwrap().code.as_deref(), Some("FILE_NOT_FOUND"));
        assert_eq!(
            ErrorBody::parse(br#"{"error":"request body must be non-empty"}"#).unwrap().message,
            "request body must be non-empty"
        );
        assert_eq!(ErrorBody::parse(b""), None);
        assert_eq!(ErrorBody::parse(b"<html>nope</html>"), None);
    }

    #[test]
    fn statuses_map_to_errors_by_side() {
        let e = |side, status: u16, body: &[u8]| {
            DaytonaError::from_answer(side, StatusCode::from_u16(status).unwrap(), &HeaderMap::new(), body)
        };
        assert!(matches!(e(Side::Api, 401, b""), DaytonaError::KeyRefused));
        let suspended =
            e(Side::Api, 403, br#"{"statusCode":403,"error":"Forbidden","message":"Organization is suspended"}"#);
        assert_eq!(suspended.to_string(), "Daytona refused: Organization is suspended");
        assert!(e(Side::Api, 403, br#"{"statusCode":403,"message":"Forbidden resource"}"#)
            .to_string()
            .contains("write:sandboxes"));
        assert!(matches!(e(Side::Toolbox, 401, b""), DaytonaError::NotRunning { .. }));
        let stopped = br#"{"statusCode":400,"message":"failed to resolve container IP after 3 attempts: no IP address found. Is the Sandbox started?","code":"BAD_REQUEST"}"#;
        assert!(matches!(e(Side::Toolbox, 400, stopped), DaytonaError::NotRunning { .. }));
        let archived = br#"{"statusCode":400,"message":"failed to get runner info: Sandbox with ID x does not have a runner","code":"BAD_REQUEST"}"#;
        assert!(matches!(e(Side::Toolbox, 400, archived), DaytonaError::NotRunning { .. }));
        assert!(matches!(e(Side::Toolbox, 403, b""), DaytonaError::AccessDenied { .. }));
        assert!(matches!(
            e(Side::Toolbox, 403, br#"{"statusCode":403,"message":"denied","code":"FILE_ACCESS_DENIED"}"#),
            DaytonaError::AccessDenied { .. }
        ));
        // An old daemon's empty 404: the status alone decides, with its reason as the message.
        let empty = e(Side::Toolbox, 404, b"");
        assert!(matches!(&empty, DaytonaError::NotFound { message } if message == "Not Found"));
        assert!(matches!(e(Side::Toolbox, 408, b""), DaytonaError::RequestTimeout));
        let taken = e(
            Side::Api,
            409,
            br#"{"statusCode":409,"error":"Conflict","message":"Sandbox with name x already exists"}"#,
        );
        assert_eq!(taken.to_string(), "Sandbox with name x already exists");
        assert!(taken.is_retryable());
        assert!(matches!(e(Side::Api, 429, b""), DaytonaError::Throttled { .. }));
        let invalid = e(Side::Toolbox, 400, br#"{"statusCode":400,"message":"bad path","code":"INVALID_FILE_PATH"}"#);
        assert!(matches!(&invalid, DaytonaError::Invalid { code: Some(c), .. } if c == "INVALID_FILE_PATH"));
        let server = e(Side::Api, 503, br#"{"statusCode":503,"message":"down"}"#);
        assert_eq!(server.to_string(), "Daytona answered 503: down");
        assert!(server.is_retryable());
        assert!(matches!(e(Side::Api, 307, b""), DaytonaError::Redirected { status: 307 }));
        assert!(!e(Side::Api, 400, b"").is_retryable());
    }
}
