//! Orphans: sessions a host holds for an organization that nothing in our database knows any
//! more (a crash between open and the row's commit, a restored backup, a test run). A session is
//! an orphan only when its sandboxd `tenant` is the organization's id **and** its name is a key
//! this platform builds for that organization and connection; a workspace row naming it, or a
//! tombstone (pending removal), makes it not an orphan. Never another tenant's session.

use serde::Serialize;

use crate::audit::service as audit;
use crate::db::DbError;
use crate::orgs::service as orgs;
use crate::sandbox::client::SandboxdError;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::sandbox::tombstones::service as tombstones;
use crate::sandbox::workspaces::key;
use crate::sandbox::workspaces::live;
use crate::state::AppState;

/// One orphaned session.
#[derive(Debug, Clone, Serialize)]
pub struct Orphan {
    pub organization_id: String,
    pub organization: String,
    pub connection_id: String,
    pub connection_name: String,
    pub session_id: String,
}

/// What looking for orphans found: the orphans, and each host that could not be read.
#[derive(Debug, Default)]
pub struct Found {
    pub orphans: Vec<Orphan>,
    pub problems: Vec<String>,
}

/// Whether `session_id` (whose tenant is `org_id`) on `conn` is an orphan of `org_id`.
pub async fn is_orphan(st: &AppState, org_id: &str, conn: &Connection, session_id: &str) -> anyhow::Result<bool> {
    if !key::is_key_of(session_id, org_id, &conn.id) {
        return Ok(false);
    }
    let mut c = st.db.conn().await?;
    if live::names_session(&mut c, org_id, &conn.id, session_id).await? {
        return Ok(false);
    }
    Ok(!tombstones::is_pending(&mut c, org_id, &conn.id, session_id).await?)
}

/// Every organization's orphans on each of its sandboxd connections (switched off ones too).
pub async fn everywhere(st: &AppState) -> anyhow::Result<Found> {
    let mut found = Found::default();
    for (org_id, organization, conn) in connections::everywhere(st).await? {
        if conn.kind != ConnectionKind::Sandboxd {
            continue;
        }
        let list = match connections::client_for(st, &org_id, &conn).await {
            Ok(client) => client.sessions(false).await.map_err(|e| e.in_words()),
            Err(e) => Err(e.to_string()),
        };
        let list = match list {
            Ok(list) => list,
            Err(problem) => {
                found.problems.push(format!("{organization} / {}: {problem}", conn.name));
                continue;
            }
        };
        for s in list.sessions.iter().filter(|s| s.tenant.as_deref() == Some(org_id.as_str())) {
            if is_orphan(st, &org_id, &conn, &s.session_id).await? {
                found.orphans.push(Orphan {
                    organization_id: org_id.clone(),
                    organization: organization.clone(),
                    connection_id: conn.id.clone(),
                    connection_name: conn.name.clone(),
                    session_id: s.session_id.clone(),
                });
            }
        }
    }
    Ok(found)
}

/// Purges each orphan at its host (files too), audited in its organization as
/// `sandbox.orphans_purged` (by the command line); returns how many were purged and the problems.
pub async fn purge(st: &AppState, orphans: &[Orphan]) -> anyhow::Result<(usize, Vec<String>)> {
    let mut purged = 0;
    let mut problems = Vec::new();
    for o in orphans {
        let Some(conn) = connections::for_org(st, &o.organization_id, &o.connection_id).await? else { continue };
        let outcome = match connections::client_for(st, &o.organization_id, &conn).await {
            Ok(client) => match client.delete_session(&o.session_id, true).await {
                Ok(()) | Err(SandboxdError::NotFound { .. }) => Ok(()),
                Err(e) => Err(e.in_words()),
            },
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok(()) => {
                purged += 1;
                let caller = orgs::command_line_caller(&st.db, &o.organization_id, None).await?;
                let mut tx = st.db.begin().await?;
                let detail = format!(
                    "on {}; no workspace of this organization named it; its files were deleted",
                    o.connection_name
                );
                audit::record(
                    &mut tx,
                    &o.organization_id,
                    &caller.actor(),
                    "sandbox.orphans_purged",
                    &o.session_id,
                    &detail,
                )
                .await?;
                tx.commit().await.map_err(DbError::from)?;
            }
            Err(problem) => {
                problems.push(format!("{} / {} / {}: {problem}", o.organization, o.connection_name, o.session_id))
            }
        }
    }
    Ok((purged, problems))
}
