//! Built sandboxd and Daytona clients for a few seconds, so a stream of operations does not read
//! and decrypt the vault key each time; and each host's health for the Connections table, so viewing it
//! costs at most one check of each host per [`HEALTH_TTL`]. Both are kept per version of the
//! connection (address, key and its last rotation, last edit): a change applies at once.

use std::time::Duration;

use super::model::ConnectionHealth;
use crate::cache::TtlCache;
use crate::sandbox::hosts::sandboxd::client::SandboxdClient;

pub const CLIENT_TTL: Duration = Duration::from_secs(10);

/// At most this many clients of each kind are kept (the oldest go first).
pub const CLIENTS_MAX: usize = 1000;

/// Clients by `org/connection`, each with the version (address, key, edit time) it was built for:
/// sandboxd clients, or Daytona ones (`ClientCache<DaytonaClient>`).
pub struct ClientCache<C = SandboxdClient>(TtlCache<String, (String, C)>);

impl<C: Clone> Default for ClientCache<C> {
    fn default() -> Self {
        ClientCache(TtlCache::new(CLIENT_TTL, CLIENTS_MAX))
    }
}

impl<C: Clone> ClientCache<C> {
    /// The cached client, if it was built for this `version` of the connection.
    pub fn get(&self, key: &str, version: &str) -> Option<C> {
        self.0.get(&key.to_string()).filter(|(v, _)| v == version).map(|(_, c)| c)
    }
    pub fn put(&self, key: String, version: String, client: C) {
        self.0.put(key, (version, client));
    }
    pub fn forget(&self, key: &str) {
        self.0.remove(&key.to_string());
    }
}

/// How long the Connections table reuses a host's health: about one refresh of the table.
pub const HEALTH_TTL: Duration = Duration::from_secs(10);

/// Health answers by `org/connection`, each with the version of the connection it is about.
pub struct HealthCache(TtlCache<String, (String, ConnectionHealth)>);

impl Default for HealthCache {
    fn default() -> Self {
        HealthCache(TtlCache::new(HEALTH_TTL, 1000))
    }
}

impl HealthCache {
    /// The kept answer, if it is about this `version` of the connection.
    pub fn get(&self, key: &str, version: &str) -> Option<ConnectionHealth> {
        self.0.get(&key.to_string()).filter(|(v, _)| v == version).map(|(_, h)| h)
    }
    pub fn put(&self, key: String, version: String, health: ConnectionHealth) {
        self.0.put(key, (version, health));
    }
    pub fn forget(&self, key: &str) {
        self.0.remove(&key.to_string());
    }
}
