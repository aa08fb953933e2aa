//! Connections: the rules of DESIGN.md §6. Names unique per organization, the first connection is
//! the default, exactly one default, credentials are vault references, and a host is asked only
//! with a key (this deployment's own token only for the compose addresses).

use secrecy::{ExposeSecret, SecretString};

use super::address;
use super::model::{Connection, ConnectionKind};
use super::store::{self, Values};
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::sandbox::client::ServicePolicy;
use crate::sandbox::client::{SandboxdClient, SandboxdError};
use crate::state::AppState;
use crate::validate;
use crate::vault::service::{self as vault, NewSecret};
use crate::web::{AppError, FieldErrors, Kind};

#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("not found")]
    NotFound,
    #[error("not allowed")]
    Forbidden,
    #[error("invalid input")]
    Invalid(FieldErrors),
    #[error("{0}")]
    Refused(String),
    #[error("this connection has no credential in the vault")]
    NoCredential,
    #[error(transparent)]
    Host(#[from] SandboxdError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl From<DbError> for ConnectionError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::NotFound => ConnectionError::NotFound,
            other => ConnectionError::Internal(other.into()),
        }
    }
}

impl From<AppError> for ConnectionError {
    fn from(e: AppError) -> Self {
        match e.kind {
            Kind::NotFound => ConnectionError::NotFound,
            Kind::Forbidden => ConnectionError::Forbidden,
            Kind::Invalid => ConnectionError::Invalid(e.fields),
            _ => ConnectionError::Internal(anyhow::anyhow!("{e}")),
        }
    }
}

/// The HTTP status a host failure maps to.
pub fn host_error(e: &SandboxdError) -> AppError {
    let kind = match e {
        SandboxdError::Capacity { .. } => Kind::TooManyRequests,
        SandboxdError::Unreachable { .. } | SandboxdError::Timeout => Kind::BadGateway,
        _ => Kind::BadGateway,
    };
    AppError::new(kind, host_message(e))
}

/// A host failure in the words a person reads (never the address or a token).
pub fn host_message(e: &SandboxdError) -> String {
    e.in_words()
}

impl From<ConnectionError> for AppError {
    fn from(e: ConnectionError) -> Self {
        match e {
            ConnectionError::NotFound => AppError::not_found(),
            ConnectionError::Forbidden => AppError::forbidden(),
            ConnectionError::Invalid(f) => AppError::invalid(f),
            ConnectionError::Refused(m) => AppError::new(Kind::Conflict, m),
            ConnectionError::NoCredential => AppError::new(
                Kind::Conflict,
                "This connection has no credential in the vault. Edit it and pick or paste the host's token.",
            ),
            ConnectionError::Host(h) => host_error(&h),
            ConnectionError::Internal(e) => AppError::internal(e),
        }
    }
}

type Result<T> = std::result::Result<T, ConnectionError>;

fn ensure_see(caller: &Caller) -> Result<()> {
    if caller.role.can_see_sandboxes() {
        Ok(())
    } else {
        Err(ConnectionError::Forbidden)
    }
}

fn ensure_manage(caller: &Caller) -> Result<()> {
    if caller.role.can_manage_connections() {
        Ok(())
    } else {
        Err(ConnectionError::Forbidden)
    }
}

pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<Connection>> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    Ok(store::list(&mut c, &caller.org_id).await?)
}

pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    store::get(&mut c, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)
}

/// What a person typed into the connection dialog (or sent to the API).
#[derive(Debug, Default)]
pub struct ConnectionInput {
    pub name: String,
    pub kind: String,
    pub address: String,
    /// A vault secret id, or empty for none.
    pub credential_secret_id: String,
    /// A token pasted into the dialog: stored in the vault on save, and usable for a probe.
    pub new_key: Option<SecretString>,
    /// A runtime alias, or empty for the host's default.
    pub default_runtime: String,
}

struct Checked {
    name: String,
    kind: ConnectionKind,
    address: Option<String>,
    default_runtime: Option<String>,
}

