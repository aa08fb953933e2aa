//! Workspaces for runs: session keys and scopes, one [`backend::WorkspaceBackend`] per backend
//! (`state`: a document in our database; `sandboxd`: a session on a sandbox host, opened lazily),
//! and recording as a wrapper around any of them.

pub mod api;
pub mod backend;
pub mod cache;
pub mod claims;
mod claims_store;
pub mod command;
pub mod document;
pub mod error;
pub mod hold;
pub mod host_files;
pub mod key;
pub mod live;
pub mod manifest;
pub mod merge;
pub mod model;
pub mod on_host;
pub mod opening;
pub mod recorded;
pub mod recovery;
pub mod removal;
pub mod removal_api;
pub mod restoring;
pub mod scope;
pub mod service;
pub mod sessions;
pub mod state_store;
pub mod store;
pub mod uploads;

pub use host_files::Unpacked;
