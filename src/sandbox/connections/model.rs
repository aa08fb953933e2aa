use serde::Serialize;

/// What kind of host a connection registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConnectionKind {
    Sandboxd,
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
    pub id: String,
    pub name: String,
    pub kind: ConnectionKind,
    pub address: Option<String>,
    /// The vault secret the host's token is kept in.
    pub credential_secret_id: Option<String>,
    pub credential_name: Option<String>,
    /// `in the vault` or `missing`.
    pub credential: &'static str,
    /// The runtime alias new workspaces get; none means the host's own default.
    pub default_runtime: Option<String>,
    pub is_default: bool,
    pub is_enabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Connection {
    pub fn has_credential(&self) -> bool {
        self.credential_name.is_some()
    }
}
