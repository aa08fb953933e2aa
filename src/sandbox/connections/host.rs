//! Talking to a connection's host: a client with the key from the vault (this deployment's own
//! token only for the compose addresses), "Test this host", and finding this deployment's own
//! sandbox service. Role checks are the service's; these take the organization they act in.

use secrecy::{ExposeSecret, SecretString};

use super::address;
use super::error::ConnectionError;
use super::model::Connection;
use super::runtimes::{catalog_marks, marks_against, RuntimeMark};
use super::store;
use crate::sandbox::client::{SandboxdClient, SandboxdError};
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::vault::service as vault;

type Result<T> = std::result::Result<T, ConnectionError>;

/// Whether `address` is one of this deployment's own compose addresses (where `SANDBOXD_TOKEN`
/// may be used and `/healthz` may be asked unprompted).
fn is_local_address(st: &AppState, address: &str) -> bool {
    let a = address.trim().trim_end_matches('/');
    st.config.sandboxd.local_addresses.iter().any(|l| l.trim_end_matches('/') == a)
}

/// This deployment's own token, for its own compose addresses only.
pub fn local_token(st: &AppState, address: &str) -> Option<SecretString> {
    if is_local_address(st, address) {
        st.config.sandboxd.token.clone()
    } else {
        None
    }
}

fn invalid_address(message: impl Into<String>) -> ConnectionError {
    ConnectionError::Invalid(FieldErrors::one("address", message))
}

fn client(st: &AppState, address: &str, token: SecretString) -> Result<SandboxdClient> {
    let url = address::parse(address).map_err(invalid_address)?;
    Ok(SandboxdClient::new(st.http.clone(), url, token).with_expected_version(st.sandboxd_version.clone()))
}

/// A client for a saved connection, with the token from the vault.
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
    let client = fresh_client(st, org_id, address, secret_id).await?;
    st.client_cache.put(cache_key, version, client.clone());
    Ok(client)
}

async fn fresh_client(st: &AppState, org_id: &str, address: &str, secret_id: &str) -> Result<SandboxdClient> {
    let mut c = st.db.conn().await?;
    let token = vault::reveal(st, &mut c, org_id, secret_id).await?.ok_or(ConnectionError::NoCredential)?;
    if let Ok(url) = address::parse(address) {
        address::check_resolved(&url).await.map_err(ConnectionError::AddressRefused)?;
    }
    client(st, address, token)
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
    fn unanswered(st: &AppState, status: ProbeStatus, message: String) -> Self {
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

/// Asks a host before it is saved. Never sends a request to a typed address without a key.
pub async fn probe(st: &AppState, org_id: &str, input: ProbeInput) -> Result<Probe> {
    let url = address::parse(&input.address).map_err(invalid_address)?;
    let address = address::display(&url);
    let Some(token) = probe_token(st, org_id, &input, &address).await? else {
        return Ok(Probe::unanswered(
            st,
            ProbeStatus::NotAsked,
            "Pick a vault key or paste the host's token to test this host. No request was sent to this address.".into(),
        ));
    };
    address::check_resolved(&url).await.map_err(invalid_address)?;
    let client = client(st, &address, token)?;
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
        format!("The host answered and accepted the key. It offers {} runtime(s).", policy.runtimes.len())
    };
    Ok(Probe {
        status: if policy.runtimes.is_empty() { ProbeStatus::Failed } else { ProbeStatus::Ok },
        message,
        runtimes: marks_against(st, &policy),
        host_default_runtime: Some(policy.default_runtime.clone()),
    })
}

/// The key a probe sends: a pasted one, a chosen (or the saved connection's) vault key, or this
/// deployment's own token for its compose addresses.
async fn probe_token(st: &AppState, org_id: &str, input: &ProbeInput, address: &str) -> Result<Option<SecretString>> {
    if let Some(k) = input.new_key.as_ref().filter(|k| !k.expose_secret().trim().is_empty()) {
        return Ok(Some(SecretString::from(k.expose_secret().trim().to_string())));
    }
    let mut chosen = input.credential_secret_id.trim().to_string();
    if chosen.is_empty() {
        if let Some(id) = &input.connection_id {
            let mut c = st.db.conn().await?;
            let conn = store::get(&mut c, org_id, id).await?.ok_or(ConnectionError::NotFound)?;
            chosen = conn.credential_secret_id.unwrap_or_default();
        }
    }
    if chosen.is_empty() {
        return Ok(local_token(st, address));
    }
    let mut c = st.db.conn().await?;
    let token = vault::reveal(st, &mut c, org_id, &chosen).await?;
    token.map(Some).ok_or_else(ConnectionError::unknown_credential)
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
