//! What the workspace hot path keeps in this process: one open lock per workspace, and resolved
//! runs for a few seconds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
pub struct ResolveCache(TtlCache<(String, String), Resolved>);

/// Short: a connection switched off on another replica stops new work there within it.
pub const RESOLVE_TTL: Duration = Duration::from_secs(1);

impl Default for ResolveCache {
    fn default() -> Self {
        ResolveCache(TtlCache::new(RESOLVE_TTL, 10_000))
    }
}

impl ResolveCache {
    pub fn get(&self, org_id: &str, run_id: &str) -> Option<Resolved> {
        self.0.get(&(org_id.to_string(), run_id.to_string()))
    }
    pub fn put(&self, r: &Resolved) {
        self.0.put((r.org_id.clone(), r.run.id.clone()), r.clone());
    }
    pub fn forget_workspace(&self, workspace_id: &str) {
        self.0.retain(|_, r| r.workspace.id != workspace_id);
    }
    /// Drops every run resolved to connection `connection_id` of `org_id` (edited, switched off
    /// or deleted): the next operation reads the connection again.
    pub fn forget_connection(&self, org_id: &str, connection_id: &str) {
        self.0.retain(|(org, _), r| !(org == org_id && r.connection.as_ref().is_some_and(|c| c.id == connection_id)));
    }
    pub fn forget_run(&self, org_id: &str, run_id: &str) {
        self.0.remove(&(org_id.to_string(), run_id.to_string()));
    }
}
