//! Per-organization secrets: create, rotate, delete, list. No route ever returns a value; only
//! the product's own code reads one, through [`reveal`].

use secrecy::{ExposeSecret, SecretString};

use super::crypto;
use super::error::VaultError;
use super::model::{Secret, PURPOSES};
use super::store::{self, NewRow, Sealed};
use crate::access::{Caller, Role};
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::sandbox::connections::{address, usage};
use crate::state::AppState;
use crate::validate::{self, FieldErrors, NameTaken as _};

pub const VALUE_MAX: usize = 16 * 1024;

type Result<T> = std::result::Result<T, VaultError>;

pub struct NewSecret {
    pub name: String,
    pub purpose: String,
    pub value: SecretString,
    /// The only address the key is for, as typed; empty binds it on first use.
    pub address: String,
}

/// Why a host's key is refused when it holds a line break: it is sent as one header line.
pub const KEY_LINE_BREAK: &str =
    "A host's key is one line: this one contains a line break (CR or LF). Paste it without line breaks.";

/// Whether a secret of `purpose` is a host's key, sent as a header (one line, never a CR or LF).
fn is_host_key(purpose: &str) -> bool {
    matches!(purpose, "sandboxd" | "daytona")
}

/// Whether `value` holds a line break (CR or LF): refused for a host's key, which a header carries.
pub fn has_line_break(value: &str) -> bool {
    value.contains(['\r', '\n'])
}

fn check_value(errors: &mut FieldErrors, value: &SecretString, purpose: &str) {
    let v = value.expose_secret();
    if v.trim().is_empty() {
        errors.add("value", "Enter the secret value.");
    } else if v.len() > VALUE_MAX {
        errors.add("value", format!("A secret has at most {} KiB.", VALUE_MAX / 1024));
    } else if is_host_key(purpose) && has_line_break(v) {
        errors.add("value", KEY_LINE_BREAK);
    }
}

/// The last 4 characters, only for values long enough that this gives little away.
fn hint(value: &str) -> String {
    let chars: Vec<char> = value.trim().chars().collect();
    if chars.len() >= 12 {
        format!("…{}", chars[chars.len() - 4..].iter().collect::<String>())
    } else {
        "••••".to_string()
    }
}

/// A value encrypted for secret `id` of `org_id`, with its hint.
fn seal(st: &AppState, org_id: &str, id: &str, value: &SecretString) -> Result<Sealed> {
    let (nonce, ciphertext) = crypto::encrypt(&st.vault_key, org_id, id, value.expose_secret().as_bytes())?;
    Ok(Sealed { hint: hint(value.expose_secret()), nonce, ciphertext })
}

fn ensure_can_manage(caller: &Caller) -> Result<()> {
    if caller.role.can_manage_vault() {
        Ok(())
    } else {
        Err(VaultError::Forbidden)
    }
}

pub async fn list(st: &AppState, caller: &Caller) -> Result<Vec<Secret>> {
    ensure_can_manage(caller)?;
    let mut c = st.db.conn().await?;
    Ok(store::list(&mut c, &caller.org_id).await?)
}

pub async fn get(st: &AppState, caller: &Caller, id: &str) -> Result<Secret> {
    let mut c = st.db.conn().await?;
    get_in(&mut c, caller, id).await
}

/// A secret of the caller's organization, inside the caller's transaction (a connection naming
/// its credential checks it is there).
pub async fn get_in(c: &mut db::Conn, caller: &Caller, id: &str) -> Result<Secret> {
    ensure_can_manage(caller)?;
    store::get(c, &caller.org_id, id).await?.ok_or(VaultError::NotFound)
}

/// `base` (cut to 90 characters), or `base (2)`, `base (3)` … : a name no secret of the caller's
/// organization has yet, inside the caller's transaction.
pub async fn free_name_in(c: &mut db::Conn, caller: &Caller, base: &str) -> Result<String> {
    ensure_can_manage(caller)?;
    let taken: Vec<String> = store::list(c, &caller.org_id).await?.into_iter().map(|s| s.name).collect();
    let base: String = base.chars().take(90).collect();
    if !taken.contains(&base) {
        return Ok(base);
    }
    Ok((2..).map(|n| format!("{base} ({n})")).find(|n| !taken.contains(n)).unwrap_or(base))
}

/// Creates a secret inside the caller's transaction (a connection's inline "new key" commits
/// with the connection), bound to the address typed with it, if any.
pub async fn create_in(st: &AppState, c: &mut db::Conn, caller: &Caller, input: NewSecret) -> Result<Secret> {
    ensure_can_manage(caller)?;
    let typed = input.address.trim();
    let bound = if typed.is_empty() {
        None
    } else {
        match address::parse(typed) {
            Ok(url) => Some(address::display(&url)),
            // Every refusal at once: the other fields' too.
            Err(m) => {
                let mut errors = FieldErrors::new();
                check_fields(&mut errors, &input);
                errors.add("address", m);
                return Err(VaultError::Invalid(errors));
            }
        }
    };
    create_bound_in(st, c, caller, input, bound.as_deref()).await
}

