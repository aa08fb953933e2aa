//! The Docker engine, read-only: the one module that uses `bollard` (docs/operating.md, "The Docker engine").
//! Switched on by `AGENTICOS_DOCKER_SOCKET` or `DOCKER_HOST`; off, none of it exists.
//!
//! What is read: the container list (names, image, state, status, published ports), each
//! sandboxd container's restart count and health, and one stats sample of a session container.
//! What never is: a container's environment or command line (the list does not carry them, and
//! nothing here reads `Config.Env` of an inspection), and nothing is ever started, stopped or
//! changed through the engine.

pub mod containers;
pub mod doctor;
pub mod engine;
pub mod stats;

pub use containers::{SandboxdContainer, VersionCheck};
pub use engine::{Engine, EngineError, CALL_TIMEOUT};
