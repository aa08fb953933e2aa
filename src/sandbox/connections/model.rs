use serde::Serialize;

use crate::sandbox::hosts::error::{HostError, Protocol, Refusal};

pub use crate::sandbox::hosts::kind::ConnectionKind;

/// A registered host, as pages and the API show it. The credential is a vault reference, shown as
/// "in the vault" or "missing", never a value.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Connection {
    /// The connection's id (a UUID).
    pub id: String,
    /// Unique in the organization.
    pub name: String,
    /// What kind of host it is.
    pub kind: ConnectionKind,
    /// `http(s)://host:port`, no trailing slash; null for a Daytona connection without one.
    pub address: Option<String>,
    /// The vault secret the host's token is kept in.
    pub credential_secret_id: Option<String>,
    /// That secret's name; null when the connection has no key or the secret is gone.
    pub credential_name: Option<String>,
    /// `in the vault` or `missing`.
    pub credential: &'static str,
    /// The runtime alias new workspaces get; none means the host's own default.
    pub default_runtime: Option<String>,
    /// The organization's default connection (exactly one is): agents without a pinned
    /// connection use it.
    pub is_default: bool,
    /// Switched on; off stops new work there, not the finishing of runs.
    pub is_enabled: bool,
    /// Epoch milliseconds (UTC).
    pub created_at: i64,
    /// Epoch milliseconds (UTC) of the last change.
    pub updated_at: i64,
    /// When the key's value last changed (a rotation), for the caches: never shown.
    #[serde(skip)]
    pub credential_updated_at: Option<i64>,
}

impl Connection {
    pub fn has_credential(&self) -> bool {
        self.credential_name.is_some()
    }

    /// What a cached client or health answer of this connection was made from: its address, its
    /// key (and that key's last rotation), its last edit. Any change makes a new version.
    pub fn version(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.address.as_deref().unwrap_or_default(),
            self.credential_secret_id.as_deref().unwrap_or_default(),
            self.credential_updated_at.unwrap_or_default(),
            self.updated_at
        )
    }
}

/// A connection that uses a vault secret as its key (the Vault page's "Used by").
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SecretUse {
    pub secret_id: String,
    pub connection_id: String,
    pub connection_name: String,
}

/// What a host's answer means for its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// Answered, accepted the key, serves every route, offers the default runtime.
    Healthy,
    /// The host refused the key, or the stored key may not be sent to this address.
    KeyRefused,
    /// No key: the host is not asked.
    NoKey,
    /// Nothing answered (refused, unresolved, timed out), or the address may not be asked.
    NoAnswer,
    /// Something answered, but not like a sandbox service (the wrong port or service).
    NotASandboxService,
    /// The host's release lacks routes this platform calls.
    VersionMismatch,
    /// The host allows no runtime, or not the connection's default runtime.
    NoRuntime,
    /// Switched off: not asked, no new work goes there.
    SwitchedOff,
    /// What the host cannot do here (a Daytona connection has no sandboxd policy).
    NotSupported,
    /// Any other failure of the host.
    HostError,
}

impl Health {
    /// A host's failure as a health word.
    pub fn of_error(e: &HostError) -> Health {
        match e {
            HostError::Refused { why: Refusal::Credential, .. } => Health::KeyRefused,
            HostError::Unreachable { .. } | HostError::TimedOut => Health::NoAnswer,
            HostError::Protocol(Protocol::NotThisService) => Health::NotASandboxService,
            HostError::Protocol(Protocol::VersionMismatch { .. }) => Health::VersionMismatch,
            HostError::Refused { .. } | HostError::NotFound { .. } => Health::HostError,
        }
    }

