//! The errors of a sandboxd call, and the error bodies they are read from.

use reqwest::StatusCode;

use crate::sandbox::hosts::error::{error_chain, HostError, Protocol, Refusal};

/// Why a sandboxd call failed. `Display` is written for the person using the
/// platform: it never contains the host's address or the token.
#[derive(Debug, thiserror::Error)]
pub enum SandboxdError {
    /// No HTTP answer: connection refused, name not resolved, connection reset,
    /// or a gateway in front of the host that could not reach it.
    #[error("The sandbox service did not answer")]
    Unreachable {
        /// The transport's own words, without the address. For logs.
        reason: String,
    },

    /// The host did not answer within the call's deadline.
    #[error("The sandbox service did not answer in time")]
    Timeout,

    /// 401: the token is wrong, missing, or a closed session's.
    #[error("The sandbox service refused the credential it was given")]
    CredentialRefused,

    /// The host lacks routes this client calls (confirmed from its index).
    #[error(
        "The sandbox service does not serve {} - its version does not match this platform (expected {expected}). Run ghcr.io/vstorm-co/sandboxd:{expected} and redeploy it",
        .missing.join(", ")
    )]
    VersionMismatch {
        /// Route paths, as the host's index would list them.
        missing: Vec<String>,
        /// The release this platform expects.
        expected: String,
    },

    /// 404 in the host's words: `No such session: …`, `Nothing to attach to: …`,
    /// `No workspace for session: …`, `No such directory: …`, `No such file: …`.
    #[error("{detail}")]
    NotFound { detail: String },

    /// 409 in the host's words: `Session exists: …`, a runtime clash, a session
    /// being opened concurrently, a service that keeps no workspaces.
    #[error("{detail}")]
    Conflict { detail: String },

    /// 409 from a native file route (`/sessions/{id}/files/*`): the host hands
    /// this one operation back, to be done through the sandbox's shell (a
    /// symlink, a path outside the work directory, native files off, a file over
    /// the read limit).
    #[error("This file operation has to go through the sandbox: {detail}")]
    NotNative { detail: String },

    /// 429 in the host's words, e.g. `Tenant 'acme' already holds 10 of 10
    /// sessions. Release an idle session before opening another.`
    #[error("{detail}")]
    Capacity { detail: String },

    /// 410: the session's sandbox is gone, and (without a workspace root) its
    /// files with it.
    #[error("{detail}")]
    Gone { detail: String },

    /// 400 or 422, or a value refused before sending: the request itself is
    /// wrong (an unknown runtime, an id that is not a session id, a path outside
    /// the workspace).
    #[error("{detail}")]
    Invalid { detail: String },

    /// A path error of a native file route (`{"detail":{"error":…,"message":…}}`).
    #[error("{message}")]
    File { kind: FileErrorKind, message: String },

    /// Any other status, with the host's detail.
    #[error("The sandbox service answered {status}: {detail}")]
    Status { status: u16, detail: String },

    /// Something answered, but not the way sandboxd does: HTML, a redirect, JSON
    /// of another shape. Usually the address names the wrong port or service.
    #[error("The address answered, but not like a sandbox service — check the port")]
    NotJson,
}

/// The builtin exception a native file route names in its path errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileErrorKind {
    /// `FileNotFoundError` (404).
    NotFound,
    /// `IsADirectoryError` (400).
    IsADirectory,
    /// `NotADirectoryError` (400).
    NotADirectory,
    /// `FileExistsError` (400).
    AlreadyExists,
    /// `ValueError` (400): a relative path, removing the work directory.
    InvalidPath,
    /// Another exception name, kept as sent.
    Other(String),
}

