//! Everything about sandbox hosts: the sandboxd client and the capabilities built on it.

pub mod client;
pub mod connections;
pub mod doctor;
pub mod doctor_engine;
pub mod env_file;
pub mod operations;
pub mod policy;
pub mod recording;
pub mod running;
pub mod snapshots;
pub mod tombstones;
pub mod workspaces;
