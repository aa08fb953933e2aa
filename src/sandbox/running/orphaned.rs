//! What makes a host's session an orphan, asked by the orphans' listing of each kind
//! (`hosts/<kind>/running/orphans.rs`) and by the Running tab's mark (docs/workspaces.md,
//! "Orphans"): how long it must have been dead, and the one decision for a sandboxd session.

use crate::sandbox::connections::model::Connection;
use crate::sandbox::workspaces::claims;
use crate::sandbox::workspaces::key;
use crate::state::AppState;

/// A connection's orphans as its kind lists them, each (id, name); the inner `Err` says why the
/// host could not be read.
pub type Listed = anyhow::Result<Result<Vec<(String, String)>, String>>;

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

/// An RFC 3339 time in epoch milliseconds.
pub(crate) fn epoch_ms(at: &str) -> Option<i64> {
    let t = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}
