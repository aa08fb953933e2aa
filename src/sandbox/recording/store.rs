//! SQL for the operation record.
//!
//! A batch is written as multi-row statements in one transaction. Each row's references are
//! looked up in the statement (`(SELECT id FROM runs WHERE id = v.run_id)`), so a run,
//! conversation, workspace, agent or connection deleted before the write leaves that reference
//! empty instead of failing the batch; a row whose organization is gone is skipped (its rows go
//! with it anyway). On PostgreSQL a delete committed between the statement's snapshot and its
//! foreign-key check still fails it: the batch is tried again (the references are looked up anew),
//! and as a last resort row by row with every optional reference empty, so no row can take
//! another down.
//!
//! A batch of up to [`ROWS_PER_STATEMENT`] rows is one statement on its own (autocommit, atomic by
//! itself): no `BEGIN` and `COMMIT` sent around it, and on SQLite no statement journal, which a
//! multi-row insert with triggers inside an explicit transaction writes page by page to a
//! temporary file (opened, written and deleted with every commit: a tenth of the console's CPU
//! under load in `cargo bench --bench workspace_load`).

use std::borrow::Cow;
use std::sync::OnceLock;

use super::Record;
use crate::db::{Conn, DbError, DbKind};

/// Rows per statement: 15 binds a row stays far below SQLite's limit of 32,766.
const ROWS_PER_STATEMENT: usize = 500;
/// How often a batch is tried whole before it is written row by row.
const TRIES: usize = 3;
/// Batches of up to this many rows take a statement text built once per database kind (under load
/// a batch holds the few rows that arrived while the one before was written).
const KEPT_STATEMENTS: usize = 16;

const COLUMNS: &str = "id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, \
     operation, target, ok, detail, duration_ms, created_at, seq, conversation_id";

/// Writes `rows` on `c`, a connection of a database of `kind`.
pub async fn insert_batch(c: &mut Conn, kind: DbKind, rows: &[Record]) -> Result<(), DbError> {
    let mut last = None;
    for _ in 0..TRIES {
        match insert_resolved(c, kind, rows).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, rows = rows.len(), event = "operations_batch_retried", "recording a batch failed; trying again");
                last = Some(e);
            }
        }
    }
    if let Some(e) = last {
        tracing::warn!(error = %e, rows = rows.len(), event = "operations_batch_row_by_row", "recording the batch row by row");
    }
    let mut failed = None;
    for row in rows {
        if let Err(e) = insert_bare(c, kind, row).await {
            failed = Some(e);
        }
    }
    failed.map_or(Ok(()), Err)
}

