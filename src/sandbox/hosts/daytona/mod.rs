//! The Daytona kind (docs/daytona.md): its client (the only code that speaks Daytona's HTTP), its
//! workspace backend, and its pieces of Connections (client, probe, health), Running (the
//! sandboxes section, close), the destroy sweep and Documents (stored files).

pub mod client;
pub mod connections;
pub mod doctor;
pub mod documents;
pub mod running;
pub mod snapshots;
pub mod tombstones;
pub mod workspaces;
