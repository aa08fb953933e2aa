//! The Daytona kind (docs/daytona.md): its client (the only code that speaks Daytona's HTTP), its
//! workspace backend, and its pieces of Connections (client, probe, health), Running (the
//! sandboxes section, close, orphans), the destroy sweep, Documents (stored files), snapshots (a
//! sandbox's archive) and doctor (its checks).

pub mod client;
pub mod connections;
pub mod doctor;
pub mod documents;
pub mod running;
pub mod snapshots;
pub mod tombstones;
pub mod workspaces;
