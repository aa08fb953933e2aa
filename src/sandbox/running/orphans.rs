//! Orphans: sessions a host holds for an organization that nothing in our database knows any
//! more (a crash between open and the row's commit, a restored backup, a test run). A session is
//! an orphan only when its sandboxd `tenant` is the organization's id **and** its name is a key
//! this platform builds for that organization and connection; a workspace row naming it (by key
//! or by reference, read in one statement), a tombstone (pending removal) or a claim (an open
//! under way) makes it not an orphan. Never another tenant's session. On Daytona, a sandbox is an
//! orphan only when its labels name this deployment, the organization and the connection.
//!
//! **Proven dead, not seen missing once**: a session is named an orphan only once it has gone
//! [`min_age_ms`] without activity (sandboxd: its idle time, measured by the host itself, so no
//! clock between us matters; Daytona: its age, as its list is eventually consistent), and purged
//! only after [`claims::claim_purge`] decided again, in one transaction under the claim an open
//! takes, that nothing names it (docs/workspaces.md, "Orphans").

use serde::Serialize;

use crate::audit::service as audit;
use crate::db::DbError;
use crate::orgs::service as orgs;
use crate::sandbox::connections::model::{Connection, ConnectionKind};
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::connections as daytona;
use crate::sandbox::hosts::daytona::tombstones::destroy as destroy_daytona;
use crate::sandbox::hosts::sandboxd::client::SandboxdError;
use crate::sandbox::workspaces::claims::{self, Verdict};
use crate::sandbox::workspaces::key;
use crate::state::AppState;

/// One orphaned session.
#[derive(Debug, Clone, Serialize)]
pub struct Orphan {
    pub organization_id: String,
    pub organization: String,
    pub connection_id: String,
    pub connection_name: String,
    /// What the host destroys it by (a sandboxd session's id, a Daytona sandbox's id).
    pub session_id: String,
    /// What it is named (a sandboxd session's id, a Daytona sandbox's name): the name an open
    /// claims, so the one a purge claims.
    pub session_name: String,
}

/// What looking for orphans found: the orphans, and each host that could not be read.
#[derive(Debug, Default)]
pub struct Found {
    pub orphans: Vec<Orphan>,
    pub problems: Vec<String>,
}

/// What a purge did: how many it purged, the ones it spared (something names them by now) and
/// the ones it could not purge.
#[derive(Debug, Default)]
pub struct Purged {
    pub purged: usize,
    pub spared: Vec<String>,
    pub problems: Vec<String>,
}

/// Whether `session_id` (whose tenant is `org_id`) on `conn`, idle for `idle_ms` (as its host
/// measures it), is an orphan of `org_id` now: idle for at least [`min_age_ms`], a key of theirs,
/// and named by no workspace row, tombstone or claim. The one decision of the purge's listing and
/// of the Running tab's mark, so a session being opened right now is neither.
pub async fn is_orphan(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    session_id: &str,
    idle_ms: i64,
) -> anyhow::Result<bool> {
    if idle_ms < min_age_ms(st) || !key::is_key_of(session_id, org_id, &conn.id) {
        return Ok(false);
    }
    let mut c = st.db.conn().await?;
    Ok(!claims::is_known(&mut c, session_id, session_id, crate::db::now_ms()).await?)
}

/// How long a host session must have gone without activity before it may count as an orphan
/// (`AGENTICOS_ORPHAN_MIN_AGE_SECONDS`, 10 minutes unless set): a session being opened, or one an
/// operation just used, is not dead; and Daytona's list is eventually consistent.
pub fn min_age_ms(st: &AppState) -> i64 {
    i64::try_from(st.config.sandboxd.orphan_min_age_seconds).unwrap_or(i64::MAX / 2_000) * 1000
}

/// Every organization's orphans on each of its connections (switched off ones too).
pub async fn everywhere(st: &AppState) -> anyhow::Result<Found> {
    everywhere_at(st, crate::db::now_ms()).await
}

/// [`everywhere`] with the clock `now` (epoch milliseconds) that sessions' idle time and Daytona
/// sandboxes' age are measured against.
pub async fn everywhere_at(st: &AppState, now: i64) -> anyhow::Result<Found> {
    let mut found = Found::default();
    for (org_id, organization, conn) in connections::everywhere(st).await? {
        let orphan = |session_id: String, session_name: String| Orphan {
            organization_id: org_id.clone(),
            organization: organization.clone(),
            connection_id: conn.id.clone(),
            connection_name: conn.name.clone(),
            session_id,
            session_name,
        };
        let listed = match conn.kind {
            ConnectionKind::Daytona => daytona_orphans(st, &org_id, &conn, now).await?,
            ConnectionKind::Sandboxd => sandboxd_orphans(st, &org_id, &conn, now).await?,
        };
        match listed {
            Ok(ids) => found.orphans.extend(ids.into_iter().map(|(id, name)| orphan(id, name))),
            Err(problem) => found.problems.push(format!("{organization} / {}: {problem}", conn.name)),
        }
    }
    Ok(found)
}

