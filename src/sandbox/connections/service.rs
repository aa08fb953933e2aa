//! Connections: the rules of docs/design.md §6. Names unique per organization, the first connection is
//! the default, exactly one default, credentials are vault references, and a host is asked only
//! with a key (this deployment's own token only for the compose addresses). A stored key goes
//! only to the address it was saved for (`keys.rs`); address changes and probes are audited.

use secrecy::{ExposeSecret, SecretString};

use super::address;
use super::common::{at, ensure_manage, existing, forget_cached};
pub use super::delete::{delete, delete_preview, DeletePreview, Deleted, KeyOutcome};
use super::error::{ConnectionError, HostCheck};
use super::health;
use super::identity::{self, SameHost};
pub use super::identity::{discover_local, LocalService};
use super::keys::{self, at_field, Bind};
use super::model::{Connection, ConnectionKind};
pub use super::model::{ConnectionHealth, Health};
pub use super::runtimes::{catalog_marks, RuntimeMark};
use super::store::{self, Values};
use crate::access::Caller;
use crate::audit::service as audit;
use crate::db::{self, DbError};
pub use crate::sandbox::hosts::daytona::connections::client_for as daytona_client_for;
use crate::sandbox::hosts::sandboxd::client::ServicePolicy;
use crate::sandbox::hosts::sandboxd::connections as host;
pub use crate::sandbox::hosts::sandboxd::connections::{client_for, Probe, ProbeInput, ProbeStatus};
use crate::state::AppState;
use crate::validate::{self, FieldErrors, NameTaken as _};
use crate::vault::model::BOUND_TO_LOCAL;
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

pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<Connection>> {
    ensure_see(caller)?;
    let mut c = st.db.conn().await?;
    Ok(store::list(&mut c, &caller.org_id).await?)
}

/// The connections, each with its health when it is known without asking a host (cached, switched
/// off, Daytona): what the Connections table shows at once.
pub async fn list_with_known_health(
    st: &AppState,
    caller: &Caller,
) -> Result<Vec<(Connection, Option<ConnectionHealth>)>> {
    let conns = list(st, caller).await?;
    let known = health::known(st, &caller.org_id, &conns);
    Ok(conns.into_iter().zip(known).collect())
}

/// Every connection's health: cached answers, other hosts asked in parallel, each briefly.
pub async fn health_of_all(st: &AppState, caller: &Caller) -> Result<Vec<(Connection, ConnectionHealth)>> {
    let conns = list(st, caller).await?;
    let healths = health::of_all(st, &caller.org_id, &conns).await?;
    Ok(conns.into_iter().zip(healths).collect())
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
    /// Save even when the host's check fails (the Connections table then shows why).
    pub save_anyway: bool,
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
        errors.add("kind", KIND_CHOICE);
    }
    let address = match (kind.and_then(ConnectionKind::default_address), input.address.trim()) {
        (Some(default), "") => Some(default.to_string()),
        (_, raw) => match address::parse(raw) {
            Ok(url) => Some(address::display(&url)),
            Err(m) => {
                errors.add("address", m);
                None
            }
        },
    };
    let default_runtime = default_runtime(&mut errors, kind, input.default_runtime.trim());
    if let Some(k) = &input.new_key {
        let v = k.expose_secret();
        if !v.is_empty() && v.trim().is_empty() {
            errors.add("new_key", "The key is blank.");
        } else if vault::has_line_break(v) {
            errors.add("new_key", vault::KEY_LINE_BREAK);
        }
    }
    errors.into_result()?;
    // An unknown kind is a field error above, never read as some kind.
    let kind = kind.ok_or_else(|| FieldErrors::one("kind", KIND_CHOICE))?;
    Ok(Checked { name, kind, address, default_runtime })
}

/// What a kind no version knows is told.
const KIND_CHOICE: &str = "Choose sandboxd (a host running sandboxd) or daytona (Daytona's API).";

