//! The operation log's store (docs/design.md §8): one interface, [`LogStore`], over one
//! implementation per database — `sqlite.rs` (an inbox moved into the log behind the recorder, a
//! search queue moved into the FTS5 index, both settled before a read) and `postgres.rs` (each
//! batch inserted directly). The SQL is in `sqlite_store.rs`, `postgres_store.rs` and, for what
//! both share, `store.rs` (reading) and `record_store.rs` (writing). Nothing else names the log's
//! tables (`tests/api/architecture.rs` checks it).
//!
//! **No reader can skip settling**: the log is read only through a [`Reader`], and the only way to
//! get one is [`LogStore::reader`], which on SQLite first moves the inbox into the log (so an
//! operation answered before the read is in what the read sees, through any console on the file).
//! The recorder (`sandbox::recording`) writes through [`LogStore::write`]; the pages, the export,
//! Health's failures count and the snapshot rule "when changed" read through a [`Reader`].

pub mod model;
pub mod partition_store;
pub mod partitions;
pub mod postgres;
pub mod postgres_store;
pub mod record_store;
pub mod sqlite;
pub mod sqlite_store;
pub mod store;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;

use self::model::Record;
use self::model::{Narrowing, NotRecorded};
use self::postgres::PostgresLog;
use self::sqlite::SqliteLog;
use self::store::Arg;
use crate::db::{Conn, Db, DbError, DbKind, DbResult};
use crate::sandbox::operations::cursor::Cursor;
use crate::sandbox::operations::filter::Filter;
use crate::sandbox::operations::model::OperationItem;
use crate::sandbox::operations::timeline::Counted;

/// The operation log of one database (cheap to clone: one shared store).
#[derive(Clone)]
pub struct LogStore {
    which: Arc<Which>,
    db: Db,
    /// The rows an export's range of time is sized for, and how many ranges are read at once
    /// (`operations/segments.rs`).
    export_range_rows: Arc<AtomicU32>,
    export_ranges_at_once: Arc<AtomicU32>,
}

enum Which {
    Sqlite(SqliteLog),
    Postgres(PostgresLog),
}

impl LogStore {
    pub fn new(db: Db) -> LogStore {
        let which = match db.kind() {
            DbKind::Sqlite => Which::Sqlite(SqliteLog::new(db.clone())),
            DbKind::Postgres => Which::Postgres(PostgresLog::new(db.clone())),
        };
        let export_range_rows = Arc::new(AtomicU32::new(crate::sandbox::operations::batches::MAX_BATCH));
        let export_ranges_at_once = Arc::new(AtomicU32::new(crate::sandbox::operations::segments::IN_FLIGHT));
        LogStore { which: Arc::new(which), db, export_range_rows, export_ranges_at_once }
    }

    pub fn kind(&self) -> DbKind {
        self.db.kind()
    }

    /// Writes a batch of rows (the recorder's writer, one batch at a time): committed when this
    /// returns `Ok`. Rows already written by an earlier try are written once.
    pub async fn write(&self, rows: &[Record]) -> Result<(), NotRecorded> {
        match &*self.which {
            Which::Sqlite(log) => log.write(rows).await,
            Which::Postgres(log) => log.write(rows).await,
        }
    }

    /// After a committed batch: on SQLite, a move of the inbox once enough rows wait.
    pub async fn after_batch(&self) {
        if let Which::Sqlite(log) = &*self.which {
            log.after_batch().await;
        }
    }

    /// After a write that panicked: SQLite's writer connection is dropped (the next write opens
    /// another).
    pub fn forget_writer_connection(&self) {
        if let Which::Sqlite(log) = &*self.which {
            log.forget_connection();
        }
    }

    /// How often a serving console works behind the writer ([`LogStore::index_search`]): every
    /// second on SQLite; never on PostgreSQL.
    pub fn tick(&self) -> Option<Duration> {
        match &*self.which {
            Which::Sqlite(_) => Some(sqlite::TICK),
            Which::Postgres(_) => None,
        }
    }

