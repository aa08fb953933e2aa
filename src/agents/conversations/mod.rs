//! Conversations: an agent's threads with the people they are shared with.

pub mod service;
pub mod store;
