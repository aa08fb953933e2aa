//! Runs: one turn of an agent, the unit a workspace is resolved for.

pub mod service;
pub mod store;
