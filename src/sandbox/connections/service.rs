//! Connections: the rules of DESIGN.md §6. Names unique per organization, the first connection is
//! the default, exactly one default, credentials are vault references, and a host is asked only
//! with a key (this deployment's own token only for the compose addresses).

use secrecy::{ExposeSecret, SecretString};

use super::address;
use super::error::ConnectionError;
use super::host;
pub use super::host::{client_for, discover_local, Probe, ProbeInput, ProbeStatus};
use super::model::{Connection, ConnectionKind};
pub use super::runtimes::{catalog_marks, RuntimeMark};
use super::store::{self, Values};
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::sandbox::client::ServicePolicy;
use crate::state::AppState;
use crate::validate::{self, FieldErrors, NameTaken as _};
use crate::vault::error::VaultError;
use crate::vault::service::{self as vault, NewSecret};

type Result<T> = std::result::Result<T, ConnectionError>;

/// What a taken name is called in the message.
const A_CONNECTION: &str = "A connection";

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

/// A connection of the caller's organization; another organization's is `NotFound`.
async fn existing(c: &mut db::Conn, caller: &Caller, id: &str) -> Result<Connection> {
    store::get(c, &caller.org_id, id).await?.ok_or(ConnectionError::NotFound)
}

pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<Connection>> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    Ok(store::list(&mut c, &caller.org_id).await?)
}

pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    existing(&mut c, caller, id).await
}

/// Every connection of every organization, as (organization id, organization name,
/// connection), in organization then name order (for `agenticos doctor`, run by the operator:
/// no caller).
pub async fn everywhere(st: &AppState) -> Result<Vec<(String, String, Connection)>> {
    let mut c = st.db.conn().await?;
    let connections = store::all(&mut c).await?;
    let names = store::organization_names(&mut c).await?;
    let name_of = |org_id: &str| names.iter().find(|(id, _)| id == org_id).map_or(org_id, |(_, n)| n).to_string();
    Ok(connections.into_iter().map(|(org_id, conn)| (org_id.clone(), name_of(&org_id), conn)).collect())
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

impl Checked {
    fn values<'a>(&'a self, credential_secret_id: Option<&'a str>) -> Values<'a> {
        Values {
            name: &self.name,
            kind: self.kind,
            address: self.address.as_deref(),
            credential_secret_id,
            default_runtime: self.default_runtime.as_deref(),
        }
    }
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
        let base = format!("{} token", checked.name);
        return Ok(Some(store_key(st, tx, caller, &base, checked.kind.as_str(), key.clone()).await?));
    }
    let chosen = input.credential_secret_id.trim();
    if !chosen.is_empty() {
        return match vault::get_in(tx, caller, chosen).await {
            Ok(secret) => Ok(Some(secret.id)),
            Err(VaultError::NotFound) => Err(ConnectionError::unknown_credential()),
            Err(e) => Err(e.into()),
        };
    }
    if checked.kind == ConnectionKind::Sandboxd {
        if let Some(token) = checked.address.as_deref().and_then(|a| host::local_token(st, a)) {
            let base = "sandboxd token (this deployment)";
            return Ok(Some(store_key(st, tx, caller, base, "sandboxd", token).await?));
        }
    }
    Ok(None)
}

/// Stores a host's key in the vault under a free name made of `base`; the secret's id.
async fn store_key(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    base: &str,
    purpose: &str,
    value: SecretString,
) -> Result<String> {
    let name = vault::free_name_in(tx, caller, base).await?;
    let secret = vault::create_in(st, tx, caller, NewSecret { name, purpose: purpose.to_string(), value }).await?;
    Ok(secret.id)
}

/// Records `action` on connection `id` and commits: the connection as it is now.
async fn commit_audited(
    mut tx: db::Tx,
    caller: &Caller,
    id: &str,
    action: &str,
    name: &str,
    detail: &str,
) -> Result<Connection> {
    audit::record(&mut tx, &caller.org_id, &caller.actor(), action, name, detail).await?;
    let conn = existing(&mut tx, caller, id).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(conn)
}

