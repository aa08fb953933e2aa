//! Talking to a connection's host: a client with the key from the vault (only a key bound to the
//! connection's address, see `keys.rs`), "Test this host" with a key the service chose, and
//! finding this deployment's own sandbox service. Role checks are the service's; these take the
//! organization they act in.

use secrecy::SecretString;

use url::Url;

use super::address;
use super::error::ConnectionError;
use super::keys;
use super::model::Connection;
use super::runtimes::{catalog_marks, marks_against, RuntimeMark};
use crate::sandbox::client::{SandboxdClient, SandboxdError};
use crate::state::AppState;
use crate::validate::FieldErrors;

type Result<T> = std::result::Result<T, ConnectionError>;

pub(super) fn invalid_address(message: impl Into<String>) -> ConnectionError {
    ConnectionError::Invalid(FieldErrors::one("address", message))
}

fn client(st: &AppState, address: &str, token: SecretString) -> Result<SandboxdClient> {
    let url = address::parse(address).map_err(invalid_address)?;
    Ok(SandboxdClient::new(st.http.clone(), url, token).with_expected_version(st.sandboxd_version.clone()))
}

/// A client for a saved connection, with its key from the vault: only a key of the host's purpose
/// that is bound to the connection's address (else no request is sent).
pub async fn client_for(st: &AppState, org_id: &str, conn: &Connection) -> Result<SandboxdClient> {
    let Some(address) = conn.address.as_deref() else {
        return Err(ConnectionError::NoAddress);
    };
    let Some(secret_id) = conn.credential_secret_id.as_deref() else {
        return Err(ConnectionError::NoCredential);
    };
    let cache_key = format!("{org_id}/{}", conn.id);
    let version = format!("{address}|{secret_id}|{}", conn.updated_at);
    if let Some(client) = st.client_cache.get(&cache_key, &version) {
        return Ok(client);
    }
    let token = keys::for_connection(st, org_id, conn).await?;
    if let Ok(url) = address::parse(address) {
        address::check_resolved(&url).await.map_err(ConnectionError::AddressRefused)?;
    }
    let client = client(st, address, token)?;
    st.client_cache.put(cache_key, version, client.clone());
    Ok(client)
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

/// The result of "Test this host".
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Probe {
    pub status: ProbeStatus,
    pub message: String,
    pub runtimes: Vec<RuntimeMark>,
    /// The host's default alias, when it answered.
    pub host_default_runtime: Option<String>,
}

impl Probe {
    /// No host answer: the catalog unmarked, and why.
    pub(super) fn unanswered(st: &AppState, status: ProbeStatus, message: String) -> Self {
        Probe { status, message, runtimes: catalog_marks(st), host_default_runtime: None }
    }
}

pub struct ProbeInput {
    pub address: String,
    pub credential_secret_id: String,
    pub new_key: Option<SecretString>,
    /// Probing a saved connection: its stored credential is used when nothing else is given.
    pub connection_id: Option<String>,
}

/// Asks the host at `url` (already parsed, shown as `address`) with `token`, the key the service
/// chose for exactly this address.
pub(super) async fn ask(st: &AppState, url: &Url, address: &str, token: SecretString) -> Result<Probe> {
    address::check_resolved(url).await.map_err(invalid_address)?;
    let client = client(st, address, token)?;
    let failed = |e: SandboxdError| Probe::unanswered(st, ProbeStatus::Failed, super::error::host_message(&e));
    let policy = match client.policy().await {
        Ok(p) => p,
        Err(e) => return Ok(failed(e)),
    };
    match client.missing_routes().await {
        Ok(missing) if !missing.is_empty() => {
            let e = SandboxdError::VersionMismatch { missing, expected: st.sandboxd_version.clone() };
            tracing::warn!(event = "sandboxd_version_mismatch", address = %address, "the probed host lacks routes this platform calls");
            return Ok(failed(e));
        }
        Err(e) => return Ok(failed(e)),
        Ok(_) => {}
    }
    let message = if policy.runtimes.is_empty() {
        "The host answered, but it allows no runtime: no sandbox can start there.".to_string()
    } else {
        format!(
            "The host answered and accepted the key. It offers {}.",
            crate::words::count(policy.runtimes.len(), "runtime", "runtimes")
        )
    };
    Ok(Probe {
        status: if policy.runtimes.is_empty() { ProbeStatus::Failed } else { ProbeStatus::Ok },
        message,
        runtimes: marks_against(st, &policy),
        host_default_runtime: Some(policy.default_runtime.clone()),
    })
}

/// The first compose address whose unauthenticated `/healthz` answers (only those two are asked).
pub async fn discover_local(st: &AppState) -> Option<String> {
    for a in &st.config.sandboxd.local_addresses {
        let Ok(url) = address::parse(a) else { continue };
        let c = SandboxdClient::new(st.http.clone(), url, SecretString::from(String::new()));
        if tokio::time::timeout(std::time::Duration::from_millis(1500), c.health()).await.is_ok_and(|r| r.is_ok()) {
            return Some(a.trim_end_matches('/').to_string());
        }
    }
    None
}
