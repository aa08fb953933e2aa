//! What this console knows of Daytona sandboxes, by sandbox id, so an operation after the open
//! needs no API call: each sandbox's toolbox proxy URL and workspace root, the sandboxes seen
//! running lately (Documents), and when each was last kept awake. Kept in `AppState`
//! (`daytona_sandboxes`), each map capped; what is dropped is asked of Daytona again.

use std::time::Duration;

use crate::cache::TtlCache;

/// How long a sandbox's toolbox proxy URL and root are kept (they do not change while it lives).
pub const KNOWN_TTL: Duration = Duration::from_secs(60 * 60);

/// How long a sandbox seen running is taken to run without asking again: one Documents page
/// lists a workspace, then reads its newest files for tiles.
pub const SEEN_RUNNING: Duration = Duration::from_secs(10);

/// How long when a sandbox was last kept awake is remembered: longer than the keep-awake interval
/// (`keepalive::TOUCH_EVERY_MS`), so a sandbox is not touched before it is due.
pub const TOUCHED_TTL: Duration = Duration::from_secs(60 * 60);

/// At most this many sandboxes are kept in each map (the oldest go first).
pub const KNOWN_MAX: usize = 10_000;

pub struct KnownSandboxes {
    /// Each sandbox's `toolboxProxyUrl` as the API returned it at the open.
    proxies: TtlCache<String, String>,
    /// Each sandbox's workspace root (its home asked once).
    roots: TtlCache<String, String>,
    /// `toolboxProxyUrl` of sandboxes seen `started` lately.
    started: TtlCache<String, String>,
    /// When each sandbox was last marked active here (ms; a replica's own view).
    touched: TtlCache<String, i64>,
}

impl Default for KnownSandboxes {
    fn default() -> Self {
        KnownSandboxes {
            proxies: TtlCache::new(KNOWN_TTL, KNOWN_MAX),
            roots: TtlCache::new(KNOWN_TTL, KNOWN_MAX),
            started: TtlCache::new(SEEN_RUNNING, KNOWN_MAX),
            touched: TtlCache::new(TOUCHED_TTL, KNOWN_MAX),
        }
    }
}

impl KnownSandboxes {
    pub fn toolbox_proxy(&self, sandbox_id: &str) -> Option<String> {
        self.proxies.get(&sandbox_id.to_string())
    }
    pub fn keep_toolbox_proxy(&self, sandbox_id: &str, proxy: &str) {
        self.proxies.put(sandbox_id.to_string(), proxy.to_string());
    }

    pub fn root(&self, sandbox_id: &str) -> Option<String> {
        self.roots.get(&sandbox_id.to_string())
    }
    pub fn keep_root(&self, sandbox_id: &str, root: &str) {
        self.roots.put(sandbox_id.to_string(), root.to_string());
    }

    /// The proxy URL of a sandbox seen running within [`SEEN_RUNNING`].
    pub fn recently_started(&self, sandbox_id: &str) -> Option<String> {
        self.started.get(&sandbox_id.to_string())
    }
    pub fn keep_started(&self, sandbox_id: &str, proxy: &str) {
        self.started.put(sandbox_id.to_string(), proxy.to_string());
    }

    pub fn touched_at(&self, sandbox_id: &str) -> Option<i64> {
        self.touched.get(&sandbox_id.to_string())
    }
    pub fn keep_touched(&self, sandbox_id: &str, at: i64) {
        self.touched.put(sandbox_id.to_string(), at);
    }

    /// Forgets a sandbox that is being deleted.
    pub fn forget(&self, sandbox_id: &str) {
        let id = sandbox_id.to_string();
        self.proxies.remove(&id);
        self.roots.remove(&id);
        self.started.remove(&id);
    }
}
