//! The `state` placement: a workspace that is a document in the database (no host), its backend
//! and the merge at a run's end.

pub mod workspaces;