impl FileErrorKind {
    fn from_name(name: &str) -> Self {
        match name {
            "FileNotFoundError" => Self::NotFound,
            "IsADirectoryError" => Self::IsADirectory,
            "NotADirectoryError" => Self::NotADirectory,
            "FileExistsError" => Self::AlreadyExists,
            "ValueError" => Self::InvalidPath,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl SandboxdError {
    /// Whether no HTTP answer came back at all (so the host may still be doing
    /// what was asked).
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::Timeout)
    }

    /// The outcome word of this error for metrics (bounded, no detail).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Unreachable { .. } => "unreachable",
            Self::Timeout => "timeout",
            Self::CredentialRefused => "credential_refused",
            Self::VersionMismatch { .. } => "version_mismatch",
            Self::NotFound { .. } => "not_found",
            Self::Conflict { .. } => "conflict",
            Self::NotNative { .. } => "not_native",
            Self::Capacity { .. } => "capacity",
            Self::Gone { .. } => "gone",
            Self::Invalid { .. } => "invalid",
            Self::File { .. } => "file_error",
            Self::Status { .. } => "status",
            Self::NotJson => "not_json",
        }
    }

    /// The HTTP status behind this error, when the host answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::CredentialRefused => Some(401),
            Self::NotFound { .. } => Some(404),
            Self::Conflict { .. } | Self::NotNative { .. } => Some(409),
            Self::Capacity { .. } => Some(429),
            Self::Gone { .. } => Some(410),
            Self::Status { status, .. } => Some(*status),
            Self::File { kind: FileErrorKind::NotFound, .. } => Some(404),
            Self::File { .. } => Some(400),
            _ => None,
        }
    }

    pub(super) fn invalid(detail: impl Into<String>) -> Self {
        Self::Invalid { detail: detail.into() }
    }

    pub(super) fn from_transport(error: reqwest::Error) -> Self {
        if error.is_timeout() {
            return Self::Timeout;
        }
        Self::Unreachable { reason: error_chain(&error.without_url()) }
    }

    /// The error for a status and detail the host sent, before any version check. `native_file`:
    /// the call was one of the native file routes (`Route::is_native_file`), where a 409 says
    /// the host cannot do it natively.
    pub(super) fn from_answer(status: StatusCode, detail: Detail, native_file: bool) -> Self {
        let (detail, file) = match detail {
            Detail::File { error, message } => (message, Some(error)),
            Detail::Text(text) => (text, None),
        };
        if let Some(error) = file {
            if matches!(status.as_u16(), 400 | 404) {
                return Self::File { kind: FileErrorKind::from_name(&error), message: detail };
            }
        }
        match status.as_u16() {
            401 => Self::CredentialRefused,
            404 => Self::NotFound { detail },
            409 if native_file => Self::NotNative { detail },
            409 => Self::Conflict { detail },
            410 => Self::Gone { detail },
            429 => Self::Capacity { detail },
            400 | 422 => Self::Invalid { detail },
            other => Self::Status { status: other, detail },
        }
    }
}

/// sandboxd's failure as the host-neutral error the capabilities decide on (the same statuses,
/// words and row details it always had).
impl From<SandboxdError> for HostError {
    fn from(e: SandboxdError) -> Self {
        let refused = |status, why, detail| HostError::Refused { status, why, detail };
        match e {
            SandboxdError::Unreachable { reason } => HostError::Unreachable { reason },
            SandboxdError::Timeout => HostError::TimedOut,
            SandboxdError::CredentialRefused => HostError::refused(Refusal::Credential, ""),
            SandboxdError::VersionMismatch { missing, expected } => {
                HostError::Protocol(Protocol::VersionMismatch { missing, expected })
            }
            SandboxdError::NotFound { detail } => HostError::NotFound { detail },
            SandboxdError::Conflict { detail } => refused(409, Refusal::Conflict, detail),
            SandboxdError::NotNative { detail } => refused(409, Refusal::HandedBack, detail),
            SandboxdError::Capacity { detail } => refused(429, Refusal::Capacity, detail),
            SandboxdError::Gone { detail } => refused(410, Refusal::Gone, detail),
            SandboxdError::Invalid { detail } => refused(400, Refusal::Invalid, detail),
            SandboxdError::File { kind: FileErrorKind::NotFound, message } => refused(404, Refusal::Path, message),
            SandboxdError::File { message, .. } => refused(400, Refusal::Path, message),
            SandboxdError::Status { status, detail } => refused(status, Refusal::Other, detail),
            SandboxdError::NotJson => HostError::Protocol(Protocol::NotThisService),
        }
    }
}

/// An error body's `detail`, in the forms the wire contract names.
#[derive(Debug, PartialEq)]
pub(super) enum Detail {
    /// `{"detail":"…"}`, or a 422 list flattened to `loc: msg; …`.
    Text(String),
    /// `{"detail":{"error":"<Exception>","message":"…"}}`.
    File { error: String, message: String },
}

impl Detail {
    /// Parses an error body; `None` when it is not sandboxd's (or FastAPI's) JSON.
    pub(super) fn parse(body: &[u8]) -> Option<Self> {
        let value: serde_json::Value = serde_json::from_slice(body).ok()?;
        let detail = value.as_object()?.get("detail")?;
        Some(match detail {
            serde_json::Value::String(text) => Self::Text(text.clone()),
            serde_json::Value::Object(map) => match (map.get("error"), map.get("message")) {
                (Some(serde_json::Value::String(error)), Some(message)) => Self::File {
                    error: error.clone(),
                    message: message.as_str().map_or_else(|| message.to_string(), str::to_owned),
                },
                _ => Self::Text(detail.to_string()),
            },
            serde_json::Value::Array(items) => Self::Text(flatten_validation(items)),
            other => Self::Text(other.to_string()),
        })
    }
}