fn check(input: &ConnectionInput) -> std::result::Result<Checked, FieldErrors> {
    let mut errors = FieldErrors::new();
    let name = validate::name(&mut errors, "name", &input.name, "connection name");
    let kind = ConnectionKind::parse(&input.kind);
    if kind.is_none() {
        errors.add("kind", "Choose sandboxd or daytona.");
    }
    let address = match (kind, input.address.trim()) {
        (Some(ConnectionKind::Daytona), "") => None,
        (_, raw) => match address::parse(raw) {
            Ok(url) => Some(address::display(&url)),
            Err(m) => {
                errors.add("address", m);
                None
            }
        },
    };
    let runtime = input.default_runtime.trim();
    let default_runtime = if runtime.is_empty() {
        None
    } else if crate::catalog::is_valid_alias(runtime) {
        Some(runtime.to_string())
    } else {
        errors.add(
            "default_runtime",
            "A runtime alias is lower-case letters, digits and dashes, starting with a letter.",
        );
        None
    };
    if let Some(k) = &input.new_key {
        let v = k.expose_secret();
        if !v.is_empty() && v.trim().is_empty() {
            errors.add("new_key", "The key is blank.");
        }
    }
    errors.into_result().map(|()| Checked {
        name,
        kind: kind.unwrap_or(ConnectionKind::Sandboxd),
        address,
        default_runtime,
    })
}

/// Whether `address` is one of this deployment's own compose addresses (where `SANDBOXD_TOKEN`
/// may be used and `/healthz` may be asked unprompted).
pub fn is_local_address(st: &AppState, address: &str) -> bool {
    let a = address.trim().trim_end_matches('/');
    st.config.sandboxd.local_addresses.iter().any(|l| l.trim_end_matches('/') == a)
}

fn local_token(st: &AppState, address: &str) -> Option<SecretString> {
    if is_local_address(st, address) {
        st.config.sandboxd.token.clone()
    } else {
        None
    }
}

/// Resolves the credential choice inside the transaction: an existing secret of this
/// organization, a new key stored now, or (compose addresses only) this deployment's token.
async fn resolve_credential(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    checked: &Checked,
    input: &ConnectionInput,
) -> Result<Option<String>> {
    let new_key = input.new_key.as_ref().filter(|k| !k.expose_secret().trim().is_empty());
    if let Some(key) = new_key {
        let name = unique_secret_name(tx, caller, &format!("{} token", checked.name)).await?;
        let secret = vault::create_in(
            st,
            tx,
            caller,
            NewSecret { name, purpose: checked.kind.as_str().to_string(), value: key.clone() },
        )
        .await?;
        return Ok(Some(secret.id));
    }
    let chosen = input.credential_secret_id.trim();
    if !chosen.is_empty() {
        if crate::vault::store::get(tx, &caller.org_id, chosen).await?.is_none() {
            let mut f = FieldErrors::new();
            f.add("credential", "This key is not in this organization's vault.");
            return Err(ConnectionError::Invalid(f));
        }
        return Ok(Some(chosen.to_string()));
    }
    if checked.kind == ConnectionKind::Sandboxd {
        if let Some(token) = checked.address.as_deref().and_then(|a| local_token(st, a)) {
            let name = unique_secret_name(tx, caller, "sandboxd token (this deployment)").await?;
            let secret =
                vault::create_in(st, tx, caller, NewSecret { name, purpose: "sandboxd".into(), value: token }).await?;
            return Ok(Some(secret.id));
        }
    }
    Ok(None)
}

async fn unique_secret_name(tx: &mut db::Conn, caller: &Caller, base: &str) -> Result<String> {
    let taken: Vec<String> = crate::vault::store::list(tx, &caller.org_id).await?.into_iter().map(|s| s.name).collect();
    let base: String = base.chars().take(90).collect();
    if !taken.contains(&base) {
        return Ok(base);
    }
    Ok((2..).map(|n| format!("{base} ({n})")).find(|n| !taken.contains(n)).unwrap_or(base))
}

fn name_taken() -> ConnectionError {
    let mut f = FieldErrors::new();
    f.add("name", "A connection with this name exists already in this organization.");
    ConnectionError::Invalid(f)
}

