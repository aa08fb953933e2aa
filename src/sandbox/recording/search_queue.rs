//! SQLite: the operation log's search index written behind the recorder (migration
//! `20270105090000_operation_log_search_queue`). A row's insert queues its rowid; the rows queued
//! are moved into the FTS5 index in bulk, which costs a row a fraction of what indexing it alone
//! at its commit did. A search reads the queued rows as well as the index's matches
//! (`sandbox::operations::store`), so when the indexing runs changes only what a row costs.
//!
//! When: together with the move of the recorder's inbox into the log (`recording/mod.rs`), after a
//! recorder batch once [`BULK`] rows wait in the inbox and no other batch does (a burst is not
//! slowed by moving and indexing between its batches), after any batch once [`BACKLOG`] wait, and
//! every [`TICK`] while serving (rows of a quiet log, and rows written by anything but the recorder).

use std::time::Duration;

use super::store::index_queued;
use crate::db::{Conn, DbError};

/// Rows in the inbox that are moved (and indexed) after a batch when no other batch waits.
pub const BULK: i64 = 100;
/// Rows in the inbox that are moved (and indexed) after a batch even while others wait.
pub const BACKLOG: i64 = 500;
/// The most rows moved into the log, and into the search index, in one transaction, so a batch
/// (and the operations waiting for it) waits for one chunk at most: 100 rows a bulk already cost
/// about what 500 do
/// (`benches/sql/recorded_row_cost.sh`'s by-hand variant, docs/benchmarks.md).
pub const CHUNK: i64 = 500;
/// How often a serving console moves its inbox and indexes what is queued.
pub const TICK: Duration = Duration::from_secs(1);

/// Moves every queued row into the search index, [`CHUNK`] rows a transaction. Returns how many.
pub async fn index_all(c: &mut Conn) -> Result<u64, DbError> {
    let mut moved = 0;
    loop {
        let n = index_queued(c, CHUNK).await?;
        moved += n;
        if n < CHUNK as u64 {
            return Ok(moved);
        }
    }
}