    /// The word the table shows.
    pub fn label(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::KeyRefused => "key refused",
            Health::NoKey => "no key",
            Health::NoAnswer => "no answer",
            Health::NotASandboxService => "not a sandbox service",
            Health::VersionMismatch => "version mismatch",
            Health::NoRuntime => "no runtime",
            Health::SwitchedOff => "switched off",
            Health::NotSupported => "not supported yet",
            Health::HostError => "host error",
        }
    }

    /// The badge colour class.
    pub fn badge(self) -> &'static str {
        match self {
            Health::Healthy => "badge-green",
            Health::SwitchedOff | Health::NotSupported => "badge-grey",
            Health::VersionMismatch | Health::NoRuntime | Health::NotASandboxService => "badge-amber",
            Health::KeyRefused | Health::NoKey | Health::NoAnswer | Health::HostError => "badge-red",
        }
    }

    /// Every health word, for reading a stored one back.
    pub const ALL: [Health; 10] = [
        Health::Healthy,
        Health::KeyRefused,
        Health::NoKey,
        Health::NoAnswer,
        Health::NotASandboxService,
        Health::VersionMismatch,
        Health::NoRuntime,
        Health::SwitchedOff,
        Health::NotSupported,
        Health::HostError,
    ];

    /// The stored (and JSON) spelling: `healthy`, `no_answer`, …
    pub fn code(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::KeyRefused => "key_refused",
            Health::NoKey => "no_key",
            Health::NoAnswer => "no_answer",
            Health::NotASandboxService => "not_a_sandbox_service",
            Health::VersionMismatch => "version_mismatch",
            Health::NoRuntime => "no_runtime",
            Health::SwitchedOff => "switched_off",
            Health::NotSupported => "not_supported",
            Health::HostError => "host_error",
        }
    }

    /// A stored spelling read back; `None` for a word this version does not know.
    pub fn from_code(code: &str) -> Option<Health> {
        Health::ALL.into_iter().find(|h| h.code() == code)
    }

    pub fn is_healthy(self) -> bool {
        self == Health::Healthy
    }

    /// Whether the fix is the key (rotate it in the vault, or pick or paste another one).
    pub fn is_about_the_key(self) -> bool {
        matches!(self, Health::KeyRefused | Health::NoKey)
    }

    /// Whether the fix is the runtime (the host's allowlist, or the connection's default).
    pub fn is_about_the_runtime(self) -> bool {
        self == Health::NoRuntime
    }

    /// The field of the connection dialog a problem of this kind is shown at: the key's field
    /// (`key_field`, the one that was used) for the key, *Default runtime* for runtimes, else
    /// *Address*.
    pub fn field(self, key_field: &'static str) -> &'static str {
        if self.is_about_the_key() {
            key_field
        } else if self.is_about_the_runtime() {
            "default_runtime"
        } else {
            "address"
        }
    }
}

/// One row's health, as the Connections table shows it.
#[derive(Debug, Clone)]
pub struct ConnectionHealth {
    pub connection_id: String,
    pub health: Health,
    /// What was found, in words (never the address or a key).
    pub message: String,
    /// The key to rotate when the host refused it.
    pub credential_secret_id: Option<String>,
}

impl ConnectionHealth {
    pub fn new(conn: &Connection, health: Health, message: impl Into<String>) -> Self {
        ConnectionHealth {
            connection_id: conn.id.clone(),
            health,
            message: message.into(),
            credential_secret_id: conn.credential_secret_id.clone(),
        }
    }
}

/// How a catalog alias fares on a probed host.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct RuntimeMark {
    /// The runtime's alias, as agents and connections name it.
    pub alias: String,
    /// What the runtime holds, from the catalog (or the host, for one the catalog lacks).
    pub description: String,
    /// The image it runs, or (when it `builds`) the base image it is built from; a host's own
    /// alias shows the host's words (`<base> + N package(s)`).
    pub image: String,
    /// Built on first use (the first session waits for the build).
    pub builds: bool,
    /// Whether this deployment's runtime catalog ships it.
    pub in_catalog: bool,
    /// None before a host answered.
    pub offered: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProbeStatus {
    /// The host answered and accepted the key.
    Ok,
    /// No request was sent (no key for a typed address).
    NotAsked,
    /// The host was asked and something is wrong.
    Failed,
}

/// The result of "Test this host" (and of the check a save runs).
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Probe {
    /// Whether the host was asked, and whether it answered well.
    pub status: ProbeStatus,
    /// What the answer means for the connection, in one word the Connections table shows too.
    pub health: Health,
    /// What happened, in words a person reads (never a key).
    pub message: String,
    /// This deployment's runtime catalog, each alias marked with whether the host offers it
    /// (unmarked when the host did not answer), then the host's own aliases the catalog lacks.
    pub runtimes: Vec<RuntimeMark>,
    /// The host's default alias, when it answered.
    pub host_default_runtime: Option<String>,
}

impl Probe {
    /// Whether the host offers `alias` (none: the host's own default, always offered). Unknown
    /// (true) while the host has not answered.
    pub fn offers(&self, alias: Option<&str>) -> bool {
        match alias {
            Some(a) if self.status == ProbeStatus::Ok => {
                self.runtimes.iter().any(|m| m.alias == a && m.offered == Some(true))
            }
            _ => true,
        }
    }
}