pub async fn create(st: &AppState, caller: &Caller, input: ConnectionInput) -> Result<Connection> {
    ensure_manage(caller)?;
    let checked = check(&input).map_err(ConnectionError::Invalid)?;
    let mut tx = st.db.begin().await?;
    let credential = resolve_credential(st, &mut tx, caller, &checked, &input).await?;
    let is_first = store::count(&mut tx, &caller.org_id).await? == 0;
    let id = db::new_id();
    let values = Values {
        name: &checked.name,
        kind: checked.kind,
        address: checked.address.as_deref(),
        credential_secret_id: credential.as_deref(),
        default_runtime: checked.default_runtime.as_deref(),
    };
    match store::insert(&mut tx, &id, &caller.org_id, &values, is_first, db::now_ms()).await {
        Err(DbError::Conflict { constraint }) if !constraint.contains("one_default") => return Err(name_taken()),
        other => other?,
    }
    audit::record(
        &mut tx,
        &caller.org_id,
        &caller.actor(),
        "connection.created",
        &checked.name,
        &format!("{}{}", checked.kind, if is_first { ", default" } else { "" }),
    )
    .await?;
    let conn = store::get(&mut tx, &caller.org_id, &id).await?.ok_or(ConnectionError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(conn)
}

pub async fn update(st: &AppState, caller: &Caller, id: &str, input: ConnectionInput) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    let checked = check(&input).map_err(ConnectionError::Invalid)?;
    // Keeping the stored credential is the default of an edit: an empty choice keeps it.
    let mut input = input;
    if input.credential_secret_id.trim().is_empty()
        && input.new_key.as_ref().is_none_or(|k| k.expose_secret().is_empty())
    {
        input.credential_secret_id = existing.credential_secret_id.clone().unwrap_or_default();
    }
    let credential = resolve_credential(st, &mut tx, caller, &checked, &input).await?;
    let values = Values {
        name: &checked.name,
        kind: checked.kind,
        address: checked.address.as_deref(),
        credential_secret_id: credential.as_deref(),
        default_runtime: checked.default_runtime.as_deref(),
    };
    match store::update(&mut tx, &caller.org_id, id, &values, db::now_ms()).await {
        Err(DbError::Conflict { .. }) => return Err(name_taken()),
        other => other?,
    };
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.updated", &checked.name, "").await?;
    let conn = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(conn)
}

pub async fn set_enabled(st: &AppState, caller: &Caller, id: &str, enabled: bool) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    store::set_enabled(&mut tx, &caller.org_id, id, enabled, db::now_ms()).await?;
    let action = if enabled { "connection.switched_on" } else { "connection.switched_off" };
    audit::record(&mut tx, &caller.org_id, &caller.actor(), action, &existing.name, "").await?;
    let conn = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(conn)
}

pub async fn make_default(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    store::make_default(&mut tx, &caller.org_id, id, db::now_ms()).await?;
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.made_default", &existing.name, "").await?;
    let conn = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(conn)
}

/// Deletes a connection; when it was the default, the oldest remaining one inherits that role.
pub async fn delete(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = store::get(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
    store::delete(&mut tx, &caller.org_id, id).await?;
    let mut detail = String::new();
    if existing.is_default {
        if let Some(next) = store::oldest(&mut tx, &caller.org_id).await? {
            store::make_default(&mut tx, &caller.org_id, &next, db::now_ms()).await?;
            detail = "the oldest remaining connection is the default now".into();
        }
    }
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.deleted", &existing.name, &detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(existing)
}

// ---------------------------------------------------------------------------------------------
// Talking to a host

fn client(st: &AppState, address: &str, token: SecretString) -> Result<SandboxdClient> {
    let url = address::parse(address).map_err(|m| {
        let mut f = FieldErrors::new();
        f.add("address", m);
        ConnectionError::Invalid(f)
    })?;
    Ok(SandboxdClient::new(st.http.clone(), url, token).with_expected_version(st.sandboxd_version.clone()))
}

/// A client for a saved connection, with the token from the vault.
pub async fn client_for(st: &AppState, org_id: &str, conn: &Connection) -> Result<SandboxdClient> {
    let Some(address) = conn.address.as_deref() else {
        return Err(ConnectionError::Refused("This connection has no address.".into()));
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
        address::check_resolved(&url).await.map_err(ConnectionError::Refused)?;
    }
    client(st, address, token)
}

/// How a catalog alias fares on a probed host.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct RuntimeMark {
    pub alias: String,
    pub description: String,
    pub in_catalog: bool,
    /// None before a host answered.
    pub offered: Option<bool>,
}

impl RuntimeMark {
    /// "offered by this host", "not on this host", "only on this host", or "" before a probe.
    pub fn mark(&self) -> &'static str {
        match (self.in_catalog, self.offered) {
            (_, None) => "",
            (true, Some(true)) => "offered by this host",
            (true, Some(false)) => "not on this host",
            (false, _) => "only on this host",
        }
    }
}

/// The catalog's aliases, unmarked: what the dialog offers before any host is asked.
pub fn catalog_marks(st: &AppState) -> Vec<RuntimeMark> {
    st.catalog
        .entries()
        .iter()
        .map(|e| RuntimeMark {
            alias: e.alias.clone(),
            description: e.description.clone(),
            in_catalog: true,
            offered: None,
        })
        .collect()
}