/// The sessions of a sandboxd connection that are `org_id`'s orphans: of its tenant and
/// [`is_orphan`] with their idle time at `now` (the host's idle time, read at the listing, gives
/// the last activity on our clock). Their (id, name), the same; `Err` says why the host could not be
/// read.
async fn sandboxd_orphans(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    now: i64,
) -> anyhow::Result<Result<Vec<(String, String)>, String>> {
    let list = match connections::client_for(st, org_id, conn).await {
        Ok(client) => client.sessions(false).await.map_err(|e| e.in_words()),
        Err(e) => Err(e.to_string()),
    };
    let list = match list {
        Ok(list) => list,
        Err(problem) => return Ok(Err(problem)),
    };
    let listed_at = crate::db::now_ms();
    let mut orphans = Vec::new();
    for s in list.sessions.iter().filter(|s| s.tenant.as_deref() == Some(org_id)) {
        let last_active = listed_at - (s.idle_seconds.max(0.0) * 1000.0) as i64;
        if is_orphan(st, org_id, conn, &s.session_id, now - last_active).await? {
            orphans.push((s.session_id.clone(), s.session_id.clone()));
        }
    }
    Ok(Ok(orphans))
}

/// The sandboxes of a Daytona connection that are `org_id`'s orphans: listed by this deployment's
/// and this organization's labels (following the cursor), each one's labels checked again (never
/// another deployment's or organization's), older than [`min_age_ms`], and named by no workspace
/// row, tombstone or claim. Their (id, name); `Err` says why Daytona could not be read.
async fn daytona_orphans(
    st: &AppState,
    org_id: &str,
    conn: &Connection,
    now: i64,
) -> anyhow::Result<Result<Vec<(String, String)>, String>> {
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
        if !ours || created.is_none_or(|at| now - at < min_age_ms(st)) {
            continue;
        }
        if !claims::is_known(&mut c, &sb.name, &sb.id, crate::db::now_ms()).await? {
            orphans.push((sb.id, sb.name));
        }
    }
    Ok(Ok(orphans))
}

/// An RFC 3339 time in epoch milliseconds.
pub(crate) fn epoch_ms(at: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

/// Purges each orphan at its host (files too), audited in its organization as
/// `sandbox.orphans_purged` (by the command line). Each one is decided again right before its
/// destroy, under the claim an open takes ([`claims::claim_purge`]): one that an open claimed, or
/// that a workspace row or a tombstone names by now, is spared.
pub async fn purge(st: &AppState, orphans: &[Orphan]) -> anyhow::Result<Purged> {
    use futures_util::stream::{self, StreamExt as _};
    {
        let mut c = st.db.conn().await?;
        claims::delete_expired(&mut c, crate::db::now_ms()).await?;
    }
    // A destroy mostly waits for its host (Daytona confirms each one by polling): a few at once
    // make hundreds of orphans take seconds, not minutes. Each is claimed and decided on its own.
    let outcomes: Vec<anyhow::Result<Outcome>> =
        stream::iter(orphans).map(|o| purge_one(st, o)).buffered(PURGE_CONCURRENCY).collect().await;
    let mut done = Purged::default();
    for outcome in outcomes {
        match outcome? {
            Outcome::Purged => done.purged += 1,
            Outcome::Spared(why) => done.spared.push(why),
            Outcome::Failed(problem) => done.problems.push(problem),
            Outcome::NoConnection => {}
        }
    }
    Ok(done)
}

/// How many orphans are purged at once.
const PURGE_CONCURRENCY: usize = crate::sandbox::hosts::daytona::tombstones::DESTROY_CONCURRENCY;

/// What became of one orphan.
enum Outcome {
    Purged,
    Spared(String),
    Failed(String),
    /// Its connection is gone: nothing to ask.
    NoConnection,
}

/// Claims, decides again, destroys and audits one orphan.
async fn purge_one(st: &AppState, o: &Orphan) -> anyhow::Result<Outcome> {
    let Some(conn) = connections::for_org(st, &o.organization_id, &o.connection_id).await? else {
        return Ok(Outcome::NoConnection);
    };
    let named = |why: &str| format!("{} / {} / {}: {why}", o.organization, o.connection_name, o.session_id);
    let names = [o.session_name.as_str(), o.session_id.as_str()];
    match claims::claim_purge(&st.db, &names, crate::db::now_ms()).await? {
        Verdict::Dead => {}
        Verdict::Claimed => return Ok(Outcome::Spared(named("a workspace is being opened on it"))),
        Verdict::Named => return Ok(Outcome::Spared(named("a workspace or a pending delete names it now"))),
    }
    let outcome = destroy(st, o, &conn).await;
    claims::release_purge(&st.db, &o.session_name).await?;
    if let Err(problem) = outcome {
        return Ok(Outcome::Failed(named(&problem)));
    }
    let caller = orgs::command_line_caller(&st.db, &o.organization_id, None).await?;
    let mut tx = st.db.begin().await?;
    let detail =
        format!("on {}; no workspace of this organization named it; its files were deleted", o.connection_name);
    audit::record(&mut tx, &o.organization_id, &caller.actor(), "sandbox.orphans_purged", &o.session_id, &detail)
        .await?;
    tx.commit().await.map_err(DbError::from)?;
    Ok(Outcome::Purged)
}

/// Destroys orphan `o` on `conn` (one already gone is fine); `Err` says why not.
async fn destroy(st: &AppState, o: &Orphan, conn: &Connection) -> Result<(), String> {
    match conn.kind {
        ConnectionKind::Daytona => {
            return match daytona::client_for(st, &o.organization_id, conn).await {
                Ok(client) => destroy_daytona(&client, &o.session_id).await,
                Err(e) => Err(e.to_string()),
            };
        }
        ConnectionKind::Sandboxd => {}
    }
    match connections::client_for(st, &o.organization_id, conn).await {
        Ok(client) => match client.delete_session(&o.session_id, true).await {
            Ok(()) | Err(SandboxdError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.in_words()),
        },
        Err(e) => Err(e.to_string()),
    }
}
