//! Everything about sandbox hosts: the sandboxd client and the capabilities built on it.

pub mod client;
pub mod connections;
pub mod policy;
pub mod running;
