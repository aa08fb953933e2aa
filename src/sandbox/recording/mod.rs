//! Recording (docs/design.md §8): every workspace operation that reached the host becomes a row of
//! `sandbox_operations` — never a payload, never an output. The rows come from the wrapper every
//! workspace backend is used through (`sandbox::workspaces::recorded`).
//!
//! **Durable before the answer** (a group commit): [`Recorder::record`] queues the row and waits
//! until the batch holding it is committed, so an operation answered to its client is in the log
//! even if the console is killed right after. One writer task at a time takes everything queued
//! and writes it as one multi-row statement; rows queued while it writes form the next batch, so
//! concurrent operations share a commit. The writer runs as its own task: a request that is
//! dropped halfway cannot cancel a batch.
//!
//! **Written through the log store** (`sandbox::log`): the writer hands each batch to
//! [`LogStore::write`], whose SQLite implementation commits it into an inbox moved into the log
//! behind it (and settled before any read) and whose PostgreSQL one inserts it into the log.
//!
//! **No row takes another down**: a row's references (workspace, run, conversation, agent,
//! connection) are resolved in the statement itself, so a row whose run or conversation was
//! deleted meanwhile is kept with that reference empty; a row of an organization that no longer
//! exists is skipped. A batch that still fails (a delete racing the statement on PostgreSQL) is
//! tried again, then row by row with every reference empty. A failure to record is logged and does
//! not fail the operation.
//!
//! **Tried again, written once**: each row's id is minted when it is queued, so every try of a
//! batch writes the same ids; before a try, the rows already in the log (or its inbox) are left
//! out, as a try whose commit landed but whose answer was lost (a connection cut at shutdown)
//! wrote them; the log ignores an id it holds. `operations_not_recorded` is logged only for rows
//! that are really missing, counted after the last try.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;

pub use crate::sandbox::log::model::{Operation, Record};
use crate::sandbox::log::LogStore;

pub const TARGET_MAX: usize = 512;
/// How long an operation waits for its row's commit before it answers anyway (the failure is
/// logged): a database that hangs must not hang every workspace call.
const COMMIT_WAIT: Duration = Duration::from_secs(30);

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
    inner: Arc<Inner>,
}

struct Inner {
    log: LogStore,
    queue: Mutex<Queue>,
    /// The number of the last batch committed (or given up on, which is logged).
    committed: watch::Sender<u64>,
    seq: AtomicI64,
    /// Whether `record` waits for the commit (see `AGENTICOS_RECORDING_DURABLE`).
    durable: bool,
}

#[derive(Default)]
struct Queue {
    rows: Vec<Record>,
    /// The number of the batch now filling: the rows queued now are written as this batch.
    batch: u64,
    /// Whether a writer task is running; only one at a time.
    writing: bool,
}

impl Recorder {
    pub fn new(log: LogStore, durable: bool) -> Self {
        let (committed, _) = watch::channel(0);
        Recorder {
            inner: Arc::new(Inner {
                log,
                queue: Mutex::new(Queue { batch: 1, ..Queue::default() }),
                committed,
                seq: AtomicI64::new(crate::db::now_ms() * 1000),
                durable,
            }),
        }
    }

    pub fn next_seq(&self) -> i64 {
        self.inner.seq.fetch_add(1, Ordering::Relaxed)
    }

    /// Queues a row and returns once it is committed.
    pub async fn record(&self, record: Record) {
        let (batch, start_writer) = {
            let Ok(mut queue) = self.inner.queue.lock() else { return };
            queue.rows.push(record);
            let start_writer = !queue.writing;
            queue.writing = true;
            (queue.batch, start_writer)
        };
        if start_writer {
            tokio::spawn(Inner::drain(self.inner.clone()));
        }
        if self.inner.durable {
            self.wait_for(batch).await;
        }
    }

    /// Rows queued but not yet committed (for health and metrics).
    pub fn queued(&self) -> usize {
        self.inner.queue.lock().map(|q| q.rows.len()).unwrap_or(0)
    }

    /// Waits until everything queued now is committed (shutdown, and the end of a run).
    pub async fn flush_all(&self) {
        let batch = {
            let Ok(queue) = self.inner.queue.lock() else { return };
            if queue.rows.is_empty() {
                queue.batch - 1
            } else {
                queue.batch
            }
        };
        self.wait_for(batch).await;
    }

    async fn wait_for(&self, batch: u64) {
        let mut committed = self.inner.committed.subscribe();
        let done = async {
            while *committed.borrow_and_update() < batch {
                if committed.changed().await.is_err() {
                    return;
                }
            }
        };
        if tokio::time::timeout(COMMIT_WAIT, done).await.is_err() {
            tracing::error!(
                event = "operations_commit_wait_exceeded",
                "an operation answered before its row was committed"
            );
        }
    }
}

impl Inner {
    /// The writer: takes every queued row as one batch, writes it, and goes on while rows are
    /// queued; the one that finds the queue empty ends (under the queue's lock, so a row queued
    /// after that starts a new writer).
    async fn drain(self: Arc<Self>) {
        loop {
            let (rows, batch) = {
                let Ok(mut queue) = self.queue.lock() else { return };
                if queue.rows.is_empty() {
                    queue.writing = false;
                    return;
                }
                let rows = std::mem::take(&mut queue.rows);
                let batch = queue.batch;
                queue.batch += 1;
                (rows, batch)
            };
            let n = rows.len();
            let written = std::panic::AssertUnwindSafe(self.write(&rows)).catch_unwind().await;
            let committed = matches!(written, Ok(Ok(())));
            match written {
                Ok(Ok(())) => count_recorded(&rows),
                Ok(Err(e)) => {
                    crate::instruments::recording_dropped(e.missing as u64);
                    tracing::error!(error = %e.error, rows = e.missing, of = n, told = e.told, event = "operations_not_recorded", "failed to record workspace operations")
                }
                Err(_) => {
                    self.log.forget_writer_connection();
                    crate::instruments::recording_dropped(n as u64);
                    tracing::error!(rows = n, event = "operations_not_recorded", "recording panicked")
                }
            }
            self.committed.send_replace(batch);
            if committed {
                self.log.after_batch().await;
            }
        }
    }

    /// Writes a batch through the log store.
    async fn write(&self, rows: &[Record]) -> Result<(), crate::sandbox::log::model::NotRecorded> {
        self.log.write(rows).await
    }
}

/// Counts a committed batch's rows by operation (metrics).
fn count_recorded(rows: &[Record]) {
    const ALL: [Operation; 6] =
        [Operation::Read, Operation::Write, Operation::Ls, Operation::Mkdir, Operation::Remove, Operation::Execute];
    for op in ALL {
        let n = rows.iter().filter(|r| r.operation == op).count() as u64;
        if n > 0 {
            crate::instruments::operations_recorded(op.as_str(), n);
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
