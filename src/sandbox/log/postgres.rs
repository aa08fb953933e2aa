//! The operation log on PostgreSQL: each batch inserted directly into the log
//! (`postgres_store.rs`), on a connection of the pool; nothing waits behind the writer, so a read
//! has nothing to settle. The log is partitioned by rows (`partitions.rs`): a batch that reaches
//! past the newest partition's end first makes the next one.

use std::sync::atomic::{AtomicI64, Ordering};

use super::model::Record;
use super::partition_store;
use super::partitions::{AHEAD_MS, TARGET_ROWS};
use super::postgres_store;
use super::record_store::NotRecorded;
use crate::db::Db;

pub struct PostgresLog {
    db: Db,
    /// The newest partition's end as this console last saw it: a batch below it makes none.
    covered: AtomicI64,
    /// The rows a partition is sized to hold ([`TARGET_ROWS`]; fewer in tests).
    partition_rows: AtomicI64,
}

impl PostgresLog {
    pub fn new(db: Db) -> PostgresLog {
        PostgresLog { db, covered: AtomicI64::new(i64::MIN), partition_rows: AtomicI64::new(TARGET_ROWS) }
    }

    /// Sizes the partitions made from now on for `rows` rows (tests cross many with a few rows).
    pub fn set_partition_rows(&self, rows: i64) {
        self.partition_rows.store(rows.max(1), Ordering::Relaxed);
    }

    /// Writes a batch into the log, on one of the pool's connections.
    pub async fn write(&self, rows: &[Record]) -> Result<(), NotRecorded> {
        let mut c = self.db.conn().await.map_err(|error| NotRecorded { missing: rows.len(), told: true, error })?;
        // Rows of a clock far ahead make no partition (they wait in the default one).
        let ahead = crate::db::now_ms() + AHEAD_MS;
        let times = rows.iter().map(|r| r.created_at).filter(|&t| t <= ahead);
        let (oldest, newest) = times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
        if newest != i64::MIN && newest >= self.covered.load(Ordering::Relaxed) {
            let target = self.partition_rows.load(Ordering::Relaxed);
            // A partition that cannot be made now leaves the rows to the default partition, where
            // every read still finds them; the next batch tries again.
            match partition_store::extend(&mut c, oldest, newest, target).await {
                Ok(end) => {
                    self.covered.fetch_max(end, Ordering::Relaxed);
                }
                Err(error) => {
                    tracing::warn!(error = %error, event = "operations_partition", "the log's next partition was not made")
                }
            }
        }
        postgres_store::insert_batch(&mut c, rows).await
    }
}
