//! Built sandboxd clients for a few seconds, so a stream of operations does not read and decrypt
//! the vault key each time. A rotated key or an edited address applies within [`CLIENT_TTL`].

use std::time::Duration;

use crate::cache::TtlCache;
use crate::sandbox::client::SandboxdClient;

pub const CLIENT_TTL: Duration = Duration::from_secs(10);

/// Clients by `org/connection`, each with the version (address, key, edit time) it was built for.
pub struct ClientCache(TtlCache<String, (String, SandboxdClient)>);

impl Default for ClientCache {
    fn default() -> Self {
        ClientCache(TtlCache::new(CLIENT_TTL, 1000))
    }
}

impl ClientCache {
    /// The cached client, if it was built for this `version` of the connection.
    pub fn get(&self, key: &str, version: &str) -> Option<SandboxdClient> {
        self.0.get(&key.to_string()).filter(|(v, _)| v == version).map(|(_, c)| c)
    }
    pub fn put(&self, key: String, version: String, client: SandboxdClient) {
        self.0.put(key, (version, client));
    }
}