/// The whole batch, references looked up in the statement: one statement alone, or several in one
/// transaction (on SQLite `BEGIN IMMEDIATE`, the write lock waited for at its start).
async fn insert_resolved(c: &mut Conn, kind: DbKind, rows: &[Record]) -> Result<(), DbError> {
    if rows.len() <= ROWS_PER_STATEMENT {
        return insert_statement(c, kind, rows).await;
    }
    let mut tx = match kind {
        DbKind::Sqlite => sqlx::Connection::begin_with(&mut *c, "BEGIN IMMEDIATE").await?,
        DbKind::Postgres => sqlx::Connection::begin(&mut *c).await?,
    };
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        insert_statement(&mut tx, kind, chunk).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Up to [`ROWS_PER_STATEMENT`] rows in one statement.
async fn insert_statement(c: &mut Conn, kind: DbKind, chunk: &[Record]) -> Result<(), DbError> {
    let sql = statement(kind, chunk.len());
    let mut q = sqlx::query(&sql);
    for r in chunk {
        q = q
            .bind(crate::db::new_time_ordered_id())
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

/// A bound id as the id column's type (`uuid` on PostgreSQL, TEXT on SQLite).
fn id_of(kind: DbKind, value: &str) -> String {
    match kind {
        DbKind::Postgres => format!("CAST({value} AS uuid)"),
        DbKind::Sqlite => value.to_string(),
    }
}

/// The statement for a batch of `rows` rows: [`resolved_sql`], kept for small batches.
fn statement(kind: DbKind, rows: usize) -> Cow<'static, str> {
    static SQLITE: [OnceLock<String>; KEPT_STATEMENTS] = [const { OnceLock::new() }; KEPT_STATEMENTS];
    static POSTGRES: [OnceLock<String>; KEPT_STATEMENTS] = [const { OnceLock::new() }; KEPT_STATEMENTS];
    let kept = match kind {
        DbKind::Sqlite => &SQLITE,
        DbKind::Postgres => &POSTGRES,
    };
    match rows.checked_sub(1).and_then(|i| kept.get(i)) {
        Some(slot) => Cow::Borrowed(slot.get_or_init(|| resolved_sql(kind, rows)).as_str()),
        None => Cow::Owned(resolved_sql(kind, rows)),
    }
}

fn resolved_sql(kind: DbKind, rows: usize) -> String {
    let mut values = String::with_capacity(rows * 80);
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
    let (rowid_column, rowid) = match kind {
        // The row's time key (migration `20270104090000_operation_log_time_rowids`): the next
        // free ones of its millisecond, counted on in the statement.
        DbKind::Sqlite => (
            "rowid, ",
            format!(
                "{} + ROW_NUMBER() OVER (PARTITION BY v.created_at ORDER BY v.id) - 1, ",
                next_time_key("v.created_at")
            ),
        ),
        DbKind::Postgres => ("", String::new()),
    };
    format!(
        "WITH v ({COLUMNS}) AS (VALUES {values}) \
         INSERT INTO sandbox_operations ({rowid_column}{COLUMNS}) \
         SELECT {rowid}{}, v.organization_id, \
           (SELECT w.id FROM sandbox_workspaces w WHERE w.id = v.workspace_id), \
           v.session_key, \
           (SELECT c.id FROM sandbox_connections c WHERE c.id = v.connection_id), \
           (SELECT a.id FROM agents a WHERE a.id = v.agent_id), \
           (SELECT r.id FROM runs r WHERE r.id = v.run_id), \
           v.operation, v.target, v.ok, v.detail, v.duration_ms, v.created_at, v.seq, \
           (SELECT cv.id FROM conversations cv WHERE cv.id = v.conversation_id) \
         FROM v WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = v.organization_id)",
        id_of(kind, "v.id")
    )
}

/// SQLite: the first free rowid of the millisecond `created_at` (an expression) names, in the
/// operation log's time keys (`created_at * 2^20 + n`, migration
/// `20270104090000_operation_log_time_rowids`).
fn next_time_key(created_at: &str) -> String {
    format!(
        "COALESCE((SELECT MAX(s.rowid) + 1 FROM sandbox_operations s \
         WHERE s.rowid >= {created_at} * 1048576 AND s.rowid < ({created_at} + 1) * 1048576), {created_at} * 1048576)"
    )
}

/// One row with no optional reference: it cannot fail on another row's account.
async fn insert_bare(c: &mut Conn, kind: DbKind, r: &Record) -> Result<(), DbError> {
    let (rowid_column, rowid) = match kind {
        DbKind::Sqlite => ("rowid, ", format!("{}, ", next_time_key("$9"))),
        DbKind::Postgres => ("", String::new()),
    };
    sqlx::query(&format!(
        "INSERT INTO sandbox_operations ({rowid_column}{COLUMNS}) \
         SELECT {rowid}{}, $2, NULL, $3, NULL, NULL, NULL, $4, $5, $6, $7, $8, $9, $10, NULL \
         WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = $2)",
        id_of(kind, "$1")
    ))
    .bind(crate::db::new_time_ordered_id())
    .bind(&r.organization_id)
    .bind(&r.session_key)
    .bind(r.operation.as_str())
    .bind(&r.target)
    .bind(i64::from(r.ok))
    .bind(&r.detail)
    .bind(r.duration_ms)
    .bind(r.created_at)
    .bind(r.seq)
    .execute(c)
    .await?;
    Ok(())
}

/// SQLite: moves the oldest `most` rows queued for the search index into it (`search_queue.rs`),
/// in one `BEGIN IMMEDIATE` transaction: the index gains them and the queue loses them together,
/// or neither changes. Returns how many rows were moved.
pub async fn index_queued(c: &mut Conn, most: i64) -> Result<u64, DbError> {
    // An empty queue takes no write lock (the tick of an idle console).
    let any: Option<(i64,)> =
        sqlx::query_as("SELECT row FROM sandbox_operations_search_queue LIMIT 1").fetch_optional(&mut *c).await?;
    if any.is_none() {
        return Ok(0);
    }
    let mut tx = sqlx::Connection::begin_with(&mut *c, "BEGIN IMMEDIATE").await?;
    let last: Option<(i64,)> =
        sqlx::query_as("SELECT row FROM sandbox_operations_search_queue ORDER BY row LIMIT 1 OFFSET $1")
            .bind(most.max(1) - 1)
            .fetch_optional(&mut *tx)
            .await?;
    let last = match last {
        Some((row,)) => row,
        // Fewer than `most` queued: all of them.
        None => i64::MAX,
    };
    sqlx::query(
        "INSERT INTO sandbox_operations_search (rowid, target, detail) \
         SELECT o.rowid, o.target, o.detail FROM sandbox_operations_search_queue q \
         CROSS JOIN sandbox_operations o WHERE o.rowid = q.row AND q.row <= $1 ORDER BY q.row",
    )
    .bind(last)
    .execute(&mut *tx)
    .await?;
    let moved = sqlx::query("DELETE FROM sandbox_operations_search_queue WHERE row <= $1")
        .bind(last)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_statement_is_the_one_built_for_its_number_of_rows() {
        for kind in [DbKind::Sqlite, DbKind::Postgres] {
            for rows in 1..=KEPT_STATEMENTS + 2 {
                let first = statement(kind, rows);
                assert_eq!(first, resolved_sql(kind, rows), "{kind:?}, {rows} rows");
                assert_eq!(first.matches("($").count(), rows, "{kind:?}: one VALUES tuple a row");
                let again = statement(kind, rows);
                assert_eq!(
                    matches!((&first, &again), (Cow::Borrowed(a), Cow::Borrowed(b)) if std::ptr::eq(*a, *b)),
                    rows <= KEPT_STATEMENTS,
                    "{kind:?}: {rows} rows kept or built anew"
                );
            }
        }
    }
}
