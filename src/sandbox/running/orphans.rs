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

pub use super::orphaned::{is_orphan, min_age_ms};
use crate::audit::service as audit;
use crate::db::DbError;
use crate::orgs::service as orgs;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::dispatch::destroy::{self, NotDestroyed};
use crate::sandbox::hosts::dispatch::orphans as dispatch;
use crate::sandbox::workspaces::claims::{self, Verdict};
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
        let listed = dispatch::list(st, &org_id, &conn, now).await?;
        match listed {
            Ok(ids) => found.orphans.extend(ids.into_iter().map(|(id, name)| orphan(id, name))),
            Err(problem) => found.problems.push(format!("{organization} / {}: {problem}", conn.name)),
        }
    }
    Ok(found)
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
    let outcome = match destroy::destroy(st, &o.organization_id, &conn, &o.session_id).await {
        Ok(()) => Ok(()),
        Err(NotDestroyed::Connection(e)) => Err(e.to_string()),
        Err(NotDestroyed::Host(words)) => Err(words),
    };
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