/// The catalog marked against a host's allowlist, the host's own extra aliases appended.
pub fn marks_against(st: &AppState, policy: &ServicePolicy) -> Vec<RuntimeMark> {
    let offered: Vec<&str> = policy.runtimes.iter().map(|r| r.alias.as_str()).collect();
    let mut marks: Vec<RuntimeMark> = catalog_marks(st)
        .into_iter()
        .map(|mut m| {
            m.offered = Some(offered.contains(&m.alias.as_str()));
            m
        })
        .collect();
    for r in &policy.runtimes {
        if st.catalog.get(&r.alias).is_none() {
            marks.push(RuntimeMark {
                alias: r.alias.clone(),
                description: r.description.clone(),
                in_catalog: false,
                offered: Some(true),
            });
        }
    }
    marks
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

pub struct ProbeInput {
    pub address: String,
    pub credential_secret_id: String,
    pub new_key: Option<SecretString>,
    /// Probing a saved connection: its stored credential is used when nothing else is given.
    pub connection_id: Option<String>,
}

/// Asks a host before it is saved. Never sends a request to a typed address without a key.
pub async fn probe(st: &AppState, caller: &Caller, input: ProbeInput) -> Result<Probe> {
    ensure_manage(caller)?;
    let not_asked = |message: &str| Probe {
        status: ProbeStatus::NotAsked,
        message: message.to_string(),
        runtimes: catalog_marks(st),
        host_default_runtime: None,
    };
    let url = match address::parse(&input.address) {
        Ok(u) => u,
        Err(m) => {
            let mut f = FieldErrors::new();
            f.add("address", m);
            return Err(ConnectionError::Invalid(f));
        }
    };
    let address = address::display(&url);
    let token =
        match probe_token(st, caller, &input, &address).await? {
            Some(t) => t,
            None => return Ok(not_asked(
                "Pick a vault key or paste the host's token to test this host. No request was sent to this address.",
            )),
        };
    if let Err(m) = address::check_resolved(&url).await {
        let mut f = FieldErrors::new();
        f.add("address", m);
        return Err(ConnectionError::Invalid(f));
    }
    let client = client(st, &address, token)?;
    let failed = |e: SandboxdError| Probe {
        status: ProbeStatus::Failed,
        message: host_message(&e),
        runtimes: catalog_marks(st),
        host_default_runtime: None,
    };
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

async fn probe_token(
    st: &AppState,
    caller: &Caller,
    input: &ProbeInput,
    address: &str,
) -> Result<Option<SecretString>> {
    if let Some(k) = input.new_key.as_ref().filter(|k| !k.expose_secret().trim().is_empty()) {
        return Ok(Some(SecretString::from(k.expose_secret().trim().to_string())));
    }
    let mut chosen = input.credential_secret_id.trim().to_string();
    if chosen.is_empty() {
        if let Some(id) = &input.connection_id {
            let mut c = st.db.conn().await?;
            let conn = store::get(&mut c, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)?;
            chosen = conn.credential_secret_id.unwrap_or_default();
        }
    }
    if !chosen.is_empty() {
        let mut c = st.db.conn().await?;
        return match vault::reveal(st, &mut c, &caller.org_id, &chosen).await? {
            Some(t) => Ok(Some(t)),
            None => {
                let mut f = FieldErrors::new();
                f.add("credential", "This key is not in this organization's vault.");
                Err(ConnectionError::Invalid(f))
            }
        };
    }
    Ok(local_token(st, address))
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

/// The live policy of a saved sandboxd connection.
pub async fn policy(st: &AppState, caller: &Caller, id: &str) -> Result<(Connection, ServicePolicy)> {
    let conn = get(st, caller, id).await?;
    if conn.kind != ConnectionKind::Sandboxd {
        return Err(ConnectionError::Refused("Daytona connections have no sandboxd policy.".into()));
    }
    let client = client_for(st, &caller.org_id, &conn).await?;
    let policy = client.policy().await?;
    Ok((conn, policy))
}

// ---------------------------------------------------------------------------------------------
// For the workspaces service: connections of an organization whose access it decided itself

/// A connection of `org_id`, if it exists.
pub async fn for_org(st: &AppState, org_id: &str, id: &str) -> Result<Option<Connection>> {
    let mut c = st.db.conn().await?;
    Ok(store::get(&mut c, org_id, id).await?)
}

/// The default connection of `org_id`, if it has one.
pub async fn default_for_org(st: &AppState, org_id: &str) -> Result<Option<Connection>> {
    let mut c = st.db.conn().await?;
    Ok(store::list(&mut c, org_id).await?.into_iter().find(|c| c.is_default))
}
