//! Connections: an organization's registrations of sandbox hosts, probing, policy, running sessions.

pub mod address;
pub mod model;
pub mod service;
pub mod store;
