//! Workspaces for runs: session keys and scopes, lazy opening, every operation recorded, and the
//! `state` backend's document.

pub mod api;
pub mod cache;
pub mod document;
pub mod error;
pub mod key;
pub mod model;
pub mod paths;
pub mod service;
pub mod store;