    /// On SQLite, moves the whole inbox into the log and every row queued for the search index
    /// into it (the tick, shutdown, a bench after filling the log); returns how many rows were
    /// indexed. Nothing on PostgreSQL.
    pub async fn index_search(&self) -> Result<u64, DbError> {
        match &*self.which {
            Which::Sqlite(log) => log.index_search().await,
            Which::Postgres(_) => Ok(0),
        }
    }

    /// A reader of the log: on SQLite, once the inbox is moved into the log, so that it sees
    /// every operation answered before it was asked for.
    pub async fn reader(&self) -> DbResult<Reader> {
        self.settle().await;
        Ok(Reader { c: self.db.conn().await?, kind: self.kind() })
    }

    /// What [`LogStore::reader`] does first, alone: for tests and tools that read the log's tables
    /// with their own SQL.
    pub async fn settle(&self) {
        if let Which::Sqlite(log) = &*self.which {
            log.settle().await;
        }
    }

    /// The change counter of the rows runs are resolved from, and when it was read: SQLite's
    /// (`sqlite.rs`; a reading up to 100 ms old is given again), none on PostgreSQL, nor when it
    /// cannot be read (logged). While it says what it said, nothing a run is resolved from has
    /// changed, on this console or another on the same file (`sandbox/workspaces/cache.rs`).
    pub async fn change_counter(&self) -> Option<(i64, Instant)> {
        match &*self.which {
            Which::Sqlite(log) => log.change_counter().await,
            Which::Postgres(_) => None,
        }
    }

    /// Retention: deletes at most `batch` rows created before `cutoff_ms` in one short statement
    /// (on PostgreSQL the rows locked `FOR UPDATE SKIP LOCKED`, so replicas share the work);
    /// returns how many it deleted. On PostgreSQL a whole partition that ends by the cut-off is
    /// dropped instead, all its rows at once (`partition_store::drop_oldest_before`); the rows of the
    /// partition the cut-off falls in, and of the default one, are deleted by batch. Rows still in
    /// SQLite's inbox are new, so none of them is due.
    pub async fn delete_batch_before(&self, cutoff_ms: i64, batch: i64) -> DbResult<u64> {
        let mut c = self.db.conn().await?;
        match self.kind() {
            DbKind::Sqlite => sqlite_store::delete_batch_before(&mut c, cutoff_ms, batch).await,
            DbKind::Postgres => loop {
                // An empty partition dropped counts no row: the next is tried at once.
                match partition_store::drop_oldest_before(&mut c, cutoff_ms).await? {
                    Some(0) => continue,
                    Some(dropped) => return Ok(dropped),
                    None => return postgres_store::delete_batch_before(&mut c, cutoff_ms, batch).await,
                }
            },
        }
    }

    /// Sizes the PostgreSQL log's partitions made from now on for `rows` rows
    /// (`partitions::TARGET_ROWS`): tests cross many partitions with a few rows. Nothing on SQLite.
    pub fn set_partition_rows(&self, rows: i64) {
        if let Which::Postgres(log) = &*self.which {
            log.set_partition_rows(rows);
        }
    }

    /// The rows an export's range of time is sized for (`operations/segments.rs`): one batch of
    /// the largest size.
    pub fn export_range_rows(&self) -> u32 {
        self.export_range_rows.load(Ordering::Relaxed)
    }

    /// Sizes an export's ranges for `rows` rows: tests cross many ranges with a few rows.
    pub fn set_export_range_rows(&self, rows: u32) {
        self.export_range_rows.store(rows.max(1), Ordering::Relaxed);
    }

    /// How many of an export's ranges are read at once (`segments::IN_FLIGHT`).
    pub fn export_ranges_at_once(&self) -> usize {
        self.export_ranges_at_once.load(Ordering::Relaxed) as usize
    }

    /// Reads `n` of an export's ranges at once (at least 1): the log bench compares 1 with 2.
    pub fn set_export_ranges_at_once(&self, n: u32) {
        self.export_ranges_at_once.store(n.max(1), Ordering::Relaxed);
    }

