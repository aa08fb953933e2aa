//! Recording (DESIGN.md §8): every workspace operation that reached the host becomes a row of
//! `sandbox_operations` — never a payload, never an output. The rows come from the wrapper every
//! workspace backend is used through (`sandbox::workspaces::recorded`). Rows are buffered and committed
//! together, off the request path: every second, and a run's rows when it finishes (flushes are
//! serialised, so `finish` returns only after every row of the run is committed). A failure to
//! record is logged and does not fail the operation.

pub mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use crate::db::Db;

pub const TARGET_MAX: usize = 512;
/// Past this many buffered rows, the request that adds one writes them (backpressure).
const BUFFER_MAX: usize = 10_000;

/// The operations that are recorded (questions like `exists` and `stat` are not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Read,
    Write,
    Ls,
    Mkdir,
    Remove,
    Execute,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Ls => "ls",
            Operation::Mkdir => "mkdir",
            Operation::Remove => "remove",
            Operation::Execute => "execute",
        }
    }
}

/// One row to write.
#[derive(Debug, Clone)]
pub struct Record {
    pub organization_id: String,
    pub workspace_id: String,
    pub session_key: String,
    pub connection_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: String,
    /// The conversation the run is a turn of, if any.
    pub conversation_id: Option<String>,
    pub operation: Operation,
    pub target: String,
    pub ok: bool,
    pub detail: String,
    pub duration_ms: i64,
    pub created_at: i64,
    pub seq: i64,
}

/// Cuts a target to 512 characters (on a character boundary).
pub fn clip_target(target: &str) -> String {
    if target.chars().count() <= TARGET_MAX {
        target.to_string()
    } else {
        let mut s: String = target.chars().take(TARGET_MAX - 1).collect();
        s.push('…');
        s
    }
}

pub struct Recorder {
    db: Db,
    pending: Mutex<HashMap<String, Vec<Record>>>,
    seq: AtomicI64,
    /// One flush at a time, so a run's `finish` waits for a periodic flush holding its rows.
    flushing: tokio::sync::Mutex<()>,
}

impl Recorder {
    pub fn new(db: Db) -> Self {
        Recorder {
            db,
            pending: Mutex::new(HashMap::new()),
            seq: AtomicI64::new(crate::db::now_ms() * 1000),
            flushing: tokio::sync::Mutex::new(()),
        }
    }

    pub fn next_seq(&self) -> i64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Buffers a row (written by the next flush).
    pub async fn record(&self, record: Record) {
        let over = {
            let Ok(mut pending) = self.pending.lock() else { return };
            pending.entry(record.run_id.clone()).or_default().push(record);
            pending.values().map(Vec::len).sum::<usize>() > BUFFER_MAX
        };
        if over {
            self.flush_all().await;
        }
    }

    fn take(&self, run_id: Option<&str>) -> Vec<Record> {
        let Ok(mut pending) = self.pending.lock() else { return Vec::new() };
        match run_id {
            Some(r) => pending.remove(r).unwrap_or_default(),
            None => pending.drain().flat_map(|(_, v)| v).collect(),
        }
    }

    /// Commits a run's buffered rows in one transaction.
    pub async fn flush_run(&self, run_id: &str) {
        let _one_at_a_time = self.flushing.lock().await;
        let rows = self.take(Some(run_id));
        self.write(rows).await;
    }

    /// Commits everything buffered (the periodic flush, and shutdown).
    pub async fn flush_all(&self) {
        let _one_at_a_time = self.flushing.lock().await;
        let rows = self.take(None);
        self.write(rows).await;
    }

    async fn write(&self, rows: Vec<Record>) {
        if rows.is_empty() {
            return;
        }
        let n = rows.len();
        if let Err(e) = store::insert_batch(&self.db, &rows).await {
            tracing::error!(error = %e, rows = n, event = "operations_not_recorded", "failed to record workspace operations");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn targets_are_cut_to_512_characters() {
        let long = "é".repeat(600);
        let t = super::clip_target(&long);
        assert_eq!(t.chars().count(), 512);
        assert!(t.ends_with('…'));
        assert_eq!(super::clip_target("ls"), "ls");
    }
}
