//! Destroying what tombstones name: right after a delete (`attempt`), and in the
//! `sandbox-destroy-retry` sweep (`sweep`). Each tombstone is claimed first (a conditional UPDATE),
//! so several replicas sweeping at once never destroy the same one twice at once. Then its session's
//! name is claimed as an open claims it ([`claims::claim_destroy`]) and the rows decided again under
//! that claim: a session a live workspace row uses now (a row re-created for the same key that
//! opened it) is not destroyed and the tombstone is retired; one whose name an open holds with no
//! row using it yet is deferred (2 minutes, not counted as an attempt) (docs/workspaces.md,
//! "Deleting conversations, agents and members"). A destroy the
//! provider confirms (or a session already gone) removes the tombstone; a failure keeps it, counts
//! the attempt, keeps the error in our words and schedules the next attempt, the pause doubling
//! from 2 minutes to 6 hours. `now` is the caller's clock (tests drive it; serving passes the
//! wall clock). A switched-off connection is still asked: off stops new work, not the bill.

use super::error::TombstoneError;
use super::model::{pause_after, SweepReport, Tombstone, CLAIM_MS, FIRST_PAUSE_MS};
use super::store;
use crate::db;
use crate::sandbox::connections::error::ConnectionError;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::dispatch::destroy::{self, NotDestroyed};
use crate::sandbox::workspaces::claims::{self, Destroy};
use crate::state::AppState;

type Result<T> = std::result::Result<T, TombstoneError>;

/// How many due tombstones one round reads.
const BATCH: i64 = 50;

/// The `sandbox-destroy-retry` sweep: every due tombstone of every organization that this
/// sweeper can claim, until none is left due at `now`.
pub async fn sweep(st: &AppState, now: i64) -> Result<SweepReport> {
    let token = db::new_id();
    let mut report = SweepReport::default();
    loop {
        let ids = {
            let mut c = st.db.conn().await?;
            store::due(&mut c, now, BATCH).await?
        };
        if ids.is_empty() {
            return Ok(report);
        }
        let round = attempt_claimed(st, &ids, &token, now).await?;
        let progressed = round.claimed > 0;
        report.add(round);
        if !progressed {
            // Every due one is another sweeper's now.
            return Ok(report);
        }
    }
}

/// Tries the tombstones `ids` now (right after the delete that wrote them): each one that is
/// still due and unclaimed is destroyed or rescheduled.
pub async fn attempt(st: &AppState, ids: &[String], now: i64) -> Result<SweepReport> {
    attempt_claimed(st, ids, &db::new_id(), now).await
}

async fn attempt_claimed(st: &AppState, ids: &[String], token: &str, now: i64) -> Result<SweepReport> {
    let mut report = SweepReport::default();
    for id in ids {
        let claimed = {
            let mut c = st.db.conn().await?;
            store::claim(&mut c, id, token, now, now + CLAIM_MS).await?
        };
        let Some(t) = claimed else { continue };
        report.claimed += 1;
        let decided = claims::claim_destroy(&st.db, &t.session_key, &t.session_id, None, db::now_ms()).await?;
        let outcome = match decided {
            Destroy::Go => {
                let outcome = destroy(st, &t).await;
                claims::release_purge(&st.db, &t.session_key).await?;
                outcome
            }
            Destroy::InUse(rows) => {
                retire(st, &t, token, &rows).await?;
                report.retired += 1;
                continue;
            }
            Destroy::Opening | Destroy::Busy => {
                let mut c = st.db.conn().await?;
                store::defer(&mut c, &t.id, token, now + FIRST_PAUSE_MS).await?;
                tracing::info!(event = "sandbox_destroy_deferred", tombstone_id = %t.id, session_key = %t.session_key,
                    "a removed sandbox's name is being opened or destroyed right now; tried again later");
                report.deferred += 1;
                continue;
            }
        };
        let mut c = st.db.conn().await?;
        match outcome {
            Ok(()) => {
                crate::instruments::destroy_attempt("destroyed");
                store::remove(&mut c, &t.id, token).await?;
                tracing::info!(event = "sandbox_destroyed", tombstone_id = %t.id, connection_id = %t.connection_id,
                    session_key = %t.session_key, attempts = t.attempts + 1, "a removed sandbox was destroyed at its host");
                report.destroyed += 1;
                report.destroyed_ids.push(t.id.clone());
            }
            Err(why) => {
                crate::instruments::destroy_attempt("failed");
                let attempts = t.attempts + 1;
                let next = now + pause_after(attempts);
                store::failed(&mut c, &t.id, token, next, &why, now).await?;
                tracing::warn!(event = "sandbox_destroy_failed", tombstone_id = %t.id, connection_id = %t.connection_id,
                    attempts, next_attempt_at = next, problem = %why, "a removed sandbox could not be destroyed yet");
                report.failed += 1;
            }
        }
    }
    Ok(report)
}

/// A live workspace row uses the session `t` names now (a row of the same key, re-created after
/// `t`'s was deleted, that opened it by name): the session is that workspace's, not the deleted
/// one's, so it is not destroyed, and the tombstone is retired (deleted). The live workspace's own
/// delete writes a tombstone of its own.
async fn retire(st: &AppState, t: &Tombstone, token: &str, rows: &[String]) -> Result<()> {
    let mut c = st.db.conn().await?;
    store::remove(&mut c, &t.id, token).await?;
    crate::instruments::destroy_attempt("retired");
    tracing::info!(event = "sandbox_destroy_retired", tombstone_id = %t.id, connection_id = %t.connection_id,
        session_key = %t.session_key, workspace_ids = ?rows,
        "a removed sandbox's session is used by a live workspace now: it is not destroyed");
    Ok(())
}

/// Destroys the session at its host ([`destroy::destroy`]: a session already gone counts as
/// destroyed). The error is in our words: never a token or an address.
async fn destroy(st: &AppState, t: &Tombstone) -> std::result::Result<(), String> {
    let conn = match connections::for_org(st, &t.organization_id, &t.connection_id).await {
        Ok(Some(conn)) => conn,
        Ok(None) => return Err("The connection no longer exists.".into()),
        Err(e) => return Err(connection_words(t, e)),
    };
    destroy::destroy(st, &t.organization_id, &conn, &t.session_id).await.map_err(|e| match e {
        NotDestroyed::Connection(e) => connection_words(t, e),
        NotDestroyed::Host(words) => words,
    })
}

/// Why the connection could not be asked, in words a member may read.
fn connection_words(t: &Tombstone, e: ConnectionError) -> String {
    match e {
        ConnectionError::Host(h) => h.in_words(),
        ConnectionError::NoCredential => {
            "The connection has no key in the vault (deleted or revoked): nothing was sent. \
             Give it a key again, or delete the sandbox at the host and then the connection, confirming."
                .into()
        }
        ConnectionError::KeyRefused(_) => "The connection's key may not be sent to its host (deleted, revoked or \
             saved for another address): nothing was sent. Give it a key again, or delete the sandbox at the host \
             and then the connection, confirming."
            .into(),
        ConnectionError::NoAddress => "The connection has no address.".into(),
        ConnectionError::AddressRefused(_) => {
            "This deployment may not send requests to the connection's address: nothing was sent.".into()
        }
        other => {
            tracing::warn!(tombstone_id = %t.id, error = %other, "destroying a removed sandbox failed");
            "The sandbox could not be destroyed (an error of ours; the server log has it).".into()
        }
    }
}