    /// Whether a search with `f` is read from the search index in time order whatever the term
    /// (SQLite, without a filter of the planner's list), so that its narrowing is decided apart
    /// from the same term's with such a filter (`operations/cache.rs`).
    pub fn reads_index_in_time_order(&self, f: &Filter) -> bool {
        self.kind() == DbKind::Sqlite && sqlite_store::reads_index_in_time_order(f)
    }

    /// Whether an export batch with `f` walks the organization's time index whatever the
    /// statistics say: on PostgreSQL, without an equality filter or a search narrowed to rare
    /// trigrams (`postgres_store::export_walks`).
    pub fn export_walks(&self, f: &Filter, narrowing: Option<&Narrowing>) -> bool {
        self.kind() == DbKind::Postgres && postgres_store::export_walks(f, narrowing)
    }

    /// The SQL of a page as [`Reader::page`] runs it (the plan tests).
    pub fn page_sql(
        &self,
        org_id: &str,
        f: &Filter,
        cursor: Option<&Cursor>,
        fetch: u32,
        narrowing: Option<&Narrowing>,
    ) -> (String, Vec<Arg>) {
        match self.kind() {
            DbKind::Sqlite => sqlite_store::page_sql(org_id, f, cursor, fetch, narrowing),
            DbKind::Postgres => postgres_store::page_sql(org_id, f, cursor, fetch, narrowing),
        }
    }
}

/// A connection that reads the operation log, made only by [`LogStore::reader`] once the log is
/// settled.
pub struct Reader {
    c: PoolConnection<sqlx::Any>,
    kind: DbKind,
}

impl Reader {
    /// Up to `fetch` rows from `cursor` (or the newest), in the order read (newest first, a
    /// `Before` page oldest first), with how many matching rows arrived above a ranked cursor's
    /// top row (at most 10,001; 0 when the cursor has no rank or the page is empty). `narrowing`
    /// is the filter's [`Reader::search_narrowing`].
    pub async fn page(
        &mut self,
        org_id: &str,
        f: &Filter,
        narrowing: Option<&Narrowing>,
        cursor: Option<&Cursor>,
        fetch: u32,
    ) -> DbResult<(Vec<OperationItem>, u64)> {
        match self.kind {
            DbKind::Sqlite => sqlite_store::page(&mut self.c, org_id, f, narrowing, cursor, fetch).await,
            DbKind::Postgres => postgres_store::page(&mut self.c, org_id, f, narrowing, cursor, fetch).await,
        }
    }

    /// A batch of the export: up to `fetch` rows after `after` (or the newest), newest first, as
    /// [`Reader::page`] reads them; on PostgreSQL walked along the organization's time index
    /// whatever the statistics say, unless the filter names something rare
    /// ([`LogStore::export_walks`]).
    pub async fn export_batch(
        &mut self,
        org_id: &str,
        f: &Filter,
        narrowing: Option<&Narrowing>,
        after: Option<&Cursor>,
        fetch: u32,
    ) -> DbResult<Vec<OperationItem>> {
        match self.kind {
            DbKind::Sqlite => sqlite_store::export_batch(&mut self.c, org_id, f, narrowing, after, fetch).await,
            DbKind::Postgres => postgres_store::export_batch(&mut self.c, org_id, f, narrowing, after, fetch).await,
        }
    }

    /// The plan of an export batch's statement as [`Reader::export_batch`] runs it, as text.
    pub async fn explain_export_batch(
        &mut self,
        sql: &str,
        args: &[Arg],
        f: &Filter,
        narrowing: Option<&Narrowing>,
    ) -> DbResult<String> {
        let walk = postgres_store::export_walks(f, narrowing);
        self.explain(sql, args, walk).await
    }

    /// What a search (`q`) asks its trigram index, found once per request (and cached a minute,
    /// `operations/cache.rs`): a few of the term's rarest trigrams, the term walked to when it is
    /// common, or `None` for the whole term.
    pub async fn search_narrowing(&mut self, org_id: &str, f: &Filter) -> DbResult<Option<Narrowing>> {
        self.search_narrowing_for(org_id, f, model::DEFAULT_PAGE).await
    }

