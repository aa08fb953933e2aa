//! The sandboxd kind's piece of snapshots: a session's workspace read into a snapshot's archive,
//! packed by its sandbox when the session is live ([`packed`]), else file by file through the
//! stored-workspace routes ([`file_by_file`]); both hand their folders and files to the shared
//! reader of `snapshots/reading.rs`.

pub mod file_by_file;
pub mod packed;
