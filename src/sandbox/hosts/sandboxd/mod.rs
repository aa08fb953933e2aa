//! The sandboxd kind: its client (the only code that speaks sandboxd's HTTP), its workspace
//! backend, and its pieces of Connections (a client with the vault's key, the probe), Running (a
//! session's close, orphans), the destroy sweep, Documents (stored files), snapshots (a workspace read into an archive) and
//! doctor (its checks).

pub mod client;
pub mod connections;
pub mod doctor;
pub mod documents;
pub mod running;
pub mod snapshots;
pub mod tombstones;
pub mod workspaces;
