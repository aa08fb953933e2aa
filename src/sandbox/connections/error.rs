//! What the connection rules and asking a host can come to, and a host's failures in the words a
//! person reads.

use super::model::Probe;
use crate::db::DbError;
use crate::sandbox::hosts::error::HostError;
use crate::sandbox::hosts::sandboxd::client::SandboxdError;
use crate::validate::FieldErrors;
use crate::vault::error::VaultError;

/// The outcomes of the connection rules; the refusals say why in the words a person reads.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("no such connection in this organization")]
    NotFound,
    #[error("this role may not see or manage connections")]
    Forbidden,
    /// A field of the dialog (or a probe's address or key) was refused; a message per field.
    #[error("the connection's settings were refused")]
    Invalid(FieldErrors),
    #[error("This connection has no address.")]
    NoAddress,
    /// The address resolves where this deployment may not send a request.
    #[error("{0}")]
    AddressRefused(String),
    #[error("Daytona connections have no sandboxd policy.")]
    NotSandboxd,
    /// Nothing was chosen and the organization has no default to fall back on.
    #[error("This organization has no sandbox connection yet.")]
    NoneYet,
    /// A chosen connection that is not (or no longer) in this organization, said where a
    /// missing connection is an input problem rather than a 404.
    #[error("This connection does not exist in this organization.")]
    Unknown,
    #[error("This connection has no credential in the vault. Edit it and pick or paste the host's token.")]
    NoCredential,
    /// A stored key that may not go where it was asked to (another purpose, bound to another
    /// address, not in the vault): no request was sent.
    #[error("{0}")]
    KeyRefused(String),
    /// Agents are pinned to the connection (the message names them).
    #[error("{0}")]
    InUse(String),
    /// Sandboxes may still run at the connection's host: deleting it needs a confirmation
    /// repeating `count` (the message says how many and what to do).
    #[error("{message}")]
    SandboxesLeft { count: i64, message: String },
    /// The host was asked and did not answer well.
    #[error("{}", host_message(.0))]
    Host(#[from] HostError),
    /// A save's check of the host failed and the save did not say `save_anyway`: nothing was
    /// saved. The message says why, at the field it is about.
    #[error("{}", .0.message)]
    Unhealthy(Box<HostCheck>),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// What a save's check of the host found when it failed.
#[derive(Debug, Clone)]
pub struct HostCheck {
    /// The dialog's field the problem is about (`address`, `new_key`, `credential_secret_id`,
    /// `default_runtime`).
    pub field: &'static str,
    pub message: String,
    /// The host's answer, with the runtimes marked when it answered.
    pub probe: Probe,
}

/// sandboxd's failure, as the host-neutral one.
impl From<SandboxdError> for ConnectionError {
    fn from(e: SandboxdError) -> Self {
        ConnectionError::Host(e.into())
    }
}

impl From<DbError> for ConnectionError {
    fn from(e: DbError) -> Self {
        e.not_found_or(ConnectionError::NotFound, ConnectionError::Internal)
    }
}

impl From<VaultError> for ConnectionError {
    fn from(e: VaultError) -> Self {
        match e {
            VaultError::NotFound => ConnectionError::NotFound,
            VaultError::Forbidden => ConnectionError::Forbidden,
            VaultError::Invalid(fields) => ConnectionError::Invalid(fields),
            VaultError::InUse(message) => ConnectionError::InUse(message),
            VaultError::Internal(e) => ConnectionError::Internal(e),
        }
    }
}

impl ConnectionError {
    /// Why the host of `connection_id` could not be asked or did not answer well, in words a
    /// person reads inline (and the log gets); the error itself when it is not about the host
    /// (not found, not allowed, internal).
    pub fn host_problem(self, connection_id: &str) -> Result<String, ConnectionError> {
        let message = match self {
            ConnectionError::Host(h) => host_message(&h),
            ConnectionError::NoCredential => {
                "This connection has no credential in the vault: no request was sent. Edit it and pick or paste the host's token."
                    .to_string()
            }
            e @ (ConnectionError::NoAddress
            | ConnectionError::AddressRefused(_)
            | ConnectionError::NotSandboxd
            | ConnectionError::NoneYet
            | ConnectionError::Unknown
            | ConnectionError::KeyRefused(_)
            | ConnectionError::InUse(_)
            | ConnectionError::SandboxesLeft { .. }) => e.to_string(),
            ConnectionError::Invalid(fields) => {
                fields.0.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join(" ")
            }
            ConnectionError::Unhealthy(check) => check.message,
            other @ (ConnectionError::NotFound | ConnectionError::Forbidden | ConnectionError::Internal(_)) => {
                return Err(other)
            }
        };
        tracing::warn!(connection_id = %connection_id, problem = %message, "a sandbox host could not be read");
        Ok(message)
    }
}

/// A host failure in the words a person reads (never the address or a token).
pub fn host_message(e: &HostError) -> String {
    e.in_words()
}
