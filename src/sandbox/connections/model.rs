use serde::Serialize;

/// What kind of host a connection registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionKind {
    /// A sandboxd host: workspaces with files and a shell.
    Sandboxd,
    /// Daytona: can be registered; its workspaces are not supported yet.
    Daytona,
}

impl ConnectionKind {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "sandboxd" => Some(ConnectionKind::Sandboxd),
            "daytona" => Some(ConnectionKind::Daytona),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionKind::Sandboxd => "sandboxd",
            ConnectionKind::Daytona => "daytona",
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            ConnectionKind::Sandboxd => "sandboxd",
            ConnectionKind::Daytona => "Daytona",
        }
    }
}

impl std::fmt::Display for ConnectionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
}

impl Connection {
    pub fn has_credential(&self) -> bool {
        self.credential_name.is_some()
    }
}
