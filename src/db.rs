//! The database handle: SQLite (embedded default) or PostgreSQL behind sqlx's `Any` driver.
//!
//! Portable rules the stores follow: ids are UUIDv4 text, times are UTC epoch milliseconds
//! (BIGINT), booleans are BIGINT 0/1, binds are `$1`. Where dialects differ a store branches on
//! [`Db::kind`].

use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyArguments, AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyConnection, AnyPool, ConnectOptions, Executor};

pub type Tx = sqlx::Transaction<'static, sqlx::Any>;
pub type Conn = AnyConnection;
pub type Query<'q> = sqlx::query::Query<'q, sqlx::Any, AnyArguments<'q>>;
pub type QueryAs<'q, T> = sqlx::query::QueryAs<'q, sqlx::Any, T, AnyArguments<'q>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Sqlite,
    Postgres,
}

#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    kind: DbKind,
}

/// The store-level error: missing rows and unique violations are translated here, once.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("not found")]
    NotFound,
    #[error("conflict on {constraint}")]
    Conflict { constraint: String },
    /// Anything else; the driver's error is its source, so a chain walked from a capability's
    /// error still finds it ([`unavailable_in`]).
    #[error("{0}")]
    Other(#[source] sqlx::Error),
}

impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::RowNotFound => DbError::NotFound,
            sqlx::Error::Database(ref d) if d.is_unique_violation() => DbError::Conflict {
                constraint: d.constraint().map(str::to_string).unwrap_or_else(|| d.message().to_string()),
            },
            other => DbError::Other(other),
        }
    }
}

impl DbError {
    pub fn is_conflict(&self) -> bool {
        matches!(self, DbError::Conflict { .. })
    }

    /// How a capability's error takes a store's: a missing row is `not_found`, anything else
    /// `internal` (its cause kept for the log).
    pub fn not_found_or<E>(self, not_found: E, internal: impl FnOnce(anyhow::Error) -> E) -> E {
        match self {
            DbError::NotFound => not_found,
            other => internal(other.into()),
        }
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// Whether the driver's error says the database did not answer, rather than refused a statement:
/// a connection that could not be made or was cut, a pool that timed out or closed, PostgreSQL
/// shutting down, not accepting connections or out of them (SQLSTATE classes 08 and 57P, 53300),
/// SQLite busy, locked, failing to read or unable to open its file. The web layer answers these
/// with 503 and `Retry-After` instead of 500 (`web::error`).
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|code| unavailable_code(&code)),
        _ => false,
    }
}

/// PostgreSQL's SQLSTATEs and SQLite's (extended) result codes that mean "not answering".
fn unavailable_code(code: &str) -> bool {
    if let Ok(n) = code.parse::<i64>() {
        // SQLite: the primary code is the low byte of an extended one.
        return matches!(n & 0xff, 5 /* BUSY */ | 6 /* LOCKED */ | 10 /* IOERR */ | 14 /* CANTOPEN */);
    }
    code.starts_with("08") || code.starts_with("57P") || code == "53300"
}

/// Whether any error in `e`'s chain is a database that did not answer ([`is_unavailable`]).
pub fn unavailable_in(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.downcast_ref::<sqlx::Error>().is_some_and(is_unavailable)
            || matches!(cause.downcast_ref::<DbError>(), Some(DbError::Other(inner)) if is_unavailable(inner))
    })
}

/// One row of an organization, by id: `q` binds the organization and the row id last
/// (`… WHERE organization_id = $n AND id = $n+1`), so another organization's row is none.
pub async fn fetch_org_row<'q, T>(c: &mut Conn, q: QueryAs<'q, T>, org_id: &'q str, id: &'q str) -> DbResult<Option<T>>
where
    T: Send + Unpin + for<'r> sqlx::FromRow<'r, AnyRow>,
{
    Ok(q.bind(org_id).bind(id).fetch_optional(c).await?)
}

/// A change to one row of an organization: `q` binds its own values, then the organization and
/// the row id last. The rows changed (0 or 1).
pub async fn execute_on_org_row<'q>(c: &mut Conn, q: Query<'q>, org_id: &'q str, id: &'q str) -> DbResult<u64> {
    Ok(q.bind(org_id).bind(id).execute(c).await?.rows_affected())
}

/// Every SQLite connection: write-ahead logging, foreign keys, waiting up to 10 s for the write
/// lock. Not a memory map (`mmap_size`): it made a walked export 1.3-2.3x faster (no `pread` into
/// the connection's cache), but every page a connection reads then counts in the process's
/// resident memory, once a connection: 3.2 GiB of RSS after the log bench's pages at 300,000 rows.
const SQLITE_SESSION: &str =
    "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON; PRAGMA busy_timeout=10000; PRAGMA synchronous=NORMAL;";

