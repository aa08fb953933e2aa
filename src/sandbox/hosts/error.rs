//! The host-neutral error: how a call to a host of any kind failed, in the categories the
//! capabilities decide on. Each kind's client error converts into it (`From<SandboxdError>` in
//! `sandbox/client/error.rs`, `DaytonaError::into_host` in `sandbox/daytona_client/error.rs`);
//! the shared errors (`WorkspaceError::Host`, `ConnectionError::Host`, Running's, Documents') hold
//! it, the recorder decides on it whether an operation reached a host and gets a row
//! ([`HostError::reached`], [`HostError::row_detail`]), and `web/error.rs` turns it into a status
//! and a problem type. Nothing outside a kind's own code names that kind's error.
//!
//! `Display` is written for the person using the platform (never an address, key or token).

/// Why a call to a host failed, whatever its kind.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No answer at all: the connection was refused, the name not resolved, the connection reset.
    /// The request did not reach the host, so nothing was done there.
    #[error("The sandbox service did not answer")]
    Unreachable {
        /// The transport's own words, without the address. For logs.
        reason: String,
    },

    /// No answer within the call's deadline (or an operation the host ended at its deadline):
    /// the host may have done what was asked.
    #[error("The sandbox service did not answer in time")]
    TimedOut,

    /// The host answered with a refusal: its status, what it amounts to, its words.
    #[error("{}", refused_words(*.status, *.why, .detail))]
    Refused { status: u16, why: Refusal, detail: String },

    /// 404 in the host's words: no such session, sandbox, workspace or directory.
    #[error("{detail}")]
    NotFound { detail: String },

    /// Something answered, but not the way this kind of host does.
    #[error(transparent)]
    Protocol(Protocol),
}

/// What a host's refusal amounts to: the distinctions a capability or the error table makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 401: the host refused the credential (sandboxd's token, Daytona's key).
    Credential,
    /// 409: a clash with the host's state (a session that exists, one being opened, a name taken).
    Conflict,
    /// 409: the sandbox is not running (Daytona's stopped or archived sandbox); a reopen resolves it.
    NotRunning,
    /// 409: the host hands this file operation back, to be done another way (sandboxd's native
    /// file routes).
    HandedBack,
    /// 429: the host is full or throttling.
    Capacity,
    /// 410: the sandbox is gone, and its files with it.
    Gone,
    /// 400 or 422: the request itself is wrong.
    Invalid,
    /// 400 or 404 about a path, in a file route's words.
    Path,
    /// Any other status.
    Other,
}

/// An answer that is not this kind of host's.
#[derive(Debug, thiserror::Error)]
pub enum Protocol {
    /// HTML, a redirect, JSON of another shape: usually the address names the wrong port or
    /// service.
    #[error("The address answered, but not like a sandbox service — check the port")]
    NotThisService,

    /// The host lacks routes this platform calls (confirmed from its index).
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
}

fn refused_words(status: u16, why: Refusal, detail: &str) -> String {
    match why {
        Refusal::Credential => "The sandbox service refused the credential it was given".into(),
        Refusal::HandedBack => format!("This file operation has to go through the sandbox: {detail}"),
        Refusal::Other => format!("The sandbox service answered {status}: {detail}"),
        Refusal::Conflict
        | Refusal::NotRunning
        | Refusal::Capacity
        | Refusal::Gone
        | Refusal::Invalid
        | Refusal::Path => detail.to_owned(),
    }
}

impl HostError {
    /// A refusal with the status it is usually answered with.
    pub fn refused(why: Refusal, detail: impl Into<String>) -> Self {
        let status = match why {
            Refusal::Credential => 401,
            Refusal::Conflict | Refusal::NotRunning | Refusal::HandedBack => 409,
            Refusal::Capacity => 429,
            Refusal::Gone => 410,
            Refusal::Invalid | Refusal::Path | Refusal::Other => 400,
        };
        HostError::Refused { status, why, detail: detail.into() }
    }

    /// Whether the request may have reached the host: false only when no answer came and none
    /// could have (unreachable). An operation that did not reach a host gets no row; one that
    /// timed out may have been done there, and does.
    pub fn reached(&self) -> bool {
        match self {
            HostError::Unreachable { .. } => false,
            HostError::TimedOut | HostError::Refused { .. } | HostError::NotFound { .. } | HostError::Protocol(_) => {
                true
            }
        }
    }

    /// The detail word a failed operation's row carries (written by us, never the host's text).
    pub fn row_detail(&self) -> &'static str {
        match self {
            HostError::Unreachable { .. } => "unreachable",
            HostError::TimedOut => "timed out",
            HostError::Refused { why, .. } => match why {
                Refusal::Credential => "credential refused",
                Refusal::Capacity => "capacity",
                Refusal::HandedBack | Refusal::Invalid => "refused",
                Refusal::Gone => "not found",
                Refusal::Conflict | Refusal::NotRunning | Refusal::Path | Refusal::Other => "host error",
            },
            HostError::NotFound { .. } => "not found",
            HostError::Protocol(Protocol::VersionMismatch { .. }) => "version mismatch",
            HostError::Protocol(Protocol::NotThisService) => "host error",
        }
    }

    /// The failure in the words a person reads on a page or in a problem (never the address or
    /// a key): a few say more than [`Display`](std::fmt::Display) does.
    pub fn in_words(&self) -> String {
        match self {
            HostError::Refused { why: Refusal::Credential, .. } => {
                "Credential refused: the sandbox service did not accept this key.".into()
            }
            HostError::Unreachable { .. } => "The sandbox service did not answer at this address.".into(),
            HostError::TimedOut => "The sandbox service did not answer in time.".into(),
            other => other.to_string(),
        }
    }
}

/// How long opening a workspace at a host of any kind may take while its runtime (a sandboxd
/// image, a Daytona snapshot) builds; past it the open is refused as timed out.
pub const OPEN_WAIT_WHILE_BUILDING: std::time::Duration = std::time::Duration::from_secs(600);

/// `a: b: c` from an error and its sources.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_unreachable_host_was_not_reached_and_each_category_has_its_row_word() {
        let cases = [
            (HostError::Unreachable { reason: "refused".into() }, false, "unreachable"),
            (HostError::TimedOut, true, "timed out"),
            (HostError::refused(Refusal::Credential, ""), true, "credential refused"),
            (HostError::refused(Refusal::Capacity, "full"), true, "capacity"),
            (HostError::refused(Refusal::Invalid, "bad"), true, "refused"),
            (HostError::refused(Refusal::Gone, "gone"), true, "not found"),
            (HostError::refused(Refusal::NotRunning, "stopped"), true, "host error"),
            (HostError::NotFound { detail: "No such session: x".into() }, true, "not found"),
            (HostError::Protocol(Protocol::NotThisService), true, "host error"),
            (
                HostError::Protocol(Protocol::VersionMismatch { missing: vec!["/x".into()], expected: "1".into() }),
                true,
                "version mismatch",
            ),
        ];
        for (error, reached, word) in cases {
            assert_eq!(error.reached(), reached, "{error:?}");
            assert_eq!(error.row_detail(), word, "{error:?}");
        }
        assert_eq!(
            HostError::Refused { status: 502, why: Refusal::Other, detail: "boom".into() }.to_string(),
            "The sandbox service answered 502: boom"
        );
    }
}
