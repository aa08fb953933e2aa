//! Where a capability reaches a kind's own code (issue 48): one function per capability, each one
//! exhaustive `match` on the kind (or the placement, or a value the kind made: `StoredFiles`)
//! calling into that kind's folder (`hosts/sandboxd/`, `hosts/daytona/`, `hosts/state/`). The
//! capability calls the function and
//! never compares kinds. One file per capability, so that a kind folder that uses a capability's
//! service (Daytona's Running section uses the connections service) never makes a loop through
//! the function that capability calls.

pub mod connections;
pub mod destroy;
pub mod doctor;
pub mod orphans;
pub mod running;
pub mod stored_files;
pub mod workspaces;
