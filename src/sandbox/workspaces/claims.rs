//! Claims on a host session's name (migration `20270108090000_session_claims`): an open and the
//! orphan purge of one name never interleave, whichever console or command-line process runs them,
//! on SQLite and PostgreSQL (docs/workspaces.md, "Orphans").
//!
//! ```text
//! open   claim_open ── a purge holds the name ──▶ wait (up to OPEN_WAITS_FOR_PURGE), then refuse
//!            │ claimed (opening_until = now + 15 min)
//!            ▼
//!        host open ──▶ agent files ──▶ the row names the session ──▶ release_open
//!
//! purge  claim_purge, one transaction: the name claimed unless an open or a purge holds it,
//!        then no workspace row and no tombstone may name it ──▶ commit ──▶ host delete ──▶ release
//!
//! destroy (a tombstone's, "Close and delete files") claim_destroy, one transaction: the name
//!        claimed unless a purge or a destroy holds it, then a live row other than the one meant
//!        may not use the session, nor an open be under way with no row using it yet
//!        ──▶ commit ──▶ host delete ──▶ release
//! ```
//! The claim is one row a name, written by a single statement on each side: on PostgreSQL the
//! second writer waits for the first one's row lock and then re-checks the condition on the row as
//! committed; on SQLite the writes are serialized by the database's write lock. No lock is held
//! across a host call: the purge commits its claim before it asks the host. An open's claim ends
//! once its workspace row names the session ([`release_open`]), or expires (an open that failed):
//! from then on the row is what keeps the session. Two consoles may open one name at once, and
//! the first to finish ends the other's claim too; that is safe because both open the same row,
//! which by then uses the session (so no purge or destroy takes it unless that workspace's own
//! files are the ones being deleted).

use std::time::{Duration, Instant};

use super::claims_store as store;
use crate::db::{self, Conn, Db, DbError, DbResult};

/// How long an open's claim holds: longer than the longest open (a runtime build is waited for up
/// to 10 minutes) and the files written after it, before the row names the session.
pub const OPEN_CLAIM_MS: i64 = 15 * 60 * 1000;
/// How long a purge's claim holds at most (a purger that crashed before releasing it): longer
/// than one host delete.
pub const PURGE_CLAIM_MS: i64 = 5 * 60 * 1000;
/// How long an open waits for a purge of its name to finish before it refuses.
pub const OPEN_WAITS_FOR_PURGE: Duration = Duration::from_secs(60);

/// Claims `key` for an open, unless a purge holds it (false). One statement.
pub async fn claim_open(c: &mut Conn, key: &str, now: i64) -> DbResult<bool> {
    store::take_open(c, key, now + OPEN_CLAIM_MS, now).await
}

/// [`claim_open`], waiting (a growing pause) while a purge holds the name, up to `wait`; false
/// when the purge still holds it then.
pub async fn claim_open_waiting(db: &Db, key: &str, wait: Duration) -> DbResult<bool> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        let mut c = db.conn().await?;
        if claim_open(&mut c, key, db::now_ms()).await? {
            return Ok(true);
        }
        drop(c);
        if started.elapsed() >= wait {
            return Ok(false);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// What the purge of a host session decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Claimed for the purge, and nothing names it: destroy it, then [`release_purge`].
    Dead,
    /// An open (or another purge) holds its name now.
    Claimed,
    /// A workspace row or a tombstone names it now.
    Named,
}

