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

use super::Record;
use crate::db::{Db, DbError, DbKind};

/// Rows per statement: 15 binds a row stays far below SQLite's limit of 32,766.
const ROWS_PER_STATEMENT: usize = 500;
/// How often a batch is tried whole before it is written row by row.
const TRIES: usize = 3;

const COLUMNS: &str = "id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, \
     operation, target, ok, detail, duration_ms, created_at, seq, conversation_id";

pub async fn insert_batch(db: &Db, rows: &[Record]) -> Result<(), DbError> {
    let mut last = None;
    for _ in 0..TRIES {
        match insert_resolved(db, rows).await {
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
        if let Err(e) = insert_bare(db, row).await {
            failed = Some(e);
        }
    }
    failed.map_or(Ok(()), Err)
}

/// The whole batch, references looked up in the statement.
async fn insert_resolved(db: &Db, rows: &[Record]) -> Result<(), DbError> {
    let mut tx = db.begin().await?;
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let sql = resolved_sql(db.kind(), chunk.len());
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
        q.execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A bound id as the id column's type (`uuid` on PostgreSQL, TEXT on SQLite).
fn id_of(kind: DbKind, value: &str) -> String {
    match kind {
        DbKind::Postgres => format!("CAST({value} AS uuid)"),
        DbKind::Sqlite => value.to_string(),
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
async fn insert_bare(db: &Db, r: &Record) -> Result<(), DbError> {
    let (rowid_column, rowid) = match db.kind() {
        DbKind::Sqlite => ("rowid, ", format!("{}, ", next_time_key("$9"))),
        DbKind::Postgres => ("", String::new()),
    };
    sqlx::query(&format!(
        "INSERT INTO sandbox_operations ({rowid_column}{COLUMNS}) \
         SELECT {rowid}{}, $2, NULL, $3, NULL, NULL, NULL, $4, $5, $6, $7, $8, $9, $10, NULL \
         WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = $2)",
        id_of(db.kind(), "$1")
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
    .execute(db.pool())
    .await?;
    Ok(())
}
