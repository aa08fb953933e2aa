//! The operation log on SQLite: written behind the recorder (an inbox moved into the log, a
//! search queue moved into the FTS5 index; `sqlite_store.rs` has the SQL and docs/workspaces.md
//! "The log written behind the recorder on SQLite" the why), and settled before it is read.
//!
//! **One connection of its own**: the writer keeps one connection for its batches and moves
//! rather than taking whichever the pool hands out next. SQLite empties a connection's page cache
//! whenever another connection has written since it last read, so a batch written on the
//! connection that wrote the one before finds its pages still in its cache instead of reading them
//! back from the file (`pread` and the cache refill: 8–9 % of the console's CPU under load).
//!
//! **Settled before any read**: [`SqliteLog::settle`] moves the whole inbox into the log. It is
//! private to the log store: a reader of the log gets its connection only from
//! `LogStore::reader` (`mod.rs`), which settles first, so no reader can forget it. While this
//! console knows of no row in the inbox, settling costs one query that looks for another
//! console's rows (several on one SQLite file, as the replica tests run).
//!
//! **The change counter** of the rows runs are resolved from ([`SqliteLog::change_counter`]): a
//! number the file's triggers move with every change of runs, agents, conversations, workspaces,
//! connections and run starts (migration `20270107090000_resolve_epoch`), which lets the
//! workspaces' cache renew a resolved run with one statement instead of six. It is SQLite's own,
//! like the inbox: PostgreSQL has none, and the workspaces service does not ask which database
//! it runs on.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use super::model::Record;
use super::record_store::NotRecorded;
pub use super::sqlite_store::TICK;
use super::sqlite_store::{self, Settled, BACKLOG, CHUNK};
use crate::db::{Conn, Db, DbError};

/// How old a reading of the change counter may be and still be given again: one reading serves
/// every run renewed within it (`sandbox/workspaces/cache.rs`).
pub const COUNTER_REUSE: Duration = Duration::from_millis(100);

pub struct SqliteLog {
    db: Db,
    /// The writer's own connection, taken out of the pool when first needed and dropped after a
    /// write or move that failed (the next one opens another).
    connection: tokio::sync::Mutex<Option<Conn>>,
    /// Rows in the inbox as far as this console knows (changed only while `connection` is held).
    /// It starts at 1, "maybe": a console stopped before its inbox moved leaves rows there.
    inboxed: AtomicI64,
    /// The change counter as last read, and when.
    counter: Mutex<Option<(i64, Instant)>>,
}

/// How far [`SqliteLog::settle_steps`] goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Steps {
    /// One step: a chunk of the inbox and one of the search queue.
    One,
    /// Until the inbox is empty; the search queue left as it is.
    Inbox,
    /// Until the inbox and the search queue are empty.
    All,
}

impl SqliteLog {
    pub fn new(db: Db) -> SqliteLog {
        SqliteLog {
            db,
            connection: tokio::sync::Mutex::new(None),
            inboxed: AtomicI64::new(1),
            counter: Mutex::new(None),
        }
    }

    /// Writes a batch into the inbox on the writer's own connection.
    pub async fn write(&self, rows: &[Record]) -> Result<(), NotRecorded> {
        let none_written = |error| NotRecorded { missing: rows.len(), told: true, error };
        let mut connection = self.connection.lock().await;
        let c = match connection.as_mut() {
            Some(c) => c,
            None => connection.insert(self.own_connection().await.map_err(none_written)?),
        };
        let written = sqlite_store::insert_inbox(c, rows).await;
        match written {
            // Under the connection's lock, as every change of the count.
            Ok(()) => {
                self.inboxed.fetch_add(rows.len() as i64, Ordering::Release);
            }
            Err(_) => *connection = None,
        }
        written
    }

    /// Forgets the writer's connection (after a write that panicked), if it is not in use.
    pub fn forget_connection(&self) {
        if let Ok(mut connection) = self.connection.try_lock() {
            *connection = None;
        }
    }

