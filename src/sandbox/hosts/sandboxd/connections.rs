//! Talking to a connection's host: a client with the key from the vault (only a key bound to the
//! connection's address, see `keys.rs`), "Test this host" with a key the service chose, and
//! finding this deployment's own sandbox service. Role checks are the service's; these take the
//! organization they act in.

use secrecy::SecretString;

use url::Url;

use crate::sandbox::connections::address;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::keys;
use crate::sandbox::connections::model::Connection;
use crate::sandbox::connections::model::Health;
pub use crate::sandbox::connections::model::{Probe, ProbeStatus};
use crate::sandbox::connections::runtimes::{catalog_marks, marks_against};
use crate::sandbox::connections::words::{FormWords, Part};
use crate::sandbox::hosts::error::HostError;
use crate::sandbox::hosts::sandboxd::client::{SandboxdClient, SandboxdError};
use crate::state::AppState;

type Result<T> = std::result::Result<T, ConnectionError>;

/// What the connection form says for a sandboxd host.
pub const FORM_WORDS: FormWords = FormWords {
    kind_hint: &[Part::Text("sandboxd runs a container per session on your host.")],
    address_label: "Address",
    address_placeholder: "http://sandboxd:8080",
    address_rule: "http(s), no credentials in the address.",
    offers_discovered: true,
    credential_legend: "Host token",
    credential_warning: &[
        Part::Text("This token is root on the host: sandboxd starts containers through the host's Docker daemon, so whoever holds the token controls the machine. It is kept encrypted in the vault, sent only to this address as the "),
        Part::Code("X-Sandbox-Token"),
        Part::Text(" header, and never shown again."),
    ],
    credential_warning_class: "alert alert-warning token-warning",
    paste_option: "Paste a new token",
    new_key_label: "New token",
    new_key_hint: &[
        Part::Text("The host's "),
        Part::Mono("SANDBOXD_TOKEN"),
        Part::Text(". Stored in the vault when you save, for this address only. Left empty at this deployment's own sandbox service, this deployment's token is used."),
    ],
    runtime_label: "Default runtime",
    typed_runtime_hint: None,
    probe_label: "Test this host",
};

/// A client for `address` with `token`, the key the service chose for exactly this address.
pub fn client(st: &AppState, address: &str, token: SecretString) -> Result<SandboxdClient> {
    let url = address::parse(address).map_err(address::invalid_address)?;
    Ok(SandboxdClient::new(st.http.clone(), url, token)
        .with_expected_version(st.sandboxd_version.clone())
        .with_thread_pools())
}

/// A client for a saved connection, with its key from the vault: only a key of the host's purpose
/// that is bound to the connection's address (else no request is sent).
pub async fn client_for(st: &AppState, org_id: &str, conn: &Connection) -> Result<SandboxdClient> {
    let Some(address) = conn.address.as_deref() else {
        return Err(ConnectionError::NoAddress);
    };
    if conn.credential_secret_id.is_none() {
        return Err(ConnectionError::NoCredential);
    }
    let cache_key = format!("{org_id}/{}", conn.id);
    let version = conn.version();
    if let Some(client) = st.client_cache.get(&cache_key, &version) {
        return Ok(client);
    }
    let token = keys::for_connection(st, org_id, conn).await?;
    if let Ok(url) = address::parse(address) {
        address::check_resolved(&url).await.map_err(ConnectionError::AddressRefused)?;
    }
    let client = client(st, address, token)?.for_connection(&conn.id);
    st.client_cache.put(cache_key, version, client.clone());
    Ok(client)
}

impl Probe {
    /// No host answer: the catalog unmarked, and why.
    pub(crate) fn unanswered(st: &AppState, status: ProbeStatus, health: Health, message: String) -> Self {
        Probe { status, health, message, runtimes: catalog_marks(st), host_default_runtime: None }
    }

    /// A host that could not be asked or did not answer well, in its words.
    pub(crate) fn failed(st: &AppState, e: SandboxdError) -> Self {
        let e = HostError::from(e);
        Probe::unanswered(
            st,
            ProbeStatus::Failed,
            Health::of_error(&e),
            crate::sandbox::connections::error::host_message(&e),
        )
    }
}
pub struct ProbeInput {
    /// `sandboxd` or `daytona` (empty: sandboxd).
    pub kind: String,
    /// For Daytona, an API URL (empty: Daytona's cloud).
    pub address: String,
    /// The runtime (a sandboxd alias) or snapshot (Daytona) the connection would start from:
    /// Daytona is asked whether that snapshot exists (none: the organization's default).
    pub default_runtime: Option<String>,
    pub credential_secret_id: String,
    pub new_key: Option<SecretString>,
    /// Probing a saved connection: its stored credential is used when nothing else is given.
    pub connection_id: Option<String>,
}

/// Asks the host at `url` (already parsed, shown as `address`) with `token`, the key the service
/// chose for exactly this address.
pub async fn ask(st: &AppState, url: &Url, address: &str, token: SecretString) -> Result<Probe> {
    address::check_resolved(url).await.map_err(address::invalid_address)?;
    let client = client(st, address, token)?;
    Ok(ask_with(st, &client, address).await)
}

/// Asks a saved connection's host with its stored key (only a key bound to its address).
pub async fn ask_saved(st: &AppState, org_id: &str, conn: &Connection) -> Result<Probe> {
    let client = client_for(st, org_id, conn).await?;
    Ok(ask_with(st, &client, conn.address.as_deref().unwrap_or_default()).await)
}

/// Asks a host through `client` (whose address is `address`, for the log only): its policy (the
/// key is accepted, runtimes allowed) and its index (every route this platform calls is served),
/// both at once.
pub async fn ask_with(st: &AppState, client: &SandboxdClient, address: &str) -> Probe {
    let (policy, missing) = tokio::join!(client.policy(), client.missing_routes());
    let policy = match policy {
        Ok(p) => p,
        Err(e) => return Probe::failed(st, e),
    };
    match missing {
        Ok(missing) if !missing.is_empty() => {
            let e = SandboxdError::VersionMismatch { missing, expected: st.sandboxd_version.clone() };
            tracing::warn!(event = "sandboxd_version_mismatch", address = %address, "the probed host lacks routes this platform calls");
            return Probe::failed(st, e);
        }
        Err(e) => return Probe::failed(st, e),
        Ok(_) => {}
    }
    let (status, health, message) = match policy.runtimes.len() {
        0 => (
            ProbeStatus::Failed,
            Health::NoRuntime,
            "The host answered, but it allows no runtime: no sandbox can start there.".to_string(),
        ),
        1 => (ProbeStatus::Ok, Health::Healthy, "The host answered and accepted the key. It offers 1 runtime.".into()),
        n => (
            ProbeStatus::Ok,
            Health::Healthy,
            format!(
                "The host answered and accepted the key. It offers {}.",
                crate::words::count(n, "runtime", "runtimes")
            ),
        ),
    };
    Probe {
        status,
        health,
        message,
        runtimes: marks_against(st, &policy),
        host_default_runtime: Some(policy.default_runtime.clone()),
    }
}

/// The first compose address whose unauthenticated `/healthz` answers (only those are asked).
pub async fn first_local_answering(st: &AppState) -> Option<String> {
    for a in &st.config.sandboxd.local_addresses {
        let Ok(url) = address::parse(a) else { continue };
        let c = SandboxdClient::new(st.http.clone(), url, SecretString::from(String::new()));
        if tokio::time::timeout(std::time::Duration::from_millis(1500), c.health()).await.is_ok_and(|r| r.is_ok()) {
            return Some(a.trim_end_matches('/').to_string());
        }
    }
    None
}
