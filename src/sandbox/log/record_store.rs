//! SQL of writing the operation log that both databases share: a batch of rows as multi-row
//! statements, tried again with the same ids. Each database's own statement and what it does when
//! the tries fail are in `sqlite_store.rs` (into the inbox) and `postgres_store.rs` (into the log).
//!
//! Every row keeps the id minted when it was queued, through every try; the log ignores an id it
//! already holds (`ON CONFLICT (id) DO NOTHING`; on PostgreSQL `(id, created_at)`), so a batch tried again after a commit whose
//! answer was lost, or moved again from the inbox, is written once.
//!
//! A batch of up to [`ROWS_PER_STATEMENT`] rows is one statement on its own (autocommit, atomic by
//! itself): no `BEGIN` and `COMMIT` sent around it, and on SQLite no statement journal.

use std::borrow::Cow;
use std::sync::OnceLock;

pub use super::model::NotRecorded;
use super::model::Record;
use crate::db::{Conn, DbError};

/// Rows per statement: 15 binds a row stays far below SQLite's limit of 32,766.
pub const ROWS_PER_STATEMENT: usize = 500;
/// How often a batch is tried whole before the database's last resort.
const TRIES: usize = 3;
/// Batches of up to this many rows take a statement text built once per database kind (under load
/// a batch holds the few rows that arrived while the one before was written).
pub const KEPT_STATEMENTS: usize = 16;

pub const COLUMNS: &str = "id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, \
     operation, target, ok, detail, duration_ms, created_at, seq, conversation_id";

/// How a database writes a batch.
pub trait BatchSql {
    /// The statement of a batch of `rows` rows (binds as [`bind_rows`] gives them).
    fn built(rows: usize) -> String;
    /// The kept statements ([`statement`]).
    fn kept() -> &'static [OnceLock<String>; KEPT_STATEMENTS];
    /// A query of the ids among those bound in `list` that are written already.
    fn present(list: &str) -> String;
    /// A bound id as the id column's type.
    fn id_of(value: &str) -> String;
    /// How a transaction of several statements begins (`None`: the database's `BEGIN`).
    const BEGIN: Option<&'static str>;
}

/// What the tries left: the rows still missing, whether that is known, and the last error.
pub struct Left<'a> {
    pub rows: Cow<'a, [Record]>,
    pub told: bool,
    pub error: DbError,
}

/// Writes `rows` on `c` up to [`TRIES`] times, each try with the same ids: after a failed try,
/// the rows already written ([`missing`] tells) are left out, since a try whose answer was lost
/// may have committed. `Err` holds what is left.
pub async fn tries<'a, B: BatchSql>(c: &mut Conn, rows: &'a [Record]) -> Result<(), Left<'a>> {
    let mut left: Cow<'a, [Record]> = Cow::Borrowed(rows);
    let mut told = true;
    let mut last = None;
    for _ in 0..TRIES {
        match insert_whole::<B>(c, &left).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, rows = left.len(), event = "operations_batch_retried", "recording a batch failed; trying again");
                last = Some(e);
            }
        }
        match missing::<B>(c, &left).await {
            Ok(m) if m.is_empty() => return Ok(()),
            Ok(m) => (left, told) = (Cow::Owned(m), true),
            Err(_) => told = false,
        }
    }
    match last {
        Some(error) => Err(Left { rows: left, told, error }),
        None => Ok(()),
    }
}

/// The rows of `rows` whose id is not written yet (in the log, or on SQLite its inbox).
pub async fn missing<B: BatchSql>(c: &mut Conn, rows: &[Record]) -> Result<Vec<Record>, DbError> {
    let mut present = std::collections::HashSet::new();
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let list = (1..=chunk.len()).map(|i| B::id_of(&format!("${i}"))).collect::<Vec<_>>().join(", ");
        let sql = B::present(&list);
        let mut q = sqlx::query_as::<_, (String,)>(&sql);
        for r in chunk {
            q = q.bind(&r.id);
        }
        present.extend(q.fetch_all(&mut *c).await?.into_iter().map(|(id,)| id));
    }
    Ok(rows.iter().filter(|r| !present.contains(&r.id)).cloned().collect())
}