    /// After a committed batch (its operations already answered): moves the inbox into the log
    /// and indexes what waits for the search index, once [`BACKLOG`] rows wait (otherwise the tick
    /// or the next read moves them, more rows a move); one chunk, so the next batch waits for one
    /// at most. A failure is logged; the rows stay for the next try.
    pub async fn after_batch(&self) {
        if self.inboxed.load(Ordering::Acquire) < BACKLOG {
            return;
        }
        match std::panic::AssertUnwindSafe(self.settle_steps(Steps::One)).catch_unwind().await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, event = "operations_not_moved", "failed to move the operation log's inbox")
            }
            Err(_) => {
                self.forget_connection();
                tracing::error!(event = "operations_not_moved", "moving the operation log's inbox panicked")
            }
        }
    }

    /// Moves the whole inbox into the log and every row queued for the search index into it (the
    /// serving console's tick, shutdown, and a bench after it filled the log). Returns how many
    /// rows were indexed.
    pub async fn index_search(&self) -> Result<u64, DbError> {
        self.settle_steps(Steps::All).await.map(|s| s.indexed)
    }

    /// Moves the whole inbox into the log, so that a read of `sandbox_operations` that follows
    /// sees every operation answered before it, by this console or another one on the same file.
    /// When this console knows of no row there, one query on a connection of the pool looks
    /// (another console's rows), and the writer's connection is not waited for. A move that fails
    /// is logged and the read goes on with what the log holds. Only `LogStore::reader` and
    /// `LogStore::settle` call it.
    pub(super) async fn settle(&self) {
        if self.inboxed.load(Ordering::Acquire) == 0 {
            let holds = async { sqlite_store::inbox_holds_rows(&mut *self.db.conn().await?).await };
            match holds.await {
                Ok(false) => return,
                Ok(true) => {}
                Err(e) => {
                    tracing::error!(error = %e, event = "operations_not_moved", "failed to look at the operation log's inbox before a read");
                    return;
                }
            }
        }
        if let Err(e) = self.settle_steps(Steps::Inbox).await {
            tracing::error!(error = %e, event = "operations_not_moved", "failed to move the operation log's inbox before a read");
        }
    }

    /// [`sqlite_store::settle_step`]s on the writer's own connection, [`CHUNK`] rows each time it
    /// holds it (a batch waits for one step at most).
    async fn settle_steps(&self, steps: Steps) -> Result<Settled, DbError> {
        let mut done = Settled::default();
        loop {
            let step = {
                let mut connection = self.connection.lock().await;
                let c = match connection.as_mut() {
                    Some(c) => c,
                    None => connection.insert(self.own_connection().await?),
                };
                let step = match sqlite_store::settle_step(c, CHUNK, steps != Steps::Inbox).await {
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
            let more = step.left.is_none() || (steps == Steps::All && step.indexed == CHUNK as u64);
            if steps == Steps::One || !more {
                return Ok(done);
            }
        }
    }

    /// A connection taken out of the pool for the writer ([`sqlite_store::prepare_own`]).
    async fn own_connection(&self) -> Result<Conn, DbError> {
        let mut c = self.db.conn().await?.detach();
        sqlite_store::prepare_own(&mut c).await?;
        Ok(c)
    }

    /// The change counter of the rows runs are resolved from, and when it was read (before the
    /// read began): a reading up to [`COUNTER_REUSE`] old, or a new one; `None` when it cannot be
    /// read (logged).
    pub async fn change_counter(&self) -> Option<(i64, Instant)> {
        let recent = self.counter.lock().ok().and_then(|r| *r);
        if let Some((n, at)) = recent.filter(|(_, at)| at.elapsed() < COUNTER_REUSE) {
            return Some((n, at));
        }
        let read_at = Instant::now();
        let n = async { sqlite_store::change_counter(&mut *self.db.conn().await?).await };
        match n.await {
            Ok(n) => {
                if let Ok(mut kept) = self.counter.lock() {
                    // A later reading is kept over an earlier one that finished after it.
                    if kept.is_none_or(|(_, at)| at <= read_at) {
                        *kept = Some((n, read_at));
                    }
                }
                Some((n, read_at))
            }
            Err(e) => {
                tracing::warn!(error = %e, "the change counter of resolved runs could not be read");
                None
            }
        }
    }
}