/// The default runtime a connection is saved with: a catalog alias on a sandboxd host, a snapshot
/// name on Daytona (none: the host's own default, the Daytona organization's default snapshot).
fn default_runtime(errors: &mut FieldErrors, kind: Option<ConnectionKind>, runtime: &str) -> Option<String> {
    if runtime.is_empty() {
        return None;
    }
    // Without a known kind (a field error of its own) there is nothing to check it against.
    match crate::sandbox::hosts::dispatch::connections::check_runtime(kind?, runtime) {
        Ok(()) => Some(runtime.to_string()),
        Err(message) => {
            errors.add("default_runtime", message);
            None
        }
    }
}

/// The key pasted into the dialog (or sent as `new_key`), if any.
fn pasted(input: &ConnectionInput) -> Option<&SecretString> {
    input.new_key.as_ref().filter(|k| !k.expose_secret().trim().is_empty())
}

/// The name this deployment's own token is kept under in an organization's vault.
const LOCAL_TOKEN_NAME: &str = "sandboxd token (this deployment)";

/// Resolves the credential choice inside the transaction: a new key stored now (bound to the
/// address), an existing secret of this organization (of the host's purpose and bound to this
/// address; an unbound one is bound now only for an admin or owner), or (compose addresses only)
/// this deployment's token.
async fn resolve_credential(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    checked: &Checked,
    input: &ConnectionInput,
) -> Result<Option<String>> {
    if let Some(key) = pasted(input) {
        let base = format!("{} token", checked.name);
        let bound = checked.address.as_deref();
        return Ok(Some(store_key(st, tx, caller, &base, checked.kind, key.clone(), bound).await?));
    }
    let chosen = input.credential_secret_id.trim();
    if !chosen.is_empty() {
        let secret =
            keys::claim(st, tx, caller, chosen, checked.kind, checked.address.as_deref(), Bind::Deliberately).await;
        return Ok(Some(secret.map_err(at_field)?.id));
    }
    local_credential(st, tx, caller, checked).await
}

/// This deployment's own token for a compose address, kept in the vault as one entry bound to
/// those addresses: rotated when the deployment's token changed, never copied.
async fn local_credential(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    checked: &Checked,
) -> Result<Option<String>> {
    if !checked.kind.takes_local_token() {
        return Ok(None);
    }
    let Some(token) = checked.address.as_deref().and_then(|a| keys::local_token(st, a)) else {
        return Ok(None);
    };
    if let Some(existing) = vault::named_in(tx, caller, LOCAL_TOKEN_NAME).await? {
        if existing.bound_address.as_deref() == Some(BOUND_TO_LOCAL)
            && existing.purpose == keys::purpose_for(ConnectionKind::Sandboxd)
        {
            let stored = vault::reveal(st, tx, &caller.org_id, &existing.id).await?;
            if stored.is_none_or(|s| s.expose_secret() != token.expose_secret()) {
                vault::rotate_in(st, tx, caller, &existing.id, token).await?;
            }
            return Ok(Some(existing.id));
        }
    }
    let id = store_key(st, tx, caller, LOCAL_TOKEN_NAME, ConnectionKind::Sandboxd, token, Some(BOUND_TO_LOCAL)).await?;
    Ok(Some(id))
}

