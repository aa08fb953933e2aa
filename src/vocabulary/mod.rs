//! The words agents, documents and the sandbox share: a workspace's scope, a path inside a
//! workspace, and what a sandbox starts a command with. Both sides import them from here, downward
//! (docs/architecture.md): nothing here imports anything else of this crate.

pub mod command;
pub mod paths;
pub mod scope;