/// The name, purpose and value of a new secret: (name, purpose) as stored, messages in `errors`.
fn check_fields(errors: &mut FieldErrors, input: &NewSecret) -> (String, String) {
    let name = validate::name(errors, "name", &input.name, "secret name");
    let purpose = input.purpose.trim().to_ascii_lowercase();
    if !PURPOSES.contains(&purpose.as_str()) {
        errors.add("purpose", format!("Choose one of: {}.", PURPOSES.join(", ")));
    }
    check_value(errors, &input.value, &purpose);
    (name, purpose)
}

/// Creates a secret bound to `bound_address` (an address the caller checked, or
/// [`BOUND_TO_LOCAL`](super::model::BOUND_TO_LOCAL)); `input.address` is not read.
pub async fn create_bound_in(
    st: &AppState,
    c: &mut db::Conn,
    caller: &Caller,
    input: NewSecret,
    bound_address: Option<&str>,
) -> Result<Secret> {
    ensure_can_manage(caller)?;
    let mut errors = FieldErrors::new();
    let (name, purpose) = check_fields(&mut errors, &input);
    errors.into_result().map_err(VaultError::Invalid)?;
    let id = db::new_id();
    let sealed = seal(st, &caller.org_id, &id, &input.value)?;
    let row = NewRow { name: &name, purpose: &purpose, bound_address };
    store::insert(c, &id, &caller.org_id, &row, &sealed, db::now_ms())
        .await
        .or_name_taken("A secret", VaultError::Invalid)?;
    let detail = match bound_address {
        Some(a) => format!("purpose {purpose}, for {a}"),
        None => format!("purpose {purpose}"),
    };
    audit::record(c, &caller.org_id, &caller.actor(), "vault.secret_created", &name, &detail).await?;
    store::get(c, &caller.org_id, &id).await?.ok_or(VaultError::NotFound)
}

pub async fn create(st: &AppState, caller: &Caller, input: NewSecret) -> Result<Secret> {
    let mut tx = st.db.begin().await?;
    let secret = create_in(st, &mut tx, caller, input).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(secret)
}

/// Replaces a secret's value.
pub async fn rotate(st: &AppState, caller: &Caller, id: &str, value: SecretString) -> Result<Secret> {
    let mut tx = st.db.begin().await?;
    let secret = rotate_in(st, &mut tx, caller, id, value).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(secret)
}

/// Replaces a secret's value inside the caller's transaction; its binding stays.
pub async fn rotate_in(
    st: &AppState,
    c: &mut db::Conn,
    caller: &Caller,
    id: &str,
    value: SecretString,
) -> Result<Secret> {
    let existing = get_in(c, caller, id).await?;
    let mut errors = FieldErrors::new();
    check_value(&mut errors, &value, &existing.purpose);
    errors.into_result().map_err(VaultError::Invalid)?;
    store::replace_value(c, &caller.org_id, id, &seal(st, &caller.org_id, id, &value)?, db::now_ms()).await?;
    audit::record(c, &caller.org_id, &caller.actor(), "vault.secret_rotated", &existing.name, "").await?;
    get_in(c, caller, id).await
}

/// Deletes a secret no connection uses; one in use is refused, naming the connections.
pub async fn delete(st: &AppState, caller: &Caller, id: &str) -> Result<Secret> {
    let mut tx = st.db.begin().await?;
    let existing = delete_in(&mut tx, caller, id, "").await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(existing)
}

/// Deletes a secret no connection uses inside the caller's transaction (a connection deleted
/// with its key), audited with `why`; one in use is refused, naming the connections, and so is
/// one an agent's manifest gives its commands (an `env` entry), naming the agents.
pub async fn delete_in(c: &mut db::Conn, caller: &Caller, id: &str, why: &str) -> Result<Secret> {
    let existing = get_in(c, caller, id).await?;
    let users = usage::connections_using_secret(c, &caller.org_id, id).await?;
    if !users.is_empty() {
        return Err(VaultError::InUse(in_use_message(&users)));
    }
    let agents = agents_using(c, &caller.org_id, id).await?;
    if !agents.is_empty() {
        return Err(VaultError::InUse(in_manifests_message(&agents)));
    }
    store::delete(c, &caller.org_id, id).await?;
    audit::record(c, &caller.org_id, &caller.actor(), "vault.secret_deleted", &existing.name, why).await?;
    Ok(existing)
}

/// The names of the agents of `org_id` whose manifest gives secret `id` to its commands (an `env`
/// entry naming it), by name.
async fn agents_using(c: &mut db::Conn, org_id: &str, id: &str) -> Result<Vec<String>> {
    let candidates = store::manifests_mentioning(c, org_id, id).await?;
    Ok(candidates
        .into_iter()
        .filter(|(_, manifest)| manifest_names_secret(manifest, id))
        .map(|(name, _)| name)
        .collect())
}

