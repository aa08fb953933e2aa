//! Tombstones (docs/design.md §10): the record of a sandbox whose workspace was deleted while its
//! session may still run at the provider, kept until the provider confirms the destroy. `service`
//! writes, counts and forgets them (inside the caller's transaction); `sweep` destroys them — right
//! after a delete, and in the `sandbox-destroy-retry` sweep (every minute while serving, and
//! `agenticos sweep`), the pause doubling from 2 minutes to 6 hours.

pub mod error;
pub mod model;
pub mod service;
pub mod store;
pub mod sweep;