    /// [`Reader::search_narrowing`] for a read of `page` rows (a page's limit and one more, an
    /// export's batch): the larger the read, the more common a term must be to be walked to.
    pub async fn search_narrowing_for(&mut self, org_id: &str, f: &Filter, page: u32) -> DbResult<Option<Narrowing>> {
        match self.kind {
            DbKind::Sqlite => sqlite_store::search_narrowing(&mut self.c, org_id, f, page).await,
            DbKind::Postgres => postgres_store::search_narrowing(&mut self.c, org_id, f, page).await,
        }
    }

    /// The timeline of the filters (`operations/timeline.rs`): the newest `fetch` matching rows,
    /// read as a page reads them, counted by bar of `width` ms from `start`, in one statement.
    pub async fn timeline(
        &mut self,
        org_id: &str,
        f: &Filter,
        narrowing: Option<&Narrowing>,
        bars: (i64, i64),
        fetch: u32,
    ) -> DbResult<Vec<Counted>> {
        match self.kind {
            DbKind::Sqlite => sqlite_store::timeline(&mut self.c, org_id, f, narrowing, bars, fetch).await,
            DbKind::Postgres => postgres_store::timeline(&mut self.c, org_id, f, narrowing, bars, fetch).await,
        }
    }

    /// The time of the organization's oldest row, if it has any (one index probe; on PostgreSQL
    /// one a window of partitions, oldest first, until one holds a row).
    pub async fn oldest(&mut self, org_id: &str) -> DbResult<Option<i64>> {
        let bounds = match self.kind {
            DbKind::Sqlite => Vec::new(),
            DbKind::Postgres => partition_store::bounds(&mut self.c).await?,
        };
        store::oldest(&mut self.c, dialect(self.kind), org_id, &bounds).await
    }

    /// Whether the organization's log holds `op` (one index probe).
    pub async fn has_operation(&mut self, org_id: &str, op: &str) -> DbResult<bool> {
        let d = dialect(self.kind);
        store::has_operation(&mut self.c, d, org_id, op).await
    }

    /// How many of the organization's recorded operations failed at or after `since` (epoch ms).
    pub async fn failed_since(&mut self, org_id: &str, since: i64) -> DbResult<i64> {
        store::failed_since(&mut self.c, dialect(self.kind), org_id, since).await
    }

    /// Whether the workspace had a write, mkdir, remove or command recorded at or after `since`.
    pub async fn changed_since(&mut self, org_id: &str, workspace_id: &str, since: i64) -> DbResult<bool> {
        store::changed_since(&mut self.c, dialect(self.kind), org_id, workspace_id, since).await
    }

    /// The plan of a page's statement as [`Reader::page`] runs it, as text (`EXPLAIN QUERY
    /// PLAN` on SQLite; `EXPLAIN` on PostgreSQL, in the walk's transaction when the page walks).
    pub async fn explain_page(
        &mut self,
        sql: &str,
        args: &[Arg],
        f: &Filter,
        narrowing: Option<&Narrowing>,
    ) -> DbResult<String> {
        let walk = postgres_store::walks(f, narrowing);
        self.explain(sql, args, walk).await
    }

    /// A statement's plan as text (`EXPLAIN QUERY PLAN` on SQLite; `EXPLAIN` on PostgreSQL, in a
    /// transaction that walks the organization's rows when `walk`).
    async fn explain(&mut self, sql: &str, args: &[Arg], walk: bool) -> DbResult<String> {
        match self.kind {
            DbKind::Sqlite => sqlite_store::explain(&mut self.c, sql, args).await,
            DbKind::Postgres => postgres_store::explain_walking(&mut self.c, sql, args, walk).await,
        }
    }
}

/// How `kind` spells the statements both databases share.
fn dialect(kind: DbKind) -> &'static store::Dialect {
    match kind {
        DbKind::Sqlite => &sqlite_store::DIALECT,
        DbKind::Postgres => &postgres_store::DIALECT,
    }
}

/// The reader's connection, settled: the plan tests set planner options and load rows on it.
impl std::ops::Deref for Reader {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.c
    }
}

impl std::ops::DerefMut for Reader {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.c
    }
}
