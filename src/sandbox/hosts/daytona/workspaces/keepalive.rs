//! Keeping the sandboxes of open runs awake. Daytona stops a sandbox after
//! [`AUTO_STOP_MINUTES`](super::open::AUTO_STOP_MINUTES) without activity, and only toolbox calls
//! count: a run whose agent thinks for twenty minutes between two calls would find its sandbox
//! stopped (the next call starts it again, which takes seconds to minutes). So every sandbox a
//! running run has open is marked active (`POST /sandbox/{id}/last-activity`) every
//! [`TOUCH_EVERY_MS`], by the once-a-minute `sandbox-destroy-retry` sweep. Only running runs: a
//! finished run's sandbox is left to stop, and to be archived.

use crate::db::DbResult;
use crate::sandbox::connections::service as connections;
use crate::sandbox::hosts::daytona::connections as daytona_connection;
use crate::sandbox::workspaces::store;
use crate::state::AppState;

/// How often an open run's sandbox is marked active: a third of the auto-stop interval.
pub const TOUCH_EVERY_MS: i64 = super::open::AUTO_STOP_MINUTES * 60_000 / 3;

/// Marks active every open run's Daytona sandbox not marked within [`TOUCH_EVERY_MS`] of `now`;
/// how many were marked. A failure is logged and left to the next round.
pub async fn touch_open_runs(st: &AppState, now: i64) -> DbResult<usize> {
    let open = {
        let mut c = st.db.conn().await?;
        store::open_daytona_sandboxes(&mut c).await?
    };
    let mut marked = 0;
    for (org_id, connection_id, sandbox_id) in open {
        // When each sandbox was last marked active is this console's own view (two replicas each
        // touching is harmless).
        let due = st.daytona_sandboxes.touched_at(&sandbox_id).is_none_or(|at| now - at >= TOUCH_EVERY_MS);
        if !due {
            continue;
        }
        let Ok(Some(conn)) = connections::for_org(st, &org_id, &connection_id).await else { continue };
        let client = match daytona_connection::client_for(st, &org_id, &conn).await {
            Ok(client) => client,
            Err(e) => {
                tracing::info!(event = "daytona_keepalive_failed", sandbox_id = %sandbox_id, error = %e, "no client to keep a sandbox awake");
                continue;
            }
        };
        match client.touch_sandbox(&sandbox_id).await {
            Ok(()) => {
                st.daytona_sandboxes.keep_touched(&sandbox_id, now);
                marked += 1;
            }
            Err(e) => {
                tracing::info!(event = "daytona_keepalive_failed", sandbox_id = %sandbox_id, error = %e, "a sandbox could not be kept awake")
            }
        }
    }
    Ok(marked)
}