/// FastAPI's 422 list as one line: `session_id: String should match pattern …`.
fn flatten_validation(items: &[serde_json::Value]) -> String {
    let lines: Vec<String> = items
        .iter()
        .map(|item| {
            let msg = item.get("msg").and_then(serde_json::Value::as_str).unwrap_or("invalid");
            let loc: Vec<String> = item
                .get("loc")
                .and_then(serde_json::Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        // The first element says where (body, query, path).
                        .skip(1)
                        .map(|part| match part {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if loc.is_empty() {
                msg.to_owned()
            } else {
                format!("{}: {msg}", loc.join("."))
            }
        })
        .collect();
    if lines.is_empty() {
        "The sandbox service refused the request as invalid".to_owned()
    } else {
        lines.join("; ")
    }
}

impl SandboxdError {
    /// The failure in the words a person reads on a page or in a problem (never the address or
    /// a token): a few say more than [`Display`](std::fmt::Display) does.
    pub fn in_words(&self) -> String {
        match self {
            Self::CredentialRefused => "Credential refused: the sandbox service did not accept this key.".into(),
            Self::Unreachable { .. } => "The sandbox service did not answer at this address.".into(),
            Self::Timeout => "The sandbox service did not answer in time.".into(),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::routes::{FileOp, Route};
    use super::*;

    #[test]
    fn all_three_error_body_shapes_parse() {
        assert_eq!(
            Detail::parse(br#"{"detail":"No such session: x"}"#),
            Some(Detail::Text("No such session: x".to_owned()))
        );
        assert_eq!(
            Detail::parse(
                br#"{"detail":{"error":"FileNotFoundError","message":"[Errno 2] No such file or directory: 'm'"}}"#
            ),
            Some(Detail::File {
                error: "FileNotFoundError".to_owned(),
                message: "[Errno 2] No such file or directory: 'm'".to_owned()
            })
        );
        let validation = br#"{"detail":[{"type":"string_pattern_mismatch","loc":["body","session_id"],"msg":"String should match pattern 'x'","input":"../etc"},{"type":"missing","loc":["body","argv"],"msg":"Field required"}]}"#;
        assert_eq!(
            Detail::parse(validation),
            Some(Detail::Text("session_id: String should match pattern 'x'; argv: Field required".to_owned()))
        );
        assert_eq!(Detail::parse(b"<html>nope</html>"), None);
        assert_eq!(Detail::parse(br#"{"error":"x"}"#), None);
    }

    #[test]
    fn answers_map_to_errors_by_status_and_route() {
        let text = |s: &str| Detail::Text(s.to_owned());
        let session = Route::Session("x").is_native_file();
        let file = Route::File("x", FileOp::Read).is_native_file();
        assert!(matches!(
            SandboxdError::from_answer(StatusCode::UNAUTHORIZED, text("Invalid or missing sandbox token"), session),
            SandboxdError::CredentialRefused
        ));
        assert!(matches!(
            SandboxdError::from_answer(StatusCode::CONFLICT, text("link is a symbolic link"), file),
            SandboxdError::NotNative { .. }
        ));
        assert!(matches!(
            SandboxdError::from_answer(
                StatusCode::CONFLICT,
                text("Session exists: x"),
                Route::Sessions.is_native_file()
            ),
            SandboxdError::Conflict { .. }
        ));
        let file_error = SandboxdError::from_answer(
            StatusCode::BAD_REQUEST,
            Detail::File { error: "IsADirectoryError".to_owned(), message: "notes is a directory".to_owned() },
            file,
        );
        assert!(matches!(&file_error, SandboxdError::File { kind: FileErrorKind::IsADirectory, .. }));
        assert_eq!(file_error.to_string(), "notes is a directory");
        assert_eq!(file_error.status(), Some(400));
        let capacity = SandboxdError::from_answer(
            StatusCode::TOO_MANY_REQUESTS,
            text("Tenant 't' already holds 1 of 1 sessions."),
            Route::Sessions.is_native_file(),
        );
        assert_eq!(capacity.to_string(), "Tenant 't' already holds 1 of 1 sessions.");
        let other = SandboxdError::from_answer(
            StatusCode::BAD_GATEWAY,
            text("Could not start sandbox: x"),
            Route::Sessions.is_native_file(),
        );
        assert_eq!(other.to_string(), "The sandbox service answered 502: Could not start sandbox: x");
    }

    #[test]
    fn the_version_mismatch_message_names_routes_and_image() {
        let error = SandboxdError::VersionMismatch {
            missing: vec!["/workspaces/trees".to_owned(), "/sessions/{session_id}/files/read".to_owned()],
            expected: "0.2.37".to_owned(),
        };
        assert_eq!(
            error.to_string(),
            "The sandbox service does not serve /workspaces/trees, /sessions/{session_id}/files/read - its version does not match this platform (expected 0.2.37). Run ghcr.io/vstorm-co/sandboxd:0.2.37 and redeploy it"
        );
    }
}