/// Every PostgreSQL connection: no JIT compilation. The console's statements are short (a page,
/// a batch of an export, a write), but PostgreSQL compiles a statement whose plan's cost passes
/// `jit_above_cost`, and a walk forced with `enable_sort = off` (`sandbox/log/postgres_store.rs`)
/// carries the planner's penalty cost whether it sorts or not: measured, LLVM's compiling took a
/// quarter of the server's time in a walked export (a word in 17 % of 300,000 rows: 68,000 rows/s
/// with it, 97,000 without; two characters 34,000 and 58,000), and tens of milliseconds of a
/// batch's first byte.
const POSTGRES_SESSION: &str = "SET jit = off";

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

impl Db {
    /// Connects (creating the SQLite file and its folder when needed). Does not migrate.
    pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let kind = if url.starts_with("sqlite:") { DbKind::Sqlite } else { DbKind::Postgres };
        let mut url = url.to_string();
        if kind == DbKind::Sqlite {
            if let Some(path) = sqlite_path(&url) {
                private_sqlite_file(std::path::Path::new(&path))?;
            }
            if !url.contains("mode=") {
                url.push_str(if url.contains('?') { "&mode=rwc" } else { "?mode=rwc" });
            }
        }
        let options = AnyConnectOptions::from_str(&url)?.disable_statement_logging();
        let pool = AnyPoolOptions::new()
            .max_connections(max_connections)
            .min_connections(if kind == DbKind::Sqlite { 1 } else { 0 })
            .acquire_timeout(Duration::from_secs(10))
            // A SQLite connection is a file opened in this process: it cannot have gone away, so it
            // is not pinged (a round trip to its worker thread) each time the pool hands it out.
            .test_before_acquire(kind == DbKind::Postgres)
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    match kind {
                        DbKind::Sqlite => {
                            conn.execute(SQLITE_SESSION).await?;
                        }
                        DbKind::Postgres => {
                            conn.execute(POSTGRES_SESSION).await?;
                        }
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        Ok(Db { pool, kind })
    }

    pub async fn migrate(&self) -> anyhow::Result<()> {
        let migrator = match self.kind {
            DbKind::Sqlite => &SQLITE_MIGRATIONS,
            DbKind::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator.run(&self.pool).await?;
        Ok(())
    }

    pub fn kind(&self) -> DbKind {
        self.kind
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// A transaction. On SQLite it takes the write lock at its start (`BEGIN IMMEDIATE`): a
    /// transaction that reads and then writes would otherwise fail at once with "database is
    /// locked" whenever another connection wrote in between (its snapshot is stale, so SQLite's
    /// busy timeout cannot help it); taken at the start, the lock is waited for (busy timeout).
    pub async fn begin(&self) -> DbResult<Tx> {
        Ok(match self.kind {
            DbKind::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            DbKind::Postgres => self.pool.begin().await?,
        })
    }

    pub async fn conn(&self) -> DbResult<sqlx::pool::PoolConnection<sqlx::Any>> {
        let started = std::time::Instant::now();
        let conn = self.pool.acquire().await;
        crate::instruments::db_pool_wait(started.elapsed());
        Ok(conn?)
    }

    /// Whether the database answers a read of its schema within `within`, for `/readyz`. On
    /// SQLite a bare `SELECT 1` never touches the file, so the read is of `sqlite_master` (a
    /// database another process holds locked does not answer it).
    pub async fn ping(&self, within: Duration) -> bool {
        let sql = match self.kind {
            DbKind::Sqlite => "SELECT COUNT(*) FROM sqlite_master",
            DbKind::Postgres => "SELECT 1",
        };
        matches!(tokio::time::timeout(within, sqlx::query(sql).execute(&self.pool)).await, Ok(Ok(_)))
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Writes a consistent copy of this SQLite database into `into`, which must be an empty file:
    /// `VACUUM INTO` reads the database in one read transaction while other connections keep
    /// writing (WAL), so the copy is the database at one moment, compacted.
    pub async fn sqlite_copy_into(&self, into: &std::path::Path) -> anyhow::Result<()> {
        anyhow::ensure!(self.kind == DbKind::Sqlite, "only a SQLite database is copied with VACUUM INTO");
        let into = into.to_str().ok_or_else(|| anyhow::anyhow!("{} is not a UTF-8 path", into.display()))?;
        sqlx::query("VACUUM INTO ?").bind(into).execute(&self.pool).await?;
        Ok(())
    }
}

/// The file of a `sqlite:` database URL (none for another database or an in-memory one).
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    sqlite_path(url).map(std::path::PathBuf::from)
}

/// Creates the database's folder (0700) and file (0600) before SQLite does, so neither is
/// readable by other accounts; SQLite gives its `-wal` and `-shm` files the database file's mode.
/// An existing file with a wider mode is narrowed to 0600.
fn private_sqlite_file(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.exists() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        }
    }
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
    let mode = std::fs::metadata(path)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        tracing::warn!(path = %path.display(), "the database file was readable by other accounts; narrowed to 0600");
    }
    Ok(())
}

