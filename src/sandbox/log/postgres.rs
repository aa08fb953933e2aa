//! The operation log on PostgreSQL: each batch inserted directly into the log
//! (`postgres_store.rs`), on a connection of the pool; nothing waits behind the writer, so a read
//! has nothing to settle.

use super::model::Record;
use super::postgres_store;
use super::record_store::NotRecorded;
use crate::db::Db;

pub struct PostgresLog {
    db: Db,
}

impl PostgresLog {
    pub fn new(db: Db) -> PostgresLog {
        PostgresLog { db }
    }

    /// Writes a batch into the log, on one of the pool's connections.
    pub async fn write(&self, rows: &[Record]) -> Result<(), NotRecorded> {
        let mut c = self.db.conn().await.map_err(|error| NotRecorded { missing: rows.len(), told: true, error })?;
        postgres_store::insert_batch(&mut c, rows).await
    }
}
