//! Deleting a connection, and with it (when asked) its key: never a key another connection
//! uses, and never a connection agents are pinned to (they keep their pin; the refusal names them).

use super::common::{at, ensure_manage, existing, forget_cached};
use super::error::ConnectionError;
use super::model::Connection;
use super::store;
use crate::access::Caller;
use crate::agents::pins;
use crate::audit::service as audit;
use crate::db::{self, DbError};
use crate::sandbox::tombstones::service as tombstones;
use crate::sandbox::workspaces::live;
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
    /// Sandboxes that may still run at the host: tombstones waiting for their destroy, and
    /// workspaces that hold a session there. Deleting needs a confirmation repeating this count.
    pub sandboxes: Sandboxes,
}

/// What may still run at a connection's host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sandboxes {
    /// Removed sandboxes whose destroy has not succeeded yet (tombstones).
    pub pending_removal: i64,
    /// Workspaces that hold a session there.
    pub live: i64,
}

impl Sandboxes {
    pub fn total(&self) -> i64 {
        self.pending_removal + self.live
    }

    async fn of(c: &mut db::Conn, org_id: &str, id: &str) -> Result<Sandboxes> {
        let pending_removal =
            tombstones::count_in(&mut *c, org_id, id).await.map_err(|e| ConnectionError::Internal(e.into()))?;
        let live = live::count_on(c, org_id, id).await?;
        Ok(Sandboxes { pending_removal, live })
    }

    /// Why a delete without the confirmation is refused: how many, and what to do.
    pub fn refusal(&self) -> String {
        let n = self.total();
        let (count, run) = if n == 1 { ("1 sandbox".to_string(), "runs") } else { (format!("{n} sandboxes"), "run") };
        format!(
            "{count} may still {run} at this host ({} pending removal, {} held by workspaces), and still cost money there. \
             Wait for the removal to succeed (see the connection's row), or delete {} at the host yourself and then \
             delete the connection confirming the count of {n}: this platform then forgets {}.",
            self.pending_removal,
            self.live,
            if n == 1 { "it" } else { "them" },
            if n == 1 { "it" } else { "them" },
        )
    }
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
    let sandboxes = Sandboxes::of(&mut c, &caller.org_id, id).await?;
    Ok(DeletePreview {
        key_name: connection.credential_name.clone(),
        connection,
        key_shared_with,
        pinned_agents,
        sandboxes,
    })
}

/// Deletes a connection no agent is pinned to (agents keep their pin: deleting is refused,
/// naming them); when it was the default, the oldest remaining one inherits that role. With
/// `with_key`, its key goes too, unless another connection uses it. One transaction, audited.
/// Sandboxes that may still run at its host (tombstones, workspaces holding a session) refuse the
/// delete, naming their count, unless `forget_sandboxes` repeats that exact count: then the
/// tombstones are forgotten and the audit event carries the count.
pub async fn delete(
    st: &AppState,
    caller: &Caller,
    id: &str,
    with_key: bool,
    forget_sandboxes: Option<i64>,
) -> Result<Deleted> {
    ensure_manage(caller)?;
    let mut tx = st.db.begin().await?;
    let connection = existing(&mut tx, caller, id).await?;
    let pinned = pins::names_pinned_to(&mut tx, &caller.org_id, id).await?;
    if !pinned.is_empty() {
        return Err(ConnectionError::InUse(pinned_message(&pinned)));
    }
    let sandboxes = Sandboxes::of(&mut tx, &caller.org_id, id).await?;
    if sandboxes.total() > 0 && forget_sandboxes != Some(sandboxes.total()) {
        return Err(ConnectionError::SandboxesLeft { count: sandboxes.total(), message: sandboxes.refusal() });
    }
    let forgotten =
        tombstones::forget_in(&mut tx, &caller.org_id, id).await.map_err(|e| ConnectionError::Internal(e.into()))?;
    store::delete(&mut tx, &caller.org_id, id).await?;
    let mut detail = format!("at {}", at(connection.address.as_deref()));
    if sandboxes.total() > 0 {
        detail.push_str(&format!(
            "; confirmed with {} sandboxes that may still run there: {forgotten} pending removal forgotten, {} held by workspaces",
            sandboxes.total(),
            sandboxes.live
        ));
    }
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
    forget_cached(st, &caller.org_id, id);
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