/// The whole batch: one statement alone, or several in one transaction (on SQLite
/// `BEGIN IMMEDIATE`, the write lock waited for at its start).
async fn insert_whole<B: BatchSql>(c: &mut Conn, rows: &[Record]) -> Result<(), DbError> {
    if rows.len() <= ROWS_PER_STATEMENT {
        return insert_statement::<B>(c, rows).await;
    }
    let mut tx = match B::BEGIN {
        Some(begin) => sqlx::Connection::begin_with(&mut *c, begin).await?,
        None => sqlx::Connection::begin(&mut *c).await?,
    };
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        insert_statement::<B>(&mut tx, chunk).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Up to [`ROWS_PER_STATEMENT`] rows in one statement.
async fn insert_statement<B: BatchSql>(c: &mut Conn, chunk: &[Record]) -> Result<(), DbError> {
    let sql = statement::<B>(chunk.len());
    let mut q = sqlx::query(&sql);
    for r in chunk {
        q = q
            .bind(&r.id)
            .bind(&r.organization_id)
            .bind(&r.workspace_id)
            .bind(&r.session_key)
            .bind(&r.connection_id)
            .bind(&r.agent_id)
            .bind(&r.run_id)
            .bind(r.operation.as_str())
            .bind(&r.target)
            .bind(i64::from(r.ok))
            .bind(&r.detail)
            .bind(r.duration_ms)
            .bind(r.created_at)
            .bind(r.seq)
            .bind(&r.conversation_id);
    }
    q.execute(&mut *c).await?;
    Ok(())
}

/// The statement for a batch of `rows` rows ([`BatchSql::built`]), kept for small batches.
pub fn statement<B: BatchSql>(rows: usize) -> Cow<'static, str> {
    match rows.checked_sub(1).and_then(|i| B::kept().get(i)) {
        Some(slot) => Cow::Borrowed(slot.get_or_init(|| B::built(rows)).as_str()),
        None => Cow::Owned(B::built(rows)),
    }
}

/// The unit test of a store's kept statements: up to [`KEPT_STATEMENTS`] rows the statement is
/// built once and the same one handed out again; above, built anew each time; each has one
/// `VALUES` tuple a row.
#[cfg(test)]
pub fn assert_kept_statements<B: BatchSql>() {
    for rows in 1..=KEPT_STATEMENTS + 2 {
        let first = statement::<B>(rows);
        assert_eq!(first, B::built(rows), "{rows} rows");
        assert_eq!(first.matches("($").count(), rows, "one VALUES tuple a row");
        let again = statement::<B>(rows);
        assert_eq!(
            matches!((&first, &again), (Cow::Borrowed(a), Cow::Borrowed(b)) if std::ptr::eq(*a, *b)),
            rows <= KEPT_STATEMENTS,
            "{rows} rows kept or built anew"
        );
    }
}

/// `VALUES` with 15 parameters a row.
pub fn values(rows: usize) -> String {
    let mut values = String::with_capacity(rows * 80);
    values.push_str("VALUES ");
    for i in 0..rows {
        if i > 0 {
            values.push_str(", ");
        }
        values.push('(');
        for c in 0..15 {
            if c > 0 {
                values.push_str(", ");
            }
            values.push_str(&format!("${}", i * 15 + c + 1));
        }
        values.push(')');
    }
    values
}

/// Inserts the rows `source` gives (a query of [`COLUMNS`]) into the log, references looked up,
/// rows of an organization that is gone skipped; `rowid` is SQLite's time key column and value
/// (`sqlite_store`), empty on PostgreSQL; `reference` turns a looked-up id (text) into the log's
/// column type (a `uuid` on PostgreSQL); `key` is the log's unique key a row already written
/// conflicts on (`id`; on PostgreSQL `id, created_at`, the partitioned log's primary key, the same
/// for a row tried again).
pub fn resolved_sql(
    source: &str,
    id: &str,
    (rowid_column, rowid): (&str, &str),
    reference: fn(&str) -> String,
    key: &str,
) -> String {
    let looked_up =
        |table: &str, column: &str| reference(&format!("(SELECT t.id FROM {table} t WHERE t.id = v.{column})"));
    format!(
        "WITH v ({COLUMNS}) AS ({source}) \
         INSERT INTO sandbox_operations ({rowid_column}{COLUMNS}) \
         SELECT {rowid}{id}, {}, {}, v.session_key, {}, {}, {}, \
           v.operation, v.target, v.ok, v.detail, v.duration_ms, v.created_at, v.seq, {} \
         FROM v WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = v.organization_id) \
         ON CONFLICT ({key}) DO NOTHING",
        reference("v.organization_id"),
        looked_up("sandbox_workspaces", "workspace_id"),
        looked_up("sandbox_connections", "connection_id"),
        looked_up("agents", "agent_id"),
        looked_up("runs", "run_id"),
        looked_up("conversations", "conversation_id"),
    )
}
