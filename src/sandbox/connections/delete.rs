//! Deleting a connection, and with it (when asked) its key: never a key another connection
//! uses, and never a connection agents are pinned to (they keep their pin; the refusal names them).

use super::error::ConnectionError;
use super::model::Connection;
use super::service::{at, ensure_manage, existing};
use super::store;
use crate::access::Caller;
use crate::agents::pins;
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::state::AppState;
use crate::vault::service as vault;

type Result<T> = std::result::Result<T, ConnectionError>;

/// What the confirmation asks about: the connection, its key, and who else needs either.
#[derive(Debug, Clone)]
pub struct DeletePreview {
    pub connection: Connection,
    /// The key's name, when the connection has one.
    pub key_name: Option<String>,
    /// The other connections using the same key (it is kept then).
    pub key_shared_with: Vec<String>,
    /// The agents pinned to the connection (deleting is refused then).
    pub pinned_agents: Vec<String>,
}

impl DeletePreview {
    /// Whether the confirmation may offer to delete the key too.
    pub fn may_delete_key(&self) -> bool {
        self.key_name.is_some() && self.key_shared_with.is_empty()
    }
}

/// What became of the deleted connection's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyOutcome {
    /// Not asked to delete it, or there was none.
    Kept,
    /// Deleted with the connection: its name.
    Deleted(String),
    /// Asked to, but other connections use it: its name and theirs.
    StillUsed(String, Vec<String>),
}

#[derive(Debug, Clone)]
pub struct Deleted {
    pub connection: Connection,
    pub key: KeyOutcome,
}

pub async fn delete_preview(st: &AppState, caller: &Caller, id: &str) -> Result<DeletePreview> {
    ensure_manage(caller)?;
    let mut c = st.db.conn().await?;
    let connection = existing(&mut c, caller, id).await?;
    let pinned_agents = pins::names_pinned_to(&mut c, &caller.org_id, id).await?;
    let mut key_shared_with = Vec::new();
    if let Some(secret) = connection.credential_secret_id.as_deref() {
        key_shared_with = store::names_using_secret(&mut c, &caller.org_id, secret).await?;
        key_shared_with.retain(|n| *n != connection.name);
    }
    Ok(DeletePreview { key_name: connection.credential_name.clone(), connection, key_shared_with, pinned_agents })
}

/// Deletes a connection no agent is pinned to (agents keep their pin: deleting is refused,
/// naming them); when it was the default, the oldest remaining one inherits that role. With
/// `with_key`, its key goes too, unless another connection uses it. One transaction, audited.
pub async fn delete(st: &AppState, caller: &Caller, id: &str, with_key: bool) -> Result<Deleted> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let connection = existing(&mut tx, caller, id).await?;
    let pinned = pins::names_pinned_to(&mut tx, &caller.org_id, id).await?;
    if !pinned.is_empty() {
        return Err(ConnectionError::InUse(pinned_message(&pinned)));
    }
    store::delete(&mut tx, &caller.org_id, id).await?;
    let mut detail = format!("at {}", at(connection.address.as_deref()));
    if connection.is_default {
        if let Some(next) = store::oldest(&mut tx, &caller.org_id).await? {
            store::make_default(&mut tx, &caller.org_id, &next, db::now_ms()).await?;
            detail.push_str("; the oldest remaining connection is the default now");
        }
    }
    let key = match connection.credential_secret_id.as_deref() {
        Some(secret_id) if with_key => {
            let users = store::names_using_secret(&mut tx, &caller.org_id, secret_id).await?;
            let name = connection.credential_name.clone().unwrap_or_default();
            if users.is_empty() {
                let why = format!("with the connection “{}”", connection.name);
                let secret = vault::delete_in(&mut tx, caller, secret_id, &why).await?;
                detail.push_str(&format!("; its key “{}” deleted too", secret.name));
                KeyOutcome::Deleted(secret.name)
            } else {
                detail.push_str(&format!("; its key “{name}” kept: {} uses it", names(&users)));
                KeyOutcome::StillUsed(name, users)
            }
        }
        _ => KeyOutcome::Kept,
    };
    audit::record(&mut tx, &caller.org_id, &caller.actor(), "connection.deleted", &connection.name, &detail).await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(Deleted { connection, key })
}

/// “a”, “b”
pub fn names(names: &[String]) -> String {
    names.iter().map(|n| format!("“{n}”")).collect::<Vec<_>>().join(", ")
}

fn pinned_message(agents: &[String]) -> String {
    let (who, them) = if agents.len() == 1 { ("the agent", "it") } else { ("the agents", "them") };
    format!("This connection is used by {who} {}: pin {them} to another connection first.", names(agents))
}
