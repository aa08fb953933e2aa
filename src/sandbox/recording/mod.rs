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
//! **One connection of its own on SQLite**: the writer keeps one connection for its batches
//! rather than taking whichever the pool hands out next. SQLite empties a connection's page cache
//! whenever another connection has written since it last read, so a batch written on the
//! connection that wrote the one before finds its pages still in its cache instead of reading them
//! back from the file (`pread` and the cache refill: 8–9 % of the console's CPU under load).
//!
//! **The log written behind the recorder on SQLite**: a batch is committed into the bare
//! `sandbox_operations_inbox` (durable, but no index, trigger or reference to check), and its rows
//! are moved into `sandbox_operations` in bulk, together with the search index
//! (`search_queue.rs`): every [`search_queue::TICK`] while serving, after a batch once
//! [`search_queue::BACKLOG`] rows wait (a burst faster than the tick), at
//! shutdown, and before anything reads the log: every reader of `sandbox_operations` calls
//! [`Recorder::settle`] first, so an operation answered before a read is in what the read sees.
//! While the recorder knows of no row in the inbox, [`Recorder::settle`] costs one query that
//! looks for another console's rows (several on one SQLite file, as the replica tests run).
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

pub mod search_queue;
pub mod store;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::watch;

use crate::db::{Conn, Db, DbError, DbKind};