/// Stores a host's key in the vault under a free name made of `base`, bound to `bound`; the
/// secret's id.
async fn store_key(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    base: &str,
    kind: ConnectionKind,
    value: SecretString,
    bound: Option<&str>,
) -> Result<String> {
    let name = vault::free_name_in(tx, caller, base).await?;
    let input = NewSecret { name, purpose: keys::purpose_for(kind).to_string(), value, address: String::new() };
    let secret = vault::create_bound_in(st, tx, caller, input, bound).await?;
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

/// A connection as a save writes it, before the commit: its id and the key it was given.
struct Written {
    id: String,
    credential: Option<String>,
    is_first: bool,
    /// The connection before an update.
    before: Option<Connection>,
}

/// Saves a new connection. The host is checked first (its key, its routes, the default runtime);
/// when the check fails nothing is saved unless `save_anyway` says so.
pub async fn create(st: &AppState, caller: &Caller, input: ConnectionInput) -> Result<Connection> {
    ensure_manage(caller)?;
    let checked = check(&input).map_err(ConnectionError::Invalid)?;
    // Everything the save writes, rolled back: every refusal of the input shows before any
    // request is sent, and the key the connection would get is read.
    let mut dry = st.db.begin().await?;
    let written = insert(st, &mut dry, caller, &checked, &input).await?;
    let key = key_then_roll_back(st, dry, caller, &written).await?;
    let (probe, same) = check_host(st, caller, &checked, &input, key, None).await?;
    let mut tx = st.db.begin().await?;
    let written = insert(st, &mut tx, caller, &checked, &input).await?;
    let detail = format!(
        "{} at {}{}; {}",
        checked.kind,
        at(checked.address.as_deref()),
        if written.is_first { ", default" } else { "" },
        checked_words(&probe, &checked, same.as_ref())
    );
    let conn = commit_audited(tx, caller, &written.id, "connection.created", &checked.name, &detail).await?;
    health::remember(st, &caller.org_id, &conn, &probe).await;
    Ok(conn)
}

async fn insert(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    checked: &Checked,
    input: &ConnectionInput,
) -> Result<Written> {
    refuse_taken_address(tx, caller, checked, None).await?;
    let credential = resolve_credential(st, tx, caller, checked, input).await?;
    let is_first = store::count(tx, &caller.org_id).await? == 0;
    let id = db::new_id();
    let values = checked.values(credential.as_deref());
    match store::insert(tx, &id, &caller.org_id, &values, is_first, db::now_ms()).await {
        // Two first connections at once: the one-default index refuses one; no name clash.
        Err(e) if matches!(&e, DbError::Conflict { constraint } if constraint.contains("one_default")) => {
            return Err(e.into())
        }
        other => other.or_name_taken(A_CONNECTION, ConnectionError::Invalid)?,
    }
    Ok(Written { id, credential, is_first, before: None })
}

/// Refuses an address another connection of the organization (not `except`) is registered at,
/// compared normalised, naming that connection: one host is one connection, so its sessions show
/// once, under the connection they belong to.
async fn refuse_taken_address(
    tx: &mut db::Conn,
    caller: &Caller,
    checked: &Checked,
    except: Option<&str>,
) -> Result<()> {
    // One Daytona API serves many Daytona organizations, each with its own key.
    let Some(wanted) = checked.address.as_deref().filter(|_| checked.kind.host_has_identity()) else {
        return Ok(());
    };
    store::lock_organization(tx, &caller.org_id).await?;
    let others = store::list(tx, &caller.org_id).await?;
    let taken = others
        .iter()
        .filter(|c| Some(c.id.as_str()) != except)
        .find(|c| c.address.as_deref().and_then(address::normalised).as_deref() == Some(wanted));
    match taken {
        Some(c) => Err(ConnectionError::Invalid(FieldErrors::one(
            "address",
            format!(
                "This address is already registered as the connection “{}”: a host is registered once. Edit that \
                 connection instead.",
                c.name
            ),
        ))),
        None => Ok(()),
    }
}

/// The key a save in `tx` gives the connection, read in `tx`; then `tx` is rolled back, so
/// nothing of the save stays.
async fn key_then_roll_back(
    st: &AppState,
    mut tx: db::Tx,
    caller: &Caller,
    written: &Written,
) -> Result<Option<ProbeKey>> {
    let key = match written.credential.as_deref() {
        Some(id) => {
            let secret = vault::for_use(&mut tx, &caller.org_id, id).await?.ok_or(ConnectionError::NoCredential)?;
            let token = keys::reveal(st, &mut tx, &caller.org_id, &secret).await?;
            Some(ProbeKey { token, named: format!("vault key “{}”", secret.name) })
        }
        None => None,
    };
    tx.rollback().await.map_err(DbError::from)?;
    Ok(key)
}

/// A save's check of the host, with the key the save gives the connection (audited like a
/// probe), and whether the address reaches the host of another connection of the organization
/// (`identity.rs`; not asked for an edit that keeps the address of `editing`). A failure refuses
/// the save, at the field it is about, unless `save_anyway`; the same host is a warning at the
/// address naming that connection, said after the host's own failure when there is one.
async fn check_host(
    st: &AppState,
    caller: &Caller,
    checked: &Checked,
    input: &ConnectionInput,
    key: Option<ProbeKey>,
    editing: Option<&Connection>,
) -> Result<(Probe, Option<SameHost>)> {
    let address = checked.address.as_deref().unwrap_or_default();
    let key_field =
        if pasted(input).is_none() && !input.credential_secret_id.trim().is_empty() { keys::FIELD } else { "new_key" };
    let asks_identity = checked.kind.host_has_identity()
        && !address.is_empty()
        && editing.is_none_or(|e| e.address.as_deref() != Some(address));
    let session_key = key.as_ref().map(|k| k.token.clone());
    let probe = match key {
        None => Probe::unanswered(
            st,
            ProbeStatus::NotAsked,
            Health::NoKey,
            "No key: the host was not asked. Pick a stored key or paste the host's token.".into(),
        ),
        Some(key) => {
            let url = address::parse(address).map_err(address::invalid_address)?;
            let runtime = checked.default_runtime.as_deref();
            let probe = crate::sandbox::hosts::dispatch::connections::probe(
                st,
                checked.kind,
                &url,
                address,
                key.token,
                runtime,
            )
            .await?;
            let outcome = if probe.status == ProbeStatus::Ok { "answered" } else { probe.health.label() };
            // A pasted key is stored only with the save: named as pasted, not by the vault name a
            // refused save never keeps.
            let named = if pasted(input).is_some() { "a pasted key" } else { key.named.as_str() };
            record_probe(st, caller, &checked.name, &format!("{address} with {named} before saving: {outcome}"))
                .await?;
            probe
        }
    };
    let same = if asks_identity {
        // The host's sessions are compared only once it accepted the key.
        let host = match session_key {
            Some(token) if probe.status == ProbeStatus::Ok => host::client(st, address, token).ok(),
            _ => None,
        };
        let others: Vec<Connection> =
            list(st, caller).await?.into_iter().filter(|c| editing.is_none_or(|e| e.id != c.id)).collect();
        identity::same_host(st, &caller.org_id, &others, address, host.as_ref()).await
    } else {
        None
    };
    let same_words = same.as_ref().map(SameHost::words);
    let failure = if probe.status != ProbeStatus::Ok {
        let message = match &same_words {
            Some(w) => format!("{} {w}", probe.message),
            None => probe.message.clone(),
        };
        Some((probe.health.field(key_field), message))
    } else if !probe.offers(checked.default_runtime.as_deref()) {
        Some(("default_runtime", health::runtime_not_offered(checked.default_runtime.as_deref())))
    } else {
        same_words.map(|w| ("address", w))
    };
    match failure {
        Some((field, message)) if !input.save_anyway => {
            Err(ConnectionError::Unhealthy(Box::new(HostCheck { field, message, probe })))
        }
        _ => Ok((probe, same)),
    }
}

/// What a save's check found, for the audit log.
fn checked_words(probe: &Probe, checked: &Checked, same: Option<&SameHost>) -> String {
    let mut words = if probe.status == ProbeStatus::Ok && probe.offers(checked.default_runtime.as_deref()) {
        "the host check passed".to_string()
    } else if probe.status == ProbeStatus::Ok {
        "saved anyway: the host does not offer its default runtime".into()
    } else {
        format!("saved anyway: {}", probe.health.label())
    };
    if let Some(s) = same {
        words.push_str(&format!("; saved anyway beside “{}”, which reaches the same host", s.connection.name));
    }
    words
}

/// Saves a connection's settings. Leaving the credential empty keeps the stored key, but only
/// while it may go to the (new) address: an address change needs the host's key again, or a key
/// saved for that address (a compose address falls back to this deployment's token). The host
/// is checked first, as for a new connection.
pub async fn update(st: &AppState, caller: &Caller, id: &str, input: ConnectionInput) -> Result<Connection> {
    change(st, caller, id, Change { settings: Some(input), ..Change::default() }).await
}

pub async fn set_enabled(st: &AppState, caller: &Caller, id: &str, enabled: bool) -> Result<Connection> {
    change(st, caller, id, Change { enabled: Some(enabled), ..Change::default() }).await
}

/// Why `id` should not become the default without asking: its health (the host asked briefly,
/// or the cached answer) when it does not answer, refuses its key or is otherwise not working;
/// `None` when it is healthy (or a kind that is not asked).
pub async fn default_warning(
    st: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<Option<(Connection, ConnectionHealth)>> {
    ensure_manage(caller)?;
    let conn = get(st, caller, id).await?;
    let h = health::of_all(st, &caller.org_id, std::slice::from_ref(&conn)).await?.remove(0);
    Ok((!matches!(h.health, Health::Healthy | Health::NotSupported)).then_some((conn, h)))
}

pub async fn make_default(st: &AppState, caller: &Caller, id: &str) -> Result<Connection> {
    change(st, caller, id, Change { make_default: true, ..Change::default() }).await
}

/// One edit of a connection: its settings, switched on or off, made the default. Whatever it
/// holds is written in one transaction, each part audited, so a failure anywhere leaves the
/// connection as it was.
#[derive(Default)]
pub struct Change {
    pub settings: Option<ConnectionInput>,
    pub enabled: Option<bool>,
    pub make_default: bool,
}

/// New settings, checked and their host asked (before the transaction that writes them).
struct Settings {
    checked: Checked,
    input: ConnectionInput,
    probe: Probe,
    /// Another connection reaching the same host, saved anyway.
    same: Option<SameHost>,
}

/// Applies `change` (see [`Change`]); the host check of new settings comes first and writes
/// nothing.
pub async fn change(st: &AppState, caller: &Caller, id: &str, change: Change) -> Result<Connection> {
    ensure_manage(caller)?;
    let settings = match change.settings {
        Some(input) => Some(checked_settings(st, caller, id, input).await?),
        None => None,
    };
    let mut tx = st.db.begin().await?;
    let mut name = existing(&mut tx, caller, id).await?.name;
    if let Some(s) = &settings {
        let written = rewrite(st, &mut tx, caller, id, &s.checked, &s.input).await?;
        let before = written.before.as_ref().map(|b| b.address.clone()).unwrap_or_default();
        let mut detail = if before != s.checked.address {
            format!("address {} → {}; ", at(before.as_deref()), at(s.checked.address.as_deref()))
        } else {
            String::new()
        };
        detail.push_str(&checked_words(&s.probe, &s.checked, s.same.as_ref()));
        name = s.checked.name.clone();
        audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.updated", &name, &detail).await?;
    }
    if let Some(enabled) = change.enabled {
        store::set_enabled(&mut tx, &caller.org_id, id, enabled, db::now_ms()).await?;
        let action = if enabled { "connection.switched_on" } else { "connection.switched_off" };
        audit::record(&mut tx, &caller.org_id, &caller.actor(), action, &name, "").await?;
    }
    if change.make_default {
        store::make_default(&mut tx, &caller.org_id, id, db::now_ms()).await?;
        audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.made_default", &name, "").await?;
    }
    let conn = existing(&mut tx, caller, id).await?;
    tx.commit().await.map_err(DbError::from)?;
    forget_cached(st, &caller.org_id, id);
    if let Some(s) = &settings {
        health::remember(st, &caller.org_id, &conn, &s.probe).await;
    }
    Ok(conn)
}

/// New settings checked, then the host asked with the key the save would give the connection
/// (found in a transaction that is rolled back).
async fn checked_settings(st: &AppState, caller: &Caller, id: &str, input: ConnectionInput) -> Result<Settings> {
    let checked = match check(&input) {
        Ok(c) => c,
        Err(errors) => {
            // Another organization's connection is a 404 before its input is judged.
            get(st, caller, id).await?;
            return Err(ConnectionError::Invalid(errors));
        }
    };
    let mut dry = st.db.begin().await?;
    let written = rewrite(st, &mut dry, caller, id, &checked, &input).await?;
    let key = key_then_roll_back(st, dry, caller, &written).await?;
    let (probe, same) = check_host(st, caller, &checked, &input, key, written.before.as_ref()).await?;
    Ok(Settings { checked, input, probe, same })
}

async fn rewrite(
    st: &AppState,
    tx: &mut db::Conn,
    caller: &Caller,
    id: &str,
    checked: &Checked,
    input: &ConnectionInput,
) -> Result<Written> {
    let existing = existing(tx, caller, id).await?;
    refuse_taken_address(tx, caller, checked, Some(id)).await?;
    // The dialog posts the stored key as its choice: at the same address that is keeping it too.
    let chosen = input.credential_secret_id.trim();
    let same_key = !chosen.is_empty() && existing.credential_secret_id.as_deref() == Some(chosen);
    let keeps = pasted(input).is_none() && (chosen.is_empty() || (same_key && existing.address == checked.address));
    let credential = match existing.credential_secret_id.as_deref() {
        Some(kept) if keeps => {
            let bind = if existing.address == checked.address { Bind::Here } else { Bind::Never };
            match keys::claim(st, tx, caller, kept, checked.kind, checked.address.as_deref(), bind).await {
                Ok(secret) => Some(secret.id),
                Err(ConnectionError::KeyRefused(_)) => match local_credential(st, tx, caller, checked).await? {
                    Some(local) => Some(local),
                    None => {
                        return Err(ConnectionError::Invalid(FieldErrors::one(
                            "new_key",
                            key_again(&existing, checked),
                        )))
                    }
                },
                Err(e) => return Err(e),
            }
        }
        _ => resolve_credential(st, tx, caller, checked, input).await?,
    };
    store::update(tx, &caller.org_id, id, &checked.values(credential.as_deref()), db::now_ms())
        .await
        .or_name_taken(A_CONNECTION, ConnectionError::Invalid)?;
    Ok(Written { id: id.to_string(), credential, is_first: false, before: Some(existing) })
}

/// Why the stored key cannot be kept, in words.
fn key_again(existing: &Connection, checked: &Checked) -> String {
    if existing.address != checked.address {
        "The address changed: paste the host's token for the new address, or pick a key saved for it. A key is sent \
         only to the address it was saved for."
            .into()
    } else {
        "The stored key may not be sent to this host (another purpose or another address): paste the host's token."
            .into()
    }
}

/// The key a probe sends, and how the audit log names it (never its value).
struct ProbeKey {
    token: SecretString,
    named: String,
}

/// Asks a host before it is saved. Never sends a request to a typed address without a key, and
/// a stored key only to the address it was saved for. Every probe is audited once
/// (`connection.probed`) with its address (and the saved connection's, when it differs): one that
/// asked the host with the key it sent (named, never its value) and the outcome, one without a key
/// as not asked, and one refused before any request (a bad or blocked address, a key that may not
/// go there) with the reason.
pub async fn probe(st: &AppState, caller: &Caller, input: ProbeInput) -> Result<Probe> {
    ensure_manage(caller)?;
    let saved = match input.connection_id.as_deref() {
        Some(id) => Some(get(st, caller, id).await?),
        None => None,
    };
    let kind = match input.kind.trim() {
        "" => ConnectionKind::offered_first(),
        k => ConnectionKind::parse(k)
            .ok_or_else(|| ConnectionError::Invalid(FieldErrors::one("kind", "Choose sandboxd or daytona.")))?,
    };
    let typed = match (kind.default_address(), input.address.trim()) {
        (Some(default), "") => default,
        (_, typed) => typed,
    };
    let parsed = address::parse(typed);
    let address = match &parsed {
        Ok(url) => address::display(url),
        Err(_) => as_typed(typed),
    };
    let target = saved.as_ref().map_or(address.clone(), |c| c.name.clone());
    let mut place = address.clone();
    if let Some(old) = saved.as_ref().and_then(|c| c.address.as_deref()).filter(|old| *old != address) {
        place = format!("{address} (saved at {old})");
    }
    let asked = match parsed {
        Ok(url) => ask_with_key(st, caller, &input, kind, saved.as_ref(), &url, &address).await,
        Err(message) => Err(address::invalid_address(message)),
    };
    let detail = match &asked {
        Ok((probe, Some(key))) => {
            let outcome = match probe.status {
                ProbeStatus::Ok => "answered",
                ProbeStatus::NotAsked => "not asked",
                ProbeStatus::Failed => "failed",
            };
            format!("{place} with {key}: {outcome}")
        }
        Ok((_, None)) => format!("{place}: not asked, no key; no request was sent"),
        Err(e) => match refusal(e) {
            Some(reason) => format!("{place}: refused before any request. {reason}"),
            None => return asked.map(|(probe, _)| probe),
        },
    };
    record_probe(st, caller, &target, &detail).await?;
    asked.map(|(probe, _)| probe)
}

/// Asks the host at `url` with the key [`probe_key`] chooses; the probe and how that key is named
/// (none: there was no key, and no request was sent).
async fn ask_with_key(
    st: &AppState,
    caller: &Caller,
    input: &ProbeInput,
    kind: ConnectionKind,
    saved: Option<&Connection>,
    url: &url::Url,
    address: &str,
) -> Result<(Probe, Option<String>)> {
    let Some(key) = probe_key(st, caller, input, kind, saved, address).await? else {
        let message =
            "Pick a vault key or paste the host's token to test this host. No request was sent to this address.";
        return Ok((Probe::unanswered(st, ProbeStatus::NotAsked, Health::NoKey, message.into()), None));
    };
    let runtime = input.default_runtime.as_deref().map(str::trim).filter(|r| !r.is_empty());
    let probe = crate::sandbox::hosts::dispatch::connections::probe(st, kind, url, address, key.token, runtime).await?;
    Ok((probe, Some(key.named)))
}

/// Why a probe was refused before any request, in the words its caller reads (they name a key,
/// never its value); none for an outcome that is no refusal (a failure of ours).
fn refusal(e: &ConnectionError) -> Option<String> {
    match e {
        ConnectionError::Invalid(fields) => {
            Some(fields.0.iter().map(|f| f.message.as_str()).collect::<Vec<_>>().join(" "))
        }
        ConnectionError::KeyRefused(m) | ConnectionError::AddressRefused(m) => Some(m.clone()),
        e @ (ConnectionError::NoCredential | ConnectionError::NoAddress) => Some(e.to_string()),
        _ => None,
    }
}

/// An address that did not parse, as the audit log shows it: trimmed, at most 200 characters,
/// control and invisible characters replaced.
fn as_typed(raw: &str) -> String {
    let shown: String = raw
        .trim()
        .chars()
        .take(200)
        .map(|c| if c.is_control() || validate::is_invisible(c) { '\u{FFFD}' } else { c })
        .collect();
    if shown.is_empty() {
        at(None).to_string()
    } else {
        shown
    }
}

async fn record_probe(st: &AppState, caller: &Caller, target: &str, detail: &str) -> Result<()> {
    let mut tx = st.db.begin().await?;
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.probed", target, detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(())
}

/// The key a probe of `address` sends: a pasted one; a chosen vault key (of purpose sandboxd,
/// bound to this address: a probe binds no key); the saved connection's key (only to the address
/// it was saved for); or this deployment's own token for its compose addresses. None: no key.
async fn probe_key(
    st: &AppState,
    caller: &Caller,
    input: &ProbeInput,
    kind: ConnectionKind,
    saved: Option<&Connection>,
    address: &str,
) -> Result<Option<ProbeKey>> {
    if let Some(k) = input.new_key.as_ref().filter(|k| !k.expose_secret().trim().is_empty()) {
        let token = SecretString::from(k.expose_secret().trim().to_string());
        return Ok(Some(ProbeKey { token, named: "a pasted key".into() }));
    }
    let chosen = input.credential_secret_id.trim();
    let (secret_id, refused): (&str, fn(ConnectionError) -> ConnectionError) = if !chosen.is_empty() {
        (chosen, at_field)
    } else if let Some(id) = saved.and_then(|c| c.credential_secret_id.as_deref()) {
        (id, std::convert::identity)
    } else if kind.takes_local_token() {
        return Ok(
            keys::local_token(st, address).map(|token| ProbeKey { token, named: "this deployment's own token".into() })
        );
    } else {
        return Ok(None);
    };
    let mut tx = st.db.begin().await?;
    // A probe never binds a key, but for the saved connection's own key at the connection's own
    // address (where it was used before binding existed): binding is a deliberate act.
    let bind = match saved {
        Some(c) if c.credential_secret_id.as_deref() == Some(secret_id) && c.address.as_deref() == Some(address) => {
            Bind::Here
        }
        _ => Bind::Never,
    };
    let secret = keys::claim(st, &mut tx, caller, secret_id, kind, Some(address), bind).await.map_err(refused)?;
    let token = keys::reveal(st, &mut tx, &caller.org_id, &secret).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(Some(ProbeKey { token, named: format!("vault key “{}”", secret.name) }))
}

/// Asks the host of a saved connection, with its stored credential (only when that key was saved
/// for the connection's address).
pub async fn probe_saved(st: &AppState, caller: &Caller, id: &str) -> Result<Probe> {
    let conn = get(st, caller, id).await?;
    let input = ProbeInput {
        kind: conn.kind.as_str().into(),
        address: conn.address.unwrap_or_default(),
        default_runtime: conn.default_runtime,
        credential_secret_id: String::new(),
        new_key: None,
        connection_id: Some(conn.id),
    };
    probe(st, caller, input).await
}

/// The live policy of a saved sandboxd connection.
pub async fn policy(st: &AppState, caller: &Caller, id: &str) -> Result<(Connection, ServicePolicy)> {
    let conn = get(st, caller, id).await?;
    if !conn.kind.has_sessions() {
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

/// Whether connection `id` of `org_id` is of a kind that creates a sandbox before a workspace row
/// has its id ([`ConnectionKind::creates_before_opened`]), read on the caller's connection (inside
/// its transaction).
pub async fn creates_before_opened_in(c: &mut db::Conn, org_id: &str, id: &str) -> Result<bool> {
    Ok(store::get(c, org_id, id).await?.is_some_and(|conn| conn.kind.creates_before_opened()))
}

/// The default connection of `org_id`, if it has one.
pub async fn default_for_org(st: &AppState, org_id: &str) -> Result<Option<Connection>> {
    let mut c = st.db.conn().await?;
    Ok(store::list(&mut c, org_id).await?.into_iter().find(|c| c.is_default))
}
