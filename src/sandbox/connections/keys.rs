//! A stored key is sent only to the address it was saved for (docs/workspaces.md, "Sandbox hosts").
//!
//! A vault secret carries a `bound_address`: the only address it is sent to (`local` for this
//! deployment's own token, good for any of `SANDBOXD_LOCAL_ADDRESSES`). An unbound key is sent
//! nowhere: binding it is a deliberate act of someone who may bind vault keys (an admin or owner:
//! on the Vault page, or by saving a connection with it), audited. A probe never binds (except a
//! connection's own key at the connection's own address, where it was already used), and a
//! builder's save never binds: a builder cannot make a key someone else stored travel to an
//! address of their choosing. A saved connection's calls never bind, they only check. Only a key
//! of the host's purpose is sent: `sandboxd` to a sandboxd host, `daytona` to Daytona.

use secrecy::SecretString;

use super::error::ConnectionError;
use super::model::{Connection, ConnectionKind};
use super::usage;
use crate::access::Caller;
use crate::db;
use crate::state::AppState;
use crate::validate::FieldErrors;
use crate::vault::model::{Secret, BOUND_TO_LOCAL};
use crate::vault::service as vault;

type Result<T> = std::result::Result<T, ConnectionError>;

/// The field a stored key is chosen with, in the dialog and the API.
pub const FIELD: &str = "credential_secret_id";

/// Whether `address` is one of this deployment's own compose addresses (where `SANDBOXD_TOKEN`
/// may be used and `/healthz` may be asked unprompted).
pub fn is_local_address(st: &AppState, address: &str) -> bool {
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

/// The purpose of the keys a host of `kind` is sent.
pub fn purpose_for(kind: ConnectionKind) -> &'static str {
    kind.as_str()
}

/// Whether a key bound to `bound` may be sent to `address`.
fn binding_allows(st: &AppState, bound: &str, address: &str) -> bool {
    bound == address || (bound == BOUND_TO_LOCAL && is_local_address(st, address))
}

/// A refused key at the credential field (the dialog, a probe, the API's body).
pub fn at_field(e: ConnectionError) -> ConnectionError {
    match e {
        ConnectionError::KeyRefused(message) => ConnectionError::Invalid(FieldErrors::one(FIELD, message)),
        other => other,
    }
}

fn wrong_purpose(secret: &Secret, kind: ConnectionKind) -> ConnectionError {
    ConnectionError::KeyRefused(format!(
        "“{}” is a key of purpose {}: a {} host is sent only a key of purpose {}; no request was sent.",
        secret.name,
        secret.purpose,
        kind.label(),
        purpose_for(kind)
    ))
}

/// Whether [`claim`] may bind an unbound key to the address it is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bind {
    /// A key chosen by a person saving a connection: bound to its address when that person may
    /// bind vault keys (an admin or owner) and no connection uses it yet (a key from before binding
    /// existed, whose address only that connection may give it). A builder is refused.
    Deliberately,
    /// A connection saved again at its own address keeps its key and binds it there.
    Here,
    /// A connection whose address changed keeps its key only when it is bound to the new one.
    Never,
}

/// Checks a stored key a person saves with, or sends to, `address` (none for a Daytona
/// connection): it is in the vault, of the host's purpose, and bound to `address`. An unbound key
/// is bound to `address` now as `bind` allows, in `c`'s transaction (its first use, audited). A
/// refusal is [`ConnectionError::KeyRefused`]; [`at_field`] puts it at the credential field.
pub async fn claim(
    st: &AppState,
    c: &mut db::Conn,
    caller: &Caller,
    secret_id: &str,
    kind: ConnectionKind,
    address: Option<&str>,
    bind: Bind,
) -> Result<Secret> {
    let Some(mut secret) = vault::for_use(c, &caller.org_id, secret_id).await? else {
        return Err(ConnectionError::KeyRefused("This key is not in this organization's vault.".into()));
    };
    if secret.purpose != purpose_for(kind) {
        return Err(wrong_purpose(&secret, kind));
    }
    let Some(address) = address else {
        return Ok(secret);
    };
    let may_bind = match bind {
        Bind::Here => true,
        Bind::Never => false,
        Bind::Deliberately => {
            vault::may_bind(caller) && usage::connections_using_secret(c, &caller.org_id, &secret.id).await?.is_empty()
        }
    };
    if secret.bound_address.is_none() && may_bind {
        let how = match bind {
            Bind::Here => "the key of the connection at this address",
            _ => "saved with a connection at this address",
        };
        if !vault::bind_in(c, caller, &secret.id, address, how).await? {
            // Bound by another request in between: read what it was bound to.
            secret = vault::for_use(c, &caller.org_id, secret_id).await?.ok_or(ConnectionError::NotFound)?;
        } else {
            secret.bound_address = Some(address.to_string());
        }
    }
    match secret.bound_address.as_deref() {
        Some(bound) if binding_allows(st, bound, address) => Ok(secret),
        None => Err(ConnectionError::KeyRefused(format!(
            "“{}” is not bound to an address yet, and a stored key is sent only to the address it is bound to: \
             no request was sent. An admin or owner binds it on the Vault page (or by saving a connection with it); \
             or paste the host's token.",
            secret.name
        ))),
        _ => Err(ConnectionError::KeyRefused(format!(
            "“{}” was saved for another address and is sent only there: no request was sent. Paste the host's \
             token for this address, or pick a key saved for it.",
            secret.name
        ))),
    }
}

/// The key of a saved connection, for its calls: present, of the host's purpose, and bound to
/// the connection's address. Never binds; a refusal says no request was sent.
pub async fn for_connection(st: &AppState, org_id: &str, conn: &Connection) -> Result<SecretString> {
    let Some(secret_id) = conn.credential_secret_id.as_deref() else {
        return Err(ConnectionError::NoCredential);
    };
    let mut c = st.db.conn().await?;
    let Some(secret) = vault::for_use(&mut c, org_id, secret_id).await? else {
        return Err(ConnectionError::NoCredential);
    };
    if secret.purpose != purpose_for(conn.kind) {
        return Err(wrong_purpose(&secret, conn.kind));
    }
    let bound_here = match (secret.bound_address.as_deref(), conn.address.as_deref()) {
        (Some(bound), Some(address)) => binding_allows(st, bound, address),
        (_, None) => true,
        (None, Some(_)) => false,
    };
    if !bound_here {
        return Err(ConnectionError::KeyRefused(
            "This connection's key was not saved for its address: no request was sent. Edit the connection and \
             paste the host's token again."
                .into(),
        ));
    }
    vault::reveal(st, &mut c, org_id, secret_id).await?.ok_or(ConnectionError::NoCredential)
}

/// The value of a key [`claim`] accepted (read in `c`, so an uncommitted new key is seen too).
pub async fn reveal(st: &AppState, c: &mut db::Conn, org_id: &str, secret: &Secret) -> Result<SecretString> {
    vault::reveal(st, c, org_id, &secret.id).await?.ok_or(ConnectionError::NotFound)
}