pub const TARGET_MAX: usize = 512;
/// How long an operation waits for its row's commit before it answers anyway (the failure is
/// logged): a database that hangs must not hang every workspace call.
const COMMIT_WAIT: Duration = Duration::from_secs(30);

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
    /// The row's id, minted once when the row is queued ([`crate::db::new_time_ordered_id`]): a
    /// batch tried again writes the same ids, so a try whose commit landed but whose answer was
    /// lost is recognised, never written twice.
    pub id: String,
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
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    queue: Mutex<Queue>,
    /// The number of the last batch committed (or given up on, which is logged).
    committed: watch::Sender<u64>,
    seq: AtomicI64,
    /// Whether `record` waits for the commit (see `AGENTICOS_RECORDING_DURABLE`).
    durable: bool,
    /// SQLite: the writer's own connection, taken out of the pool when first needed and dropped
    /// after a batch that failed (the next one opens another).
    connection: tokio::sync::Mutex<Option<Conn>>,
    /// SQLite: rows in the inbox as far as the recorder knows (changed only while `connection` is
    /// held). It starts at 1, "maybe": a console stopped before its inbox moved leaves rows there.
    inboxed: AtomicI64,
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
    pub fn new(db: Db, durable: bool) -> Self {
        let (committed, _) = watch::channel(0);
        Recorder {
            inner: Arc::new(Inner {
                db,
                queue: Mutex::new(Queue { batch: 1, ..Queue::default() }),
                committed,
                seq: AtomicI64::new(crate::db::now_ms() * 1000),
                durable,
                connection: tokio::sync::Mutex::new(None),
                inboxed: AtomicI64::new(1),
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

    /// SQLite: moves the whole inbox into the log and every row queued for the search index into
    /// it (the serving console's tick, shutdown, and a bench after it filled the log); nothing on
    /// PostgreSQL. Returns how many rows were indexed.
    pub async fn index_search(&self) -> Result<u64, DbError> {
        self.inner.settle_steps(Steps::All).await.map(|s| s.indexed)
    }

    /// SQLite: moves the whole inbox into the log, so that a read of `sandbox_operations` that
    /// follows sees every operation answered before it, by this console or another one on the same
    /// file. Every reader of the log calls it first. When this recorder knows of no row there, one
    /// query on a connection of the pool looks (another console's rows), and the writer's
    /// connection is not waited for; nothing on PostgreSQL. A move that fails is logged and the
    /// read goes on with what the log holds.
    pub async fn settle(&self) {
        if self.inner.db.kind() != DbKind::Sqlite {
            return;
        }
        if self.inner.inboxed.load(Ordering::Acquire) == 0 {
            let holds = async { store::inbox_holds_rows(&mut *self.inner.db.conn().await?).await };
            match holds.await {
                Ok(false) => return,
                Ok(true) => {}
                Err(e) => {
                    tracing::error!(error = %e, event = "operations_not_moved", "failed to look at the operation log's inbox before a read");
                    return;
                }
            }
        }
        if let Err(e) = self.inner.settle_steps(Steps::Inbox).await {
            tracing::error!(error = %e, event = "operations_not_moved", "failed to move the operation log's inbox before a read");
        }
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
                    if let Ok(mut connection) = self.connection.try_lock() {
                        *connection = None;
                    }
                    crate::instruments::recording_dropped(n as u64);
                    tracing::error!(rows = n, event = "operations_not_recorded", "recording panicked")
                }
            }
            self.committed.send_replace(batch);
            if committed {
                self.settle_after_batch().await;
            }
        }
    }

    /// SQLite, after a committed batch (its operations already answered): moves the inbox into the
    /// log and indexes what waits for the search index, once [`search_queue::BACKLOG`] rows wait
    /// (otherwise the tick or the next read moves them, more rows a move); one chunk, so
    /// the next batch waits for one at most. A failure is logged; the rows stay for the next try.
    async fn settle_after_batch(&self) {
        if self.db.kind() != DbKind::Sqlite {
            return;
        }
        if self.inboxed.load(Ordering::Acquire) < search_queue::BACKLOG {
            return;
        }
        match std::panic::AssertUnwindSafe(self.settle_steps(Steps::One)).catch_unwind().await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, event = "operations_not_moved", "failed to move the operation log's inbox")
            }
            Err(_) => {
                if let Ok(mut connection) = self.connection.try_lock() {
                    *connection = None;
                }
                tracing::error!(event = "operations_not_moved", "moving the operation log's inbox panicked")
            }
        }
    }

    /// SQLite: [`store::settle_step`]s on the writer's own connection, [`search_queue::CHUNK`]
    /// rows each time it holds it (a batch waits for one step at most). Nothing on PostgreSQL.
    async fn settle_steps(&self, steps: Steps) -> Result<store::Settled, DbError> {
        let mut done = store::Settled::default();
        if self.db.kind() != DbKind::Sqlite {
            return Ok(done);
        }
        loop {
            let step = {
                let mut connection = self.connection.lock().await;
                let c = match connection.as_mut() {
                    Some(c) => c,
                    None => connection.insert(self.own_connection().await?),
                };
                let step = match store::settle_step(c, search_queue::CHUNK, steps != Steps::Inbox).await {
                    Ok(step) => step,
                    Err(e) => {
                        *connection = None;
                        return Err(e);
                    }
                };
                // Under the connection's lock, which every write to the inbox holds too.
                match step.left {
                    Some(left) => self.inboxed.store(left as i64, Ordering::Release),
                    None => {
                        let known = self.inboxed.load(Ordering::Acquire);
                        self.inboxed.store((known - step.moved as i64).max(1), Ordering::Release)
                    }
                }
                step
            };
            done.moved += step.moved;
            done.indexed += step.indexed;
            done.left = step.left;
            let more = step.left.is_none() || (steps == Steps::All && step.indexed == search_queue::CHUNK as u64);
            if steps == Steps::One || !more {
                return Ok(done);
            }
        }
    }

    /// SQLite: a connection taken out of the pool for the writer ([`store::prepare_own`]).
    async fn own_connection(&self) -> Result<Conn, DbError> {
        let mut c = self.db.conn().await?.detach();
        store::prepare_own(&mut c).await?;
        Ok(c)
    }

    /// Writes a batch: on SQLite on the writer's own connection, on PostgreSQL on one of the pool's.
    async fn write(&self, rows: &[Record]) -> Result<(), store::NotRecorded> {
        let kind = self.db.kind();
        let none_written = |error| store::NotRecorded { missing: rows.len(), told: true, error };
        if kind == DbKind::Postgres {
            let mut c = self.db.conn().await.map_err(none_written)?;
            return store::insert_batch(&mut c, kind, rows).await;
        }
        let mut connection = self.connection.lock().await;
        let c = match connection.as_mut() {
            Some(c) => c,
            None => connection.insert(self.own_connection().await.map_err(none_written)?),
        };
        let written = store::insert_batch(c, kind, rows).await;
        match written {
            // Under the connection's lock, as every change of the count.
            Ok(()) => {
                self.inboxed.fetch_add(rows.len() as i64, Ordering::Release);
            }
            Err(_) => *connection = None,
        }
        written
    }
}

/// How far [`Inner::settle_steps`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Steps {
    /// One step: a chunk of the inbox and one of the search queue.
    One,
    /// Until the inbox is empty; the search queue left as it is.
    Inbox,
    /// Until the inbox and the search queue are empty.
    All,
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
