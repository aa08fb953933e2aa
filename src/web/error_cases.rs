//! One value of every case of each error the API answers with, for the OpenAPI document
//! ([`super::openapi_errors`]): the table in [`super::error`] turns each into its kind. Every
//! variant is named once on the left, so a variant added to an error does not compile until it is
//! listed here, and then its status shows up in the document by itself. A variant the table tells
//! apart by what it carries (a host's error) lists a value of each.

use super::openapi_errors::ErrorCases;
use crate::access::Role;
use crate::agents::error::AgentError;
use crate::audit::error::AuditError;
use crate::documents::error::DocumentError;
use crate::orgs::error::OrgError;
use crate::orgs::invitations::error::{Gone as Why, InvitationError};
use crate::sandbox::connections::error::{ConnectionError, HostCheck};
use crate::sandbox::connections::model::{Health, Probe, ProbeStatus};
use crate::sandbox::hosts::error::{HostError, Protocol as HostProtocol, Refusal};
use crate::sandbox::operations::error::OperationsError;
use crate::sandbox::policy::error::PolicyError;
use crate::sandbox::running::error::RunningError;
use crate::sandbox::workspaces::error::WorkspaceError;
use crate::tokens::error::TokenError;
use crate::validate::FieldErrors;
use crate::vault::error::VaultError;

/// `error_cases!(Error { Variant => [values of it], ... })`.
macro_rules! error_cases {
    ($error:ident { $($variant:ident => $values:expr),+ $(,)? }) => {
        impl ErrorCases for $error {
            fn cases() -> Vec<Self> {
                use $error::*;
                // Every variant, once: a new one fails to compile here until it is listed.
                let _every_variant = |e: &$error| match e {
                    $($error::$variant { .. } => ()),+
                };
                let mut all = Vec::new();
                $(all.extend($values);)+
                all
            }
        }
    };
}

fn text() -> String {
    String::new()
}

fn fields() -> FieldErrors {
    FieldErrors::new()
}

fn cause() -> anyhow::Error {
    anyhow::anyhow!("a cause")
}

error_cases!(HostError {
    Unreachable => [Unreachable { reason: text() }],
    TimedOut => [TimedOut],
    Refused => every_refusal().map(|why| HostError::refused(why, text())),
    NotFound => [NotFound { detail: text() }],
    Protocol => [
        HostError::Protocol(HostProtocol::NotThisService),
        HostError::Protocol(HostProtocol::VersionMismatch { missing: Vec::new(), expected: text() }),
    ],
});

/// Every refusal, once: a new one fails to compile here until it is listed.
fn every_refusal() -> impl Iterator<Item = Refusal> {
    let all = [
        Refusal::Credential,
        Refusal::Conflict,
        Refusal::NotRunning,
        Refusal::HandedBack,
        Refusal::Capacity,
        Refusal::Gone,
        Refusal::Invalid,
        Refusal::Path,
        Refusal::Other,
    ];
    let _every = |r: Refusal| match r {
        Refusal::Credential
        | Refusal::Conflict
        | Refusal::NotRunning
        | Refusal::HandedBack
        | Refusal::Capacity
        | Refusal::Gone
        | Refusal::Invalid
        | Refusal::Path
        | Refusal::Other => (),
    };
    all.into_iter()
}

error_cases!(ConnectionError {
    NotFound => [NotFound],
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    NoAddress => [NoAddress],
    AddressRefused => [AddressRefused(text())],
    NotSandboxd => [NotSandboxd],
    NoneYet => [NoneYet],
    Unknown => [Unknown],
    NoCredential => [NoCredential],
    KeyRefused => [KeyRefused(text())],
    InUse => [InUse(text())],
    SandboxesLeft => [SandboxesLeft { count: 1, message: text() }],
    Host => HostError::cases().into_iter().map(Host),
    Unhealthy => [Unhealthy(Box::new(HostCheck { field: "address", message: text(), probe: unasked() }))],
    Internal => [Internal(cause())],
});

fn unasked() -> Probe {
    Probe {
        status: ProbeStatus::NotAsked,
        health: Health::NoKey,
        message: text(),
        runtimes: Vec::new(),
        host_default_runtime: None,
    }
}

error_cases!(PolicyError {
    NotFound => [NotFound],
    Forbidden => [Forbidden],
    NotSandboxd => [NotSandboxd],
    HostUnavailable => ConnectionError::cases().into_iter().map(HostUnavailable),
    Internal => [Internal(cause())],
});

error_cases!(RunningError {
    NotFound => [NotFound],
    OwnedElsewhere => [OwnedElsewhere(text())],
    InUse => [InUse(text())],
    Forbidden => [Forbidden],
    HostUnavailable => ConnectionError::cases().into_iter().map(HostUnavailable),
    Internal => [Internal(cause())],
});

error_cases!(WorkspaceError {
    NotFound => [NotFound(text())],
    IsADirectory => [IsADirectory(text())],
    NotADirectory => [NotADirectory(text())],
    AlreadyExists => [AlreadyExists(text())],
    TooLarge => [TooLarge(text())],
    NotRegular => [NotRegular(text())],
    PermissionDenied => [PermissionDenied(text())],
    Shell => [Shell(text())],
    Manifest => [Manifest(text())],
    NoCommands => [NoCommands],
    Lost => [Lost],
    Refused => [Refused(text())],
    Forbidden => [Forbidden(text())],
    BadPath => [BadPath(text())],
    Invalid => [Invalid(fields())],
    StoreNoAnswer => [StoreNoAnswer { message: text(), source: cause() }],
    StoreFailed => [StoreFailed { message: text(), source: cause() }],
    Host => HostError::cases().into_iter().map(Host),
    Internal => [Internal(cause())],
});

error_cases!(DocumentError {
    NotFound => [NotFound(text())],
    Invalid => [Invalid(fields())],
    BadPath => [BadPath(text())],
    TooLarge => [TooLarge(text())],
    Host => [Host(text())],
    Internal => [Internal(cause())],
});

error_cases!(AgentError {
    NotFound => [NotFound],
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    Internal => [Internal(cause())],
});

error_cases!(OrgError {
    NotFound => [NotFound],
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    Outranked => [Outranked { email: text(), action: "" }],
    AboveOwnRole => [AboveOwnRole(Role::Member)],
    LastOwner => [LastOwner("")],
    Internal => [Internal(cause())],
});

error_cases!(InvitationError {
    NotFound => [NotFound],
    UnknownCode => [UnknownCode],
    Gone => [Gone(Why::Expired)],
    Forbidden => [Forbidden],
    NotYours => [NotYours],
    Invalid => [Invalid(fields())],
    Outranked => [Outranked { email: text(), action: "" }],
    AlreadyAccepted => [AlreadyAccepted],
    Internal => [Internal(cause())],
});

error_cases!(TokenError {
    NotFound => [NotFound],
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    Internal => [Internal(cause())],
});

error_cases!(VaultError {
    NotFound => [NotFound],
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    InUse => [InUse(text())],
    Internal => [Internal(cause())],
});

error_cases!(AuditError {
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    Internal => [Internal(cause())],
});

error_cases!(OperationsError {
    Forbidden => [Forbidden],
    Invalid => [Invalid(fields())],
    Internal => [Internal(cause())],
});
