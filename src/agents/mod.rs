//! Agents, conversations and runs: only what the sandbox needs.

pub mod api;
pub mod model;
pub mod service;
pub mod store;
