//! What the workspace hot path keeps in this process: one open lock per workspace, and resolved
//! runs for a few seconds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::model::Resolved;
use crate::cache::TtlCache;

/// One lock per workspace in this process, so concurrent first operations open one session.
#[derive(Default)]
pub struct OpenLocks(Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>);

impl OpenLocks {
    pub fn get(&self, workspace_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(workspace_id.to_string()).or_default().clone()
    }
}

/// Resolved runs for a few seconds, so an agent runtime's stream of operations does not look the
/// same rows up each time. Updated when a session opens; dropped when a run finishes or a
/// workspace is lost, and a connection's entries when it is edited, switched off or deleted on
/// this replica. Settings edited meanwhile on another replica apply within [`RESOLVE_TTL`].
///
/// On SQLite an entry also keeps the change counter (`resolve_epoch`, see its migration; the log
/// store reads it, `sandbox/log/sqlite.rs`, and gives a reading up to 100 ms old again) read
/// before its rows were: once expired, it is served again, for another [`RESOLVE_TTL`] from the
/// moment the counter is read, as long as the counter still says that. Any change to the rows a
/// run is resolved from, here or on another console on the same file, moves the counter, so the
/// bound above holds; what it saves is the six statements of a resolve, a run every second.
pub struct ResolveCache {
    entries: TtlCache<(String, String), Stamped>,
}

#[derive(Clone)]
struct Stamped {
    resolved: Resolved,
    /// The change counter read before the rows were, if it was.
    epoch: Option<i64>,
}

/// Short: a connection switched off on another replica stops new work there within it.
pub const RESOLVE_TTL: Duration = Duration::from_secs(1);

impl Default for ResolveCache {
    fn default() -> Self {
        ResolveCache { entries: TtlCache::new(RESOLVE_TTL, 10_000) }
    }
}

impl ResolveCache {
    pub fn get(&self, org_id: &str, run_id: &str) -> Option<Resolved> {
        self.entries.get(&(org_id.to_string(), run_id.to_string())).map(|s| s.resolved)
    }

    /// An expired (or live) entry's rows and the change counter they were read under, if known.
    pub fn stale(&self, org_id: &str, run_id: &str) -> Option<(Resolved, i64)> {
        let (_, s) = self.entries.peek(&(org_id.to_string(), run_id.to_string()))?;
        Some((s.resolved, s.epoch?))
    }

    /// Keeps `r` (a session opened, a document written): renewed only by looking it up again.
    pub fn put(&self, r: &Resolved) {
        self.entries.put((r.org_id.clone(), r.run.id.clone()), Stamped { resolved: r.clone(), epoch: None });
    }

    /// Keeps `r`, read after the change counter said `epoch` at `read_at`: it expires a
    /// [`RESOLVE_TTL`] after `read_at`, and the counter can renew it.
    pub fn put_stamped(&self, r: &Resolved, epoch: i64, read_at: Instant) {
        let stamped = Stamped { resolved: r.clone(), epoch: Some(epoch) };
        self.entries.put_at((r.org_id.clone(), r.run.id.clone()), stamped, read_at);
    }

    pub fn forget_workspace(&self, workspace_id: &str) {
        self.entries.retain(|_, s| s.resolved.workspace.id != workspace_id);
    }
    /// Drops every run resolved to connection `connection_id` of `org_id` (edited, switched off
    /// or deleted): the next operation reads the connection again.
    pub fn forget_connection(&self, org_id: &str, connection_id: &str) {
        self.entries.retain(|(org, _), s| {
            !(org == org_id && s.resolved.connection.as_ref().is_some_and(|c| c.id == connection_id))
        });
    }
    pub fn forget_run(&self, org_id: &str, run_id: &str) {
        self.entries.remove(&(org_id.to_string(), run_id.to_string()));
    }
}
