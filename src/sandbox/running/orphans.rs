//! Orphans: sessions a host holds for an organization that nothing in our database knows any
//! more (a crash between open and the row's commit, a restored backup, a test run). A session is
//! an orphan only when its sandboxd `tenant` is the organization's id **and** its name is a key
//! this platform builds for that organization and connection; a workspace row naming it, or a
//! tombstone (pending removal), makes it not an orphan. Never another tenant's session. On
//! Daytona, a sandbox is an orphan only when its labels name this deployment, the organization
//! and the connection, and it is older than 10 minutes.

use serde::Serialize;

use crate::audit::service as audit;
use crate::db::DbError;
use crate::orgs::service as orgs;
use crate::sandbox::client::SandboxdError;
use crate::sandbox::connections::daytona;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::sandbox::tombstones::daytona::destroy as destroy_daytona;
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

/// How long a Daytona sandbox must have existed before it may count as an orphan: Daytona's list
/// is eventually consistent, and a sandbox being opened has no row yet.
pub const DAYTONA_MIN_AGE_MS: i64 = 10 * 60 * 1000;

/// Every organization's orphans on each of its connections (switched off ones too).
pub async fn everywhere(st: &AppState) -> anyhow::Result<Found> {
    everywhere_at(st, crate::db::now_ms()).await
}

/// [`everywhere`] with the clock `now` (epoch milliseconds) that Daytona sandboxes' age is
/// measured against.
pub async fn everywhere_at(st: &AppState, now: i64) -> anyhow::Result<Found> {
    let mut found = Found::default();
    for (org_id, organization, conn) in connections::everywhere(st).await? {
        if conn.kind == ConnectionKind::Daytona {
            match daytona_orphans(st, &org_id, &conn, now).await? {
                Ok(ids) => found.orphans.extend(ids.into_iter().map(|session_id| Orphan {
                    organization_id: org_id.clone(),
                    organization: organization.clone(),
                    connection_id: conn.id.clone(),
                    connection_name: conn.name.clone(),
                    session_id,
                })),
                Err(problem) => found.problems.push(format!("{organization} / {}: {problem}", conn.name)),
            }
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

/// The sandboxes of a Daytona connection that are `org_id`'s orphans: listed by this deployment's
/// and this organization's labels (following the cursor), each one's labels checked again (never
/// another deployment's or organization's), older than [`DAYTONA_MIN_AGE_MS`], and named by no
/// workspace row and no tombstone. Their ids; `Err` says why Daytona could not be read.
async fn daytona_orphans(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    now: i64,
) -> anyhow::Result<Result<Vec<String>, String>> {
    let client = match daytona::client_for(st, org_id, conn).await {
        Ok(c) => c,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let mut labels = daytona::owner_labels(st, org_id);
    labels.insert(daytona::CONNECTION_LABEL.to_string(), conn.id.clone());
    let listed = match client.list_all_sandboxes(&labels, 10_000).await {
        Ok(l) => l,
        Err(e) => return Ok(Err(daytona::words(&e))),
    };
    let mut orphans = Vec::new();
    let mut c = st.db.conn().await?;
    for sb in listed {
        let ours = labels.iter().all(|(k, v)| sb.labels.get(k) == Some(v));
        let created = sb.created_at.as_deref().and_then(epoch_ms);
        if !ours || created.is_none_or(|at| now - at < DAYTONA_MIN_AGE_MS) {
            continue;
        }
        let mut known = false;
        for name in [&sb.id, &sb.name] {
            known = known
                || live::names_session(&mut c, org_id, &conn.id, name).await?
                || tombstones::is_pending(&mut c, org_id, &conn.id, name).await?;
        }
        if !known {
            orphans.push(sb.id);
        }
    }
    Ok(Ok(orphans))
}

/// An RFC 3339 time in epoch milliseconds.
pub(super) fn epoch_ms(at: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Purges each orphan at its host (files too), audited in its organization as
/// `sandbox.orphans_purged` (by the command line); returns how many were purged and the problems.
pub async fn purge(st: &AppState, orphans: &[Orphan]) -> anyhow::Result<(usize, Vec<String>)> {
    let mut purged = 0;
    let mut problems = Vec::new();
    for o in orphans {
        let Some(conn) = connections::for_org(st, &o.organization_id, &o.connection_id).await? else { continue };
        let outcome = if conn.kind == ConnectionKind::Daytona {
            match daytona::client_for(st, &o.organization_id, &conn).await {
                Ok(client) => destroy_daytona(&client, &o.session_id).await,
                Err(e) => Err(e.to_string()),
            }
        } else {
            match connections::client_for(st, &o.organization_id, &conn).await {
                Ok(client) => match client.delete_session(&o.session_id, true).await {
                    Ok(()) | Err(SandboxdError::NotFound { .. }) => Ok(()),
                    Err(e) => Err(e.in_words()),
                },
                Err(e) => Err(e.to_string()),
            }
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
