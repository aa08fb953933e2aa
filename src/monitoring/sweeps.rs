//! The sweeps as the console runs them while serving: each run is kept as its sweep's last one
//! (the health report shows it) and counted (`agenticos_sweep_runs_total`, rows removed).

use crate::instruments::SWEEP_SIGN_INS as SIGN_INS;
use crate::instruments::{SweepRun, SWEEP_DESTROY_RETRY as DESTROY_RETRY, SWEEP_OPERATION_LOG as OPERATION_LOG};
use crate::state::AppState;

fn keep(st: &AppState, sweep: &'static str, now: i64, outcome: Result<u64, String>) {
    let run = match outcome {
        Ok(removed) => SweepRun { sweep, at: now, ok: true, removed, problem: None },
        Err(problem) => SweepRun { sweep, at: now, ok: false, removed: 0, problem: Some(problem) },
    };
    st.sweeps.record(run);
}

/// Logs why `sweep` failed and says it in words for the report (the cause stays in the log).
fn failed(sweep: &'static str, error: &dyn std::fmt::Display, words: &str) -> String {
    tracing::warn!(sweep, error = %error, "sweep failed");
    format!("{words} (the server log has why).")
}

/// `sandbox-destroy-retry`: every due tombstone, then the snapshot store's own; then the open
/// runs' Daytona sandboxes are kept awake.
pub async fn destroy_retry(st: &AppState, now: i64) {
    let outcome = match crate::sandbox::tombstones::sweep::sweep(st, now).await {
        Ok(r) => {
            if r.claimed > 0 {
                tracing::info!(sweep = DESTROY_RETRY, destroyed = r.destroyed, failed = r.failed, "sweep done");
            }
            Ok(r.destroyed as u64)
        }
        Err(e) => Err(failed(DESTROY_RETRY, &e, "The pending deletes could not be read")),
    };
    // The store's tombstones: snapshots of deleted workspaces whose delete failed.
    match crate::sandbox::snapshots::service::sweep(st, now).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(sweep = DESTROY_RETRY, snapshots_deleted = n, "sweep done"),
        Err(e) => tracing::warn!(sweep = DESTROY_RETRY, error = %e, "snapshot sweep failed"),
    }
    // Claims on session names that hold nothing any more (docs/workspaces.md, "Orphans").
    let claims = async { crate::sandbox::workspaces::claims::delete_expired(&mut *st.db.conn().await?, now).await };
    if let Err(e) = claims.await {
        tracing::warn!(sweep = DESTROY_RETRY, error = %e, "expired session claims could not be removed");
    }
    keep(st, DESTROY_RETRY, now, outcome);
    // Open runs' Daytona sandboxes, kept awake on the same minute.
    if let Err(e) = crate::sandbox::hosts::daytona::workspaces::keepalive::touch_open_runs(st, now).await {
        tracing::warn!(sweep = DESTROY_RETRY, error = %e, "keeping open runs' Daytona sandboxes awake failed");
    }
}

/// The operation log's retention.
pub async fn operation_log(st: &AppState, now: i64) {
    let days = st.config.sandboxd.operation_retention_days;
    let outcome = crate::sandbox::operations::sweep::sweep(&st.log, days, now)
        .await
        .map_err(|e| failed(OPERATION_LOG, &e, "The operation log could not be swept"));
    keep(st, OPERATION_LOG, now, outcome);
}

/// Expired sign-ins and stale failure records.
pub async fn sign_ins(st: &AppState, now: i64) {
    let outcome = crate::auth::service::sweep(&st.db, st.config.auth.login_window_minutes)
        .await
        .map_err(|e| failed(SIGN_INS, &e, "Expired sign-ins could not be swept"));
    if let Ok(n) = outcome {
        tracing::debug!(expired_sessions = n, "sweep done");
    }
    keep(st, SIGN_INS, now, outcome);
}
