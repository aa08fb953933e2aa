//! SQLite: the operation log's search index written behind the recorder (migration
//! `20270105090000_operation_log_search_queue`). A row's insert queues its rowid; the rows queued
//! are moved into the FTS5 index in bulk, which costs a row a fraction of what indexing it alone
//! at its commit did. A search reads the queued rows as well as the index's matches
//! (`sandbox::operations::store`), so when the indexing runs changes only what a row costs.
//!
//! When: together with the move of the recorder's inbox into the log (`recording/mod.rs`), every
//! [`TICK`] while serving (and before any read of the log), and after a recorder batch only once
//! [`BACKLOG`] rows wait in the inbox (a burst faster than the tick). A move's cost is mostly the
//! B-tree pages it dirties, one a filter index's key (a workspace, run, session, conversation) per
//! commit whatever the rows, so moving a second's rows at once costs a row about 40 % less than
//! moving 100 at a time did (`benches/sql/moved_row_cost.sh`, docs/benchmarks.md).

use std::time::Duration;

use super::store::index_queued;
use crate::db::{Conn, DbError};

/// Rows in the inbox that are moved (and indexed) after a batch, before the tick would.
pub const BACKLOG: i64 = 1000;
/// The most rows moved into the log, and into the search index, in one transaction, so a batch
/// (and the operations waiting for it) waits for one chunk at most.
pub const CHUNK: i64 = 1000;
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
