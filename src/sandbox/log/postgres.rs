//! The operation log on PostgreSQL: each batch inserted directly into the log
//! (`postgres_store.rs`), on a connection of the pool; nothing waits behind the writer, so a read
//! has nothing to settle. The log is partitioned by day: before a batch of a day this console has
//! not written yet, it makes sure that day's partition and the next are there.

use std::collections::BTreeSet;
use std::sync::Mutex;

use super::model::Record;
use super::postgres_store::{self, DAY_MS};
use super::record_store::NotRecorded;
use crate::db::Db;

pub struct PostgresLog {
    db: Db,
    /// The days whose partition this console made sure of.
    days: Mutex<BTreeSet<i64>>,
}

impl PostgresLog {
    pub fn new(db: Db) -> PostgresLog {
        PostgresLog { db, days: Mutex::new(BTreeSet::new()) }
    }

    /// Writes a batch into the log, on one of the pool's connections.
    pub async fn write(&self, rows: &[Record]) -> Result<(), NotRecorded> {
        let mut c = self.db.conn().await.map_err(|error| NotRecorded { missing: rows.len(), told: true, error })?;
        let new: Vec<i64> = {
            let known = self.days.lock().unwrap_or_else(|e| e.into_inner());
            let days: BTreeSet<i64> = rows.iter().map(|r| r.created_at.div_euclid(DAY_MS)).collect();
            days.into_iter().filter(|d| !known.contains(d)).collect()
        };
        if !new.is_empty() {
            // A day whose partition cannot be made now is written into the default partition.
            match postgres_store::ensure_days(&mut c, &new).await {
                Ok(made) => self.days.lock().unwrap_or_else(|e| e.into_inner()).extend(made),
                Err(error) => {
                    tracing::warn!(error = %error, event = "operations_day_partition", "the day's partition was not made")
                }
            }
        }
        postgres_store::insert_batch(&mut c, rows).await
    }
}