/// Whether a stored manifest (JSON) has an `env` entry whose `secret_id` is `id`. A manifest that
/// does not parse is read as naming it when its text holds the id: a delete is refused rather
/// than leave an agent whose commands fail.
fn manifest_names_secret(manifest: &str, id: &str) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(manifest) else {
        return manifest.contains(id);
    };
    value["entries"].as_array().is_some_and(|entries| {
        entries.iter().any(|e| e["kind"] == "env" && e["secret_id"].as_str().map(str::trim) == Some(id))
    })
}

fn in_manifests_message(agents: &[String]) -> String {
    let names = agents.iter().map(|n| format!("“{n}”")).collect::<Vec<_>>().join(", ");
    let (noun, pronoun) = if agents.len() == 1 { ("agent", "its") } else { ("agents", "their") };
    format!(
        "This secret is given to the commands of the {noun} {names} (an environment entry of {pronoun} manifest): \
         remove it from {pronoun} manifest first, or their commands would fail."
    )
}

/// Which connections use each secret of the caller's organization: (secret id, connection id,
/// connection name), by secret then name.
pub async fn usage(st: &AppState, caller: &Caller) -> Result<Vec<usage::SecretUse>> {
    ensure_can_manage(caller)?;
    let mut c = st.db.conn().await?;
    Ok(usage::secret_uses(&mut c, &caller.org_id).await?)
}

fn in_use_message(connections: &[String]) -> String {
    let names = connections.iter().map(|n| format!("“{n}”")).collect::<Vec<_>>().join(", ");
    let (noun, pronoun) = if connections.len() == 1 { ("connection", "it") } else { ("connections", "them") };
    format!("This secret is the key of the {noun} {names}: give {pronoun} another key or delete {pronoun} first.")
}

/// The secret of the caller's organization called `name`, inside the caller's transaction.
pub async fn named_in(c: &mut db::Conn, caller: &Caller, name: &str) -> Result<Option<Secret>> {
    ensure_can_manage(caller)?;
    Ok(store::named(c, &caller.org_id, name).await?)
}

/// A secret of `org_id` as the product's own code reads it before a call (no role: the caller
/// decided access), never its value.
pub async fn for_use(c: &mut db::Conn, org_id: &str, id: &str) -> Result<Option<Secret>> {
    Ok(store::get(c, org_id, id).await?)
}

/// Whether the caller may bind a stored key to an address: an admin or owner. A builder manages
/// keys they paste (bound to the address they are pasted for) but never makes a key someone else
/// stored travel to an address of their choosing.
pub fn may_bind(caller: &Caller) -> bool {
    caller.role.at_least(Role::Admin)
}

/// Binds an unbound secret to `address`, audited with `how`; false when it was bound already (by
/// another request in between: the caller reads it again). The caller decided it may: an admin or
/// owner ([`may_bind`]), or a connection's own key at the connection's own address.
pub async fn bind_in(c: &mut db::Conn, caller: &Caller, id: &str, address: &str, how: &str) -> Result<bool> {
    let secret = get_in(c, caller, id).await?;
    if store::bind(c, &caller.org_id, id, address).await? == 0 {
        return Ok(false);
    }
    let detail = format!("bound to {address} ({how})");
    audit::record(c, &caller.org_id, &caller.actor(), "vault.secret_bound", &secret.name, &detail).await?;
    Ok(true)
}

/// Binds an unbound secret to the address typed (admins and owners; audited): from now on it is
/// sent there and nowhere else. A bound secret is never moved (422 at `address`).
pub async fn bind(st: &AppState, caller: &Caller, id: &str, typed: &str) -> Result<Secret> {
    let mut tx = st.db.begin().await?;
    let existing = get_in(&mut tx, caller, id).await?;
    if !may_bind(caller) {
        return Err(VaultError::Forbidden);
    }
    let address = match address::parse(typed.trim()) {
        Ok(url) => address::display(&url),
        Err(m) => return Err(VaultError::Invalid(FieldErrors::one("address", m))),
    };
    let refused = |bound: &str| {
        VaultError::Invalid(FieldErrors::one(
            "address",
            format!(
                "“{}” is bound to {bound} already: a bound key is never moved. Store a new key for this address.",
                existing.name
            ),
        ))
    };
    if let Some(bound) = existing.bound_address.as_deref() {
        return Err(refused(bound));
    }
    if !bind_in(&mut tx, caller, id, &address, "bound on the Vault page").await? {
        let now = get_in(&mut tx, caller, id).await?;
        return Err(refused(now.bound_address.as_deref().unwrap_or_default()));
    }
    let secret = get_in(&mut tx, caller, id).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(secret)
}

/// The plaintext of a secret, for the product's own outbound calls only. Never render or log it.
pub async fn reveal(st: &AppState, c: &mut db::Conn, org_id: &str, id: &str) -> Result<Option<SecretString>> {
    let Some(row) = store::sealed(c, org_id, id).await? else {
        return Ok(None);
    };
    let bytes = crypto::decrypt(&st.vault_key, org_id, id, &row.nonce, &row.ciphertext)?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("vault secret {id} is not UTF-8"))?;
    Ok(Some(SecretString::from(text)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hints_never_give_away_short_values() {
        assert_eq!(super::hint("abcdefghijkl"), "…ijkl");
        assert_eq!(super::hint("short"), "••••");
    }
}
