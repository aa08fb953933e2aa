//! Workspace snapshots (issue 14): a workspace's files saved as one compressed archive in an
//! object store (a local folder or any S3-compatible store), taken when a run finishes (per the
//! agent's `snapshots` setting) or on demand; a new run may start from one, a workspace whose
//! files its host lost starts again from its latest; `session_state` lets a later run continue in
//! a workspace.

pub mod api;
pub mod archive;
pub mod hold;
pub mod keep;
pub mod lifecycle;
pub mod manifest;
pub mod model;
pub mod objects;
pub mod pages;
pub mod pending;
pub mod reading;
pub mod reading_batched;
pub mod restore;
pub mod service;
pub mod session_state;
pub mod settings;
pub mod starts;
pub mod store;
pub mod uploads;