pub async fn create(st: &AppState, caller: &Caller, input: ConnectionInput) -> Result<Connection> {
    ensure_manage(caller)?;
    let checked = check(&input).map_err(ConnectionError::Invalid)?;
    let mut tx = st.db.begin().await?;
    let credential = resolve_credential(st, &mut tx, caller, &checked, &input).await?;
    let is_first = store::count(&mut tx, &caller.org_id).await? == 0;
    let id = db::new_id();
    let values = checked.values(credential.as_deref());
    match store::insert(&mut tx, &id, &caller.org_id, &values, is_first, db::now_ms()).await {
        // Two first connections at once: the one-default index refuses one; no name clash.
        Err(e) if matches!(&e, DbError::Conflict { constraint } if constraint.contains("one_default")) => {
            return Err(e.into())
        }
        other => other.or_name_taken(A_CONNECTION, ConnectionError::Invalid)?,
    }
    let detail = format!("{}{}", checked.kind, if is_first { ", default" } else { "" });
    commit_audited(tx, caller, &id, "connection.created", &checked.name, &detail).await
}

pub async fn update(st: &AppState, caller: &Caller, id: &str, input: ConnectionInput) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = existing(&mut tx, caller, id).await?;
    let checked = check(&input).map_err(ConnectionError::Invalid)?;
    // Keeping the stored credential is the default of an edit: an empty choice keeps it.
    let mut input = input;
    if input.credential_secret_id.trim().is_empty()
        && input.new_key.as_ref().is_none_or(|k| k.expose_secret().is_empty())
    {
        input.credential_secret_id = existing.credential_secret_id.clone().unwrap_or_default();
    }
    let credential = resolve_credential(st, &mut tx, caller, &checked, &input).await?;
    store::update(&mut tx, &caller.org_id, id, &checked.values(credential.as_deref()), db::now_ms())
        .await
        .or_name_taken(A_CONNECTION, ConnectionError::Invalid)?;
    commit_audited(tx, caller, id, "connection.updated", &checked.name, "").await
}

pub async fn set_enabled(st: &AppState, caller: &Caller, id: &str, enabled: bool) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = existing(&mut tx, caller, id).await?;
    store::set_enabled(&mut tx, &caller.org_id, id, enabled, db::now_ms()).await?;
    let action = if enabled { "connection.switched_on" } else { "connection.switched_off" };
    commit_audited(tx, caller, id, action, &existing.name, "").await
}

pub async fn make_default(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = existing(&mut tx, caller, id).await?;
    store::make_default(&mut tx, &caller.org_id, id, db::now_ms()).await?;
    commit_audited(tx, caller, id, "connection.made_default", &existing.name, "").await
}

/// Deletes a connection; when it was the default, the oldest remaining one inherits that role.
pub async fn delete(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let existing = existing(&mut tx, caller, id).await?;
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

/// Asks a host before it is saved. Never sends a request to a typed address without a key.
pub async fn probe(st: &AppState, caller: &Caller, input: ProbeInput) -> Result<Probe> {
    ensure_manage(caller)?;
    host::probe(st, &caller.org_id, input).await
}

/// Asks the host of a saved connection, with its stored credential.
pub async fn probe_saved(st: &AppState, caller: &Caller, id: &str) -> Result<Probe> {
    let conn = get(st, caller, id).await?;
    let input = ProbeInput {
        address: conn.address.unwrap_or_default(),
        credential_secret_id: String::new(),
        new_key: None,
        connection_id: Some(conn.id),
    };
    probe(st, caller, input).await
}

/// The live policy of a saved sandboxd connection.
pub async fn policy(st: &AppState, caller: &Caller, id: &str) -> Result<(Connection, ServicePolicy)> {
    let conn = get(st, caller, id).await?;
    if conn.kind != ConnectionKind::Sandboxd {
        return Err(ConnectionError::NotSandboxd);
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
