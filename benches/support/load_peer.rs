//! The sandboxd peer (`tests/peer/run.sh`) as the load benches start it.

use super::peer::{Peer, PeerOptions};

/// A peer with room for 1,000 sessions (of one tenant, too) that logs warnings only: access
/// lines for every request would cost the peer time on every path alike.
pub async fn start_load_peer() -> Peer {
    Peer::start(
        PeerOptions::default()
            .env("SANDBOXD_MAX_SESSIONS", "1000")
            .env("SANDBOXD_MAX_SESSIONS_PER_TENANT", "1000")
            .env("PEER_LOG_LEVEL", "warning"),
    )
    .await
    .unwrap_or_else(|e| panic!("{e:#}"))
}
