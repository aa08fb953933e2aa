//! Each connection's last known health, kept in the database and refreshed by a background check
//! on a schedule (`AGENTICOS_HOST_CHECK_SECONDS`, default 30): what Home's "Is everything OK?",
//! `GET /api/v1/health` and `/metrics` read, on every replica alike. Every replica runs the check;
//! each host's check is claimed first (`checks_store::claim`), so two replicas never ask one host
//! at once and each host is asked about once an interval whatever the number of replicas. A check
//! the Connections table or a save made is kept too (`keep_seen`). Switched-off connections are
//! not asked. See docs/operating.md, "Host checks".

use std::time::Duration;

use super::checks_store::{self as store, CheckRow, Claim};
use super::health::{self, ASK_WITHIN};
use super::model::{Connection, ConnectionHealth, Health};
use super::seen::version_of;
use crate::db::DbError;
use crate::state::AppState;
use futures_util::future::join_all;

/// How long a claim holds a host's check: longer than any check takes.
const CLAIM_FOR: Duration = Duration::from_secs(ASK_WITHIN.as_secs() + 60);

/// A connection's last known state.
#[derive(Debug, Clone)]
pub struct LastCheck {
    pub health: Health,
    pub message: String,
    /// When the check that found it began (epoch milliseconds); `None` for a switched-off
    /// connection (never asked).
    pub checked_at: Option<i64>,
    /// Since when the state has been what it is.
    pub since: Option<i64>,
}

/// What one round of checks did on this replica.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Hosts this replica claimed and asked.
    pub checked: usize,
    /// Hosts that were not due or that another replica was checking.
    pub skipped: usize,
}

/// One round: every switched-on connection of every organization whose last check is due (began
/// at least `interval` before `now`, less [`slack`]; or never; or about an older version of it) is
/// claimed and its host asked, all in parallel, each within [`ASK_WITHIN`].
pub async fn round(st: &AppState, now: i64, interval: Duration) -> Result<Round, DbError> {
    let conns = {
        let mut c = st.db.conn().await?;
        super::store::all(&mut c).await?
    };
    let due_before = now - (interval - slack(interval)).as_millis() as i64;
    let checks =
        conns.iter().filter(|(_, conn)| conn.is_enabled).map(|(org, conn)| check_one(st, org, conn, now, due_before));
    let mut round = Round::default();
    for outcome in join_all(checks).await {
        match outcome? {
            true => round.checked += 1,
            false => round.skipped += 1,
        }
    }
    Ok(round)
}

/// How much earlier than a whole interval a check is due again: rounds run every interval, and
/// one that starts a little earlier after the last one than the interval (the timer's jitter)
/// must still find the host due, or the host would wait a second interval.
pub fn slack(interval: Duration) -> Duration {
    (interval / 4).min(Duration::from_secs(5))
}

async fn check_one(st: &AppState, org_id: &str, conn: &Connection, now: i64, due_before: i64) -> Result<bool, DbError> {
    let token = uuid::Uuid::new_v4().to_string();
    let version = version_of(conn);
    let claim = Claim {
        org_id,
        connection_id: &conn.id,
        version: &version,
        token: &token,
        now,
        due_before,
        until: now + CLAIM_FOR.as_millis() as i64,
    };
    if !store::claim(&mut *st.db.conn().await?, &claim).await? {
        return Ok(false);
    }
    let found = match health::ask(st, org_id, conn).await {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(connection = %conn.id, error = %e, "a host check could not be made");
            ConnectionHealth::new(conn, Health::HostError, "The host could not be checked (the server log has why).")
        }
    };
    let mut c = st.db.conn().await?;
    store::record_claimed(&mut c, &conn.id, &token, &version, found.health.code(), &found.message, now).await?;
    Ok(true)
}

/// The last known state of each of `org_id`'s `conns`, read from the database (no host is asked):
/// `None` where the host was never checked.
pub async fn last_known(st: &AppState, org_id: &str, conns: &[Connection]) -> Result<Vec<Option<LastCheck>>, DbError> {
    let rows = store::of_organization(&mut *st.db.conn().await?, org_id).await?;
    Ok(conns.iter().map(|conn| of_row(conn, rows.iter().find(|r| r.connection_id == conn.id))).collect())
}

fn of_row(conn: &Connection, row: Option<&CheckRow>) -> Option<LastCheck> {
    if !conn.is_enabled {
        let message = "Switched off: no new work starts there.".to_string();
        return Some(LastCheck { health: Health::SwitchedOff, message, checked_at: None, since: None });
    }
    let row = row?;
    Some(LastCheck {
        health: Health::from_code(row.health.as_deref()?)?,
        message: row.message.clone().unwrap_or_default(),
        checked_at: row.checked_at,
        since: row.since,
    })
}

#[cfg(test)]
mod tests {
    use super::Health;

    #[test]
    fn every_health_word_is_stored_as_the_api_spells_it_and_read_back() {
        for h in Health::ALL {
            assert_eq!(serde_json::to_value(h).ok(), Some(serde_json::json!(h.code())));
            assert_eq!(Health::from_code(h.code()), Some(h));
        }
        assert_eq!(Health::from_code("sleepy"), None);
    }
}