/// The purge's decision for the host session called `names` (its name, the key claimed, first;
/// a Daytona sandbox's id after it), in one transaction: the name claimed for a purge unless an
/// open or another purge holds it, then no workspace row of any organization and no tombstone may
/// name it by any of `names`. Committed only when [`Verdict::Dead`].
pub async fn claim_purge(db: &Db, names: &[&str], now: i64) -> DbResult<Verdict> {
    let (first, second) = match names {
        [one] => (*one, *one),
        [one, two, ..] => (*one, *two),
        [] => return Ok(Verdict::Named),
    };
    let mut tx = db.begin().await?;
    // The write comes first: on SQLite the transaction holds the write lock from its start; on
    // PostgreSQL the row stays locked until the commit, so an open's claim waits and then sees it.
    if !store::take_purge(&mut tx, first, now + PURGE_CLAIM_MS, now).await? {
        tx.rollback().await.map_err(DbError::from)?;
        return Ok(Verdict::Claimed);
    }
    if store::names_any(&mut tx, first, second).await? {
        tx.rollback().await.map_err(DbError::from)?;
        return Ok(Verdict::Named);
    }
    tx.commit().await.map_err(DbError::from)?;
    Ok(Verdict::Dead)
}

/// What a destroy of a known session (a tombstone's, or the Running tab's "Close and delete
/// files") decided under the claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destroy {
    /// Claimed for the destroy: destroy it, then [`release_purge`].
    Go,
    /// An open of its name is under way: a workspace row names its key and none uses the session
    /// yet; it may be about to (nothing is destroyed now).
    Opening,
    /// Another destroy or purge holds its name.
    Busy,
    /// Live workspace rows use the session now (their ids), other than the one the destroy is for.
    InUse(Vec<String>),
}

/// The decision of a destroy of host session `what` named `name` (for sandboxd both are the
/// session's id; for Daytona the sandbox's name, and its id or name), in one transaction: the name
/// claimed for the destroy unless a purge or another destroy holds it, then the workspace rows that
/// name the session read (of any organization, [`store::namers`]). A row other than `allowed` (the
/// workspace whose files the caller means to delete) using it: [`Destroy::InUse`]. A row naming its
/// key without using it yet while an open holds the name: [`Destroy::Opening`] (that row's open is
/// under way: a row exists before its open claims). Committed only when [`Destroy::Go`]. Unlike
/// the orphan purge, an open's claim alone does not stop it: the claim lasts 15 minutes after
/// every open, also after the row that opened it was deleted, and the rows are what say whose the
/// session is.
pub async fn claim_destroy(db: &Db, name: &str, what: &str, allowed: Option<&str>, now: i64) -> DbResult<Destroy> {
    let mut tx = db.begin().await?;
    let Some(opening_until) = store::take_destroy(&mut tx, name, now + PURGE_CLAIM_MS, now).await? else {
        tx.rollback().await.map_err(DbError::from)?;
        return Ok(Destroy::Busy);
    };
    let namers = store::namers(&mut tx, name, what).await?;
    let others: Vec<String> =
        namers.iter().filter(|(id, uses)| *uses && Some(id.as_str()) != allowed).map(|(id, _)| id.clone()).collect();
    let in_use = namers.iter().any(|(_, uses)| *uses);
    let verdict = if !others.is_empty() {
        Destroy::InUse(others)
    } else if !in_use && !namers.is_empty() && opening_until > now {
        Destroy::Opening
    } else {
        Destroy::Go
    };
    if verdict == Destroy::Go {
        tx.commit().await.map_err(DbError::from)?;
    } else {
        tx.rollback().await.map_err(DbError::from)?;
    }
    Ok(verdict)
}

/// Whether a workspace row, a tombstone or an unexpired claim names host session `a` or `b` now,
/// in one statement (the orphan listing's check; the purge decides again under its claim).
pub async fn is_known(c: &mut Conn, a: &str, b: &str, now: i64) -> DbResult<bool> {
    store::is_known(c, a, b, now).await
}

/// Ends an open's claim on `key`: its workspace row names the session now.
pub async fn release_open(db: &Db, key: &str) -> DbResult<()> {
    store::clear_open(&mut *db.conn().await?, key).await
}

/// Ends a purge's claim on `key` (its host delete is done, or failed).
pub async fn release_purge(db: &Db, key: &str) -> DbResult<()> {
    store::clear_purge(&mut *db.conn().await?, key).await
}

/// Deletes the claims that hold nothing any more; returns how many.
pub async fn delete_expired(c: &mut Conn, now: i64) -> DbResult<u64> {
    store::delete_expired(c, now).await
}
