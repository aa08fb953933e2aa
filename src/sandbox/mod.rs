//! Everything about sandbox hosts: the sandboxd and Daytona clients and the capabilities built on
//! them.

pub mod connections;
pub mod doctor;
pub mod doctor_check;
pub mod doctor_engine;
pub mod env_file;
pub mod hosts;
pub mod log;
pub mod operations;
pub mod policy;
pub mod recording;
pub mod running;
pub mod snapshots;
pub mod tombstones;
pub mod workspaces;
