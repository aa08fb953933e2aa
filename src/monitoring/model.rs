//! The health report: one organization's connections, pending deletes, sweeps and failures.

use serde::Serialize;

use crate::instruments::SweepRun;
use crate::sandbox::connections::model::Health;
use crate::sandbox::tombstones::model::Pending;

/// Is everything OK? What `GET /api/v1/health` answers and the Home page shows.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HealthReport {
    /// True when no enabled connection's last known state is a problem, no pending delete has
    /// failed, and no sweep's last run failed.
    pub ok: bool,
    /// Each of this organization's connections, with its last known state.
    pub connections: Vec<ConnectionState>,
    /// Sandboxes of this organization waiting to be destroyed at their hosts.
    pub tombstones_pending: i64,
    /// How many connections have a pending delete whose last attempt failed.
    pub connections_with_failed_deletes: i64,
    /// Each sweep's last run on this console since it started (every organization's sweep).
    pub sweeps: Vec<SweepRun>,
    /// This organization's workspace operations that failed in the last hour.
    pub failed_operations_last_hour: i64,
}

/// One connection's last known state.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ConnectionState {
    /// The connection's id.
    pub id: String,
    /// Its name in this organization.
    pub name: String,
    /// Switched on; a switched-off connection's state is no problem.
    pub is_enabled: bool,
    /// The last known state, as the background check (or the Connections page, or a save) last
    /// found it; null only before the host's first check.
    pub state: Option<Health>,
    /// What was found, in words (never the address or a key); null when not known yet.
    pub message: Option<String>,
    /// When the check that found `state` began (epoch milliseconds); null before the first check
    /// and for a switched-off connection (not asked).
    pub checked_at: Option<i64>,
    /// Since when the state has been what it is (epoch milliseconds), as far as the checks saw.
    pub since: Option<i64>,
    /// What this connection still has to destroy.
    pub pending: Pending,
}

impl ConnectionState {
    /// Whether this connection's state is a problem to fix.
    pub fn is_problem(&self) -> bool {
        self.is_enabled && self.state.is_some_and(|h| !matches!(h, Health::Healthy | Health::SwitchedOff))
    }
}

impl HealthReport {
    /// Connections by state word (`healthy`, `no answer`, `not checked yet` …) with their count.
    pub fn hosts_by_state(&self) -> Vec<(&'static str, usize)> {
        let mut out: Vec<(&'static str, usize)> = Vec::new();
        for c in &self.connections {
            let word = c.state.map_or("not checked yet", |h| h.label());
            match out.iter_mut().find(|(w, _)| *w == word) {
                Some((_, n)) => *n += 1,
                None => out.push((word, 1)),
            }
        }
        out
    }

    /// The sweeps whose last run failed.
    pub fn failed_sweeps(&self) -> Vec<&SweepRun> {
        self.sweeps.iter().filter(|s| !s.ok).collect()
    }
}