fn sqlite_path(url: &str) -> Option<String> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        None
    } else {
        Some(path.to_string())
    }
}

/// `text` matched literally (a search's pattern) by `LIKE … ESCAPE '\'`.
pub fn like_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        if matches!(ch, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Now, in UTC epoch milliseconds.
pub fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// An id that sorts by the time it was made (a UUIDv7: the milliseconds first, then a counter
/// and random bits), for rows written in time order: a B-tree of such ids grows at its right
/// end, its pages filled, where random ids split pages all over it (the operation log's primary
/// key: 42 → 31 bytes a row on PostgreSQL).
pub fn new_time_ordered_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A requested page of a list: 1-based page number and page size.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    pub page: u32,
    pub per_page: u32,
}

impl PageRequest {
    pub fn new(page: Option<u32>, per_page: u32) -> Self {
        PageRequest { page: page.unwrap_or(1).max(1), per_page }
    }
    pub fn offset(&self) -> i64 {
        (self.page as i64 - 1) * self.per_page as i64
    }
    /// One more than the page size, to learn whether a next page exists without counting.
    pub fn fetch_limit(&self) -> i64 {
        self.per_page as i64 + 1
    }
}

/// A page of results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub page: u32,
    pub per_page: u32,
    pub has_next: bool,
}

impl<T> Page<T> {
    pub fn from_fetched(mut items: Vec<T>, req: PageRequest) -> Self {
        let has_next = items.len() > req.per_page as usize;
        items.truncate(req.per_page as usize);
        Page { items, page: req.page, per_page: req.per_page, has_next }
    }
    pub fn has_prev(&self) -> bool {
        self.page > 1
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &std::path::Path) -> u32 {
        std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn time_ordered_ids_are_uuids_that_sort_in_the_order_made() {
        let ids: Vec<String> = (0..2_000).map(|_| super::new_time_ordered_id()).collect();
        for id in &ids {
            let u = uuid::Uuid::parse_str(id).expect("a uuid");
            assert_eq!(u.get_version_num(), 7, "{id}");
            assert_eq!(id, &u.to_string(), "lower-case and hyphenated, as the API shows ids");
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "each sorts after the one before it");
        let ms = |id: &str| uuid::Uuid::parse_str(id).expect("uuid").get_timestamp().expect("v7").to_unix();
        let before = super::now_ms() / 1000;
        assert!((ms(&super::new_time_ordered_id()).0 as i64 - before).abs() <= 1, "the time is now's");
    }

    #[tokio::test]
    async fn a_new_sqlite_database_is_private_to_its_account() {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let file = data.join("agenticos.db");
        let db = super::Db::connect(&format!("sqlite://{}", file.display()), 2).await.expect("connect");
        db.migrate().await.expect("migrate");
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&file), 0o600);
        let wal = data.join("agenticos.db-wal");
        assert!(wal.exists(), "WAL mode writes a -wal file");
        assert_eq!(mode(&wal), 0o600);
        db.close().await;
    }

    #[tokio::test]
    async fn every_sqlite_connection_writes_ahead_and_waits_for_the_write_lock() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db =
            super::Db::connect(&format!("sqlite://{}", dir.path().join("p.db").display()), 2).await.expect("connect");
        // Two connections at once: each was set up by the pool.
        let (mut a, mut b) = (db.conn().await.expect("a"), db.conn().await.expect("b"));
        for c in [&mut a, &mut b] {
            let pragma = |name: &'static str| format!("PRAGMA {name}");
            let mut values = Vec::new();
            for name in ["journal_mode", "synchronous", "foreign_keys", "busy_timeout"] {
                let row = sqlx::query(&pragma(name)).fetch_one(&mut **c).await.expect("pragma");
                values.push(match sqlx::Row::try_get::<String, _>(&row, 0) {
                    Ok(text) => text,
                    Err(_) => sqlx::Row::try_get::<i64, _>(&row, 0).expect("a number").to_string(),
                });
            }
            assert_eq!(values, ["wal", "1", "1", "10000"]);
        }
        drop((a, b));
        db.close().await;
    }

    #[tokio::test]
    async fn an_existing_world_readable_database_file_is_narrowed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("old.db");
        std::fs::write(&file, b"").expect("create");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let db = super::Db::connect(&format!("sqlite://{}", file.display()), 1).await.expect("connect");
        assert_eq!(mode(&file), 0o600);
        db.close().await;
    }
}
