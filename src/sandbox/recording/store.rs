//! SQL for the operation record.
//!
//! **PostgreSQL**: a batch is written into `sandbox_operations` as multi-row statements in one
//! transaction. Each row's references are looked up in the statement (`(SELECT id FROM runs WHERE
//! id = v.run_id)`), so a run, conversation, workspace, agent or connection deleted before the
//! write leaves that reference empty instead of failing the batch; a row whose organization is gone
//! is skipped (its rows go with it anyway). A delete committed between the statement's snapshot and
//! its foreign-key check still fails it: the batch is tried again (the references are looked up
//! anew), and as a last resort row by row with every optional reference empty, so no row can take
//! another down.
//!
//! **SQLite**: a batch is written into the bare `sandbox_operations_inbox` (migration
//! `20270106090000_operation_log_inbox`), and [`settle_step`] moves the inbox's rows into the log in
//! bulk with the same statement shape reading the inbox instead of `VALUES`: references looked up,
//! each row's time key given, and the moved rows taken out of the inbox in the same transaction
//! (`BEGIN IMMEDIATE`, so nothing is deleted between the lookups and the insert). A move that fails
//! is tried row by row, so a row the log refuses stays in the inbox and its neighbours move.
//!
//! Every row keeps the id minted when it was queued, through every try; the log ignores an id it
//! already holds (`ON CONFLICT (id) DO NOTHING`), so a batch tried again after a commit whose
//! answer was lost, or moved again from the inbox, is written once.
//!
//! A batch of up to [`ROWS_PER_STATEMENT`] rows is one statement on its own (autocommit, atomic by
//! itself): no `BEGIN` and `COMMIT` sent around it, and on SQLite no statement journal.

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

/// A batch not written whole: how many of its rows are missing from the log (all that were left
/// to write when `told` is false: whether they landed could not be read), and the last error.
#[derive(Debug)]
pub struct NotRecorded {
    pub missing: usize,
    pub told: bool,
    pub error: DbError,
}

/// Writes `rows` on `c`, a connection of a database of `kind`: into the log on PostgreSQL, into
/// the inbox on SQLite. Tried again with the same ids: after a failed try, the rows already
/// written ([`missing`] tells) are left out, since a try whose answer was lost may have committed.
pub async fn insert_batch(c: &mut Conn, kind: DbKind, rows: &[Record]) -> Result<(), NotRecorded> {
    let mut left: Cow<'_, [Record]> = Cow::Borrowed(rows);
    let mut told = true;
    let mut last = None;
    for _ in 0..TRIES {
        match insert_whole(c, kind, &left).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                tracing::warn!(error = %e, rows = left.len(), event = "operations_batch_retried", "recording a batch failed; trying again");
                last = Some(e);
            }
        }
        match missing(c, kind, &left).await {
            Ok(m) if m.is_empty() => return Ok(()),
            Ok(m) => (left, told) = (Cow::Owned(m), true),
            Err(_) => told = false,
        }
    }
    let Some(error) = last else { return Ok(()) };
    if kind == DbKind::Sqlite {
        // The inbox has no constraint a row could fail: what failed is the database.
        return Err(NotRecorded { missing: left.len(), told, error });
    }
    tracing::warn!(error = %error, rows = left.len(), event = "operations_batch_row_by_row", "recording the batch row by row");
    let mut failed = None;
    for row in left.iter() {
        if let Err(e) = insert_bare(c, row).await {
            failed = Some(e);
        }
    }
    let Some(error) = failed else { return Ok(()) };
    match missing(c, kind, &left).await {
        Ok(m) if m.is_empty() => Ok(()),
        Ok(m) => Err(NotRecorded { missing: m.len(), told: true, error }),
        Err(_) => Err(NotRecorded { missing: left.len(), told: false, error }),
    }
}

/// The rows of `rows` whose id is neither in the log nor (SQLite) in its inbox.
pub async fn missing(c: &mut Conn, kind: DbKind, rows: &[Record]) -> Result<Vec<Record>, DbError> {
    let mut present = std::collections::HashSet::new();
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let list = (1..=chunk.len()).map(|i| id_of(kind, &format!("${i}"))).collect::<Vec<_>>().join(", ");
        let sql = match kind {
            DbKind::Sqlite => format!(
                "SELECT id FROM sandbox_operations_inbox WHERE id IN ({list}) \
                 UNION ALL SELECT id FROM sandbox_operations WHERE id IN ({list})"
            ),
            DbKind::Postgres => format!("SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE id IN ({list})"),
        };
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
async fn insert_whole(c: &mut Conn, kind: DbKind, rows: &[Record]) -> Result<(), DbError> {
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

/// The statement for a batch of `rows` rows ([`built`]), kept for small batches.
fn statement(kind: DbKind, rows: usize) -> Cow<'static, str> {
    static SQLITE: [OnceLock<String>; KEPT_STATEMENTS] = [const { OnceLock::new() }; KEPT_STATEMENTS];
    static POSTGRES: [OnceLock<String>; KEPT_STATEMENTS] = [const { OnceLock::new() }; KEPT_STATEMENTS];
    let kept = match kind {
        DbKind::Sqlite => &SQLITE,
        DbKind::Postgres => &POSTGRES,
    };
    match rows.checked_sub(1).and_then(|i| kept.get(i)) {
        Some(slot) => Cow::Borrowed(slot.get_or_init(|| built(kind, rows)).as_str()),
        None => Cow::Owned(built(kind, rows)),
    }
}

/// A batch's statement: into the inbox as it comes on SQLite, into the log with its references
/// looked up on PostgreSQL.
fn built(kind: DbKind, rows: usize) -> String {
    let values = values(rows);
    match kind {
        DbKind::Sqlite => format!("INSERT INTO sandbox_operations_inbox ({COLUMNS}) {values}"),
        DbKind::Postgres => resolved_sql(kind, &values),
    }
}

/// `VALUES` with 15 parameters a row.
fn values(rows: usize) -> String {
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
/// rows of an organization that is gone skipped, and on SQLite each row's time key given.
fn resolved_sql(kind: DbKind, source: &str) -> String {
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
        "WITH v ({COLUMNS}) AS ({source}) \
         INSERT INTO sandbox_operations ({rowid_column}{COLUMNS}) \
         SELECT {rowid}{}, v.organization_id, \
           (SELECT w.id FROM sandbox_workspaces w WHERE w.id = v.workspace_id), \
           v.session_key, \
           (SELECT c.id FROM sandbox_connections c WHERE c.id = v.connection_id), \
           (SELECT a.id FROM agents a WHERE a.id = v.agent_id), \
           (SELECT r.id FROM runs r WHERE r.id = v.run_id), \
           v.operation, v.target, v.ok, v.detail, v.duration_ms, v.created_at, v.seq, \
           (SELECT cv.id FROM conversations cv WHERE cv.id = v.conversation_id) \
         FROM v WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = v.organization_id) \
         ON CONFLICT (id) DO NOTHING",
        id_of(kind, "v.id")
    )
}

/// A bound id as the id column's type (`uuid` on PostgreSQL, TEXT on SQLite).
fn id_of(kind: DbKind, value: &str) -> String {
    match kind {
        DbKind::Postgres => format!("CAST({value} AS uuid)"),
        DbKind::Sqlite => value.to_string(),
    }
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

/// PostgreSQL: one row with no optional reference: it cannot fail on another row's account.
async fn insert_bare(c: &mut Conn, r: &Record) -> Result<(), DbError> {
    sqlx::query(&format!(
        "INSERT INTO sandbox_operations ({COLUMNS}) \
         SELECT {}, $2, NULL, $3, NULL, NULL, NULL, $4, $5, $6, $7, $8, $9, $10, NULL \
         WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = $2) ON CONFLICT (id) DO NOTHING",
        id_of(DbKind::Postgres, "$1")
    ))
    .bind(&r.id)
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

/// SQLite: readies the recorder's own connection. A move's insert runs inside a transaction and
/// fires the log's triggers, so SQLite keeps a statement journal for it (to undo that statement
/// alone); kept in memory rather than in a temporary file, which it spills to past 64 KiB, it costs
/// no file writes (`subjournalPage` was 3.8 % of the console's CPU under load in a profile).
pub async fn prepare_own(c: &mut Conn) -> Result<(), DbError> {
    sqlx::query("PRAGMA temp_store = MEMORY").execute(c).await?;
    Ok(())
}

/// SQLite: whether the inbox holds a row.
pub async fn inbox_holds_rows(c: &mut Conn) -> Result<bool, DbError> {
    let any: Option<(i64,)> =
        sqlx::query_as("SELECT rowid FROM sandbox_operations_inbox LIMIT 1").fetch_optional(c).await?;
    Ok(any.is_some())
}

/// What one [`settle_step`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// Rows moved from the inbox into the log.
    pub moved: u64,
    /// Rows moved from the search queue into the search index.
    pub indexed: u64,
    /// Rows left in the inbox, as far as the step knows: `None` when it moved as many as it was
    /// allowed (more may wait), else the rows the log refused (0 when the inbox is empty).
    pub left: Option<u64>,
}

/// SQLite: moves the oldest `most` rows of the inbox into the log and, with `index`, the oldest
/// `most` rows of the search queue into the search index, in one `BEGIN IMMEDIATE` transaction.
/// An empty inbox and queue take no write lock. A move that fails is tried row by row over the
/// whole inbox ([`move_row_by_row`]); an indexing that fails fails the step (the queue stays whole).
pub async fn settle_step(c: &mut Conn, most: i64, index: bool) -> Result<Settled, DbError> {
    let (inbox, queue): (i64, i64) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM sandbox_operations_inbox), EXISTS (SELECT 1 FROM sandbox_operations_search_queue)",
    )
    .fetch_one(&mut *c)
    .await?;
    let index = index && queue != 0;
    if inbox == 0 && !index {
        return Ok(Settled { left: Some(0), ..Settled::default() });
    }
    let mut tx = sqlx::Connection::begin_with(&mut *c, "BEGIN IMMEDIATE").await?;
    let moved = if inbox != 0 { move_in(&mut tx, most).await } else { Ok(0) };
    let moved = match moved {
        Ok(n) => n,
        Err(e) => {
            drop(tx);
            tracing::warn!(error = %e, event = "operations_move_row_by_row", "moving the inbox into the log failed; moving it row by row");
            let (moved, refused) = move_row_by_row(c).await?;
            return Ok(Settled { moved, indexed: 0, left: Some(refused) });
        }
    };
    let indexed = if index { index_in(&mut tx, most).await? } else { 0 };
    tx.commit().await?;
    let left = if moved < most.max(1) as u64 { Some(0) } else { None };
    Ok(Settled { moved, indexed, left })
}

/// The last of the oldest `most` rows `ordered` (a query of rowids in order) selects, or the
/// highest rowid there is when it selects fewer (all of them).
async fn last_of_oldest(c: &mut Conn, ordered: &str, most: i64) -> Result<i64, DbError> {
    let last: Option<(i64,)> =
        sqlx::query_as(&format!("{ordered} LIMIT 1 OFFSET $1")).bind(most.max(1) - 1).fetch_optional(&mut *c).await?;
    Ok(last.map_or(i64::MAX, |(row,)| row))
}

/// The oldest `most` rows of the inbox into the log, inside the caller's transaction.
async fn move_in(c: &mut Conn, most: i64) -> Result<u64, DbError> {
    let last = last_of_oldest(c, "SELECT rowid FROM sandbox_operations_inbox ORDER BY rowid", most).await?;
    sqlx::query(&moved_sql("rowid <= $1")).bind(last).execute(&mut *c).await?;
    Ok(sqlx::query("DELETE FROM sandbox_operations_inbox WHERE rowid <= $1")
        .bind(last)
        .execute(&mut *c)
        .await?
        .rows_affected())
}

/// The move's statement for the inbox rows `condition` selects.
fn moved_sql(condition: &str) -> String {
    resolved_sql(DbKind::Sqlite, &format!("SELECT {COLUMNS} FROM sandbox_operations_inbox WHERE {condition}"))
}

/// Every row of the inbox on its own transaction: with its references, or failing that with none;
/// a row the log refuses both ways stays in the inbox (logged). Returns the rows moved and refused.
async fn move_row_by_row(c: &mut Conn) -> Result<(u64, u64), DbError> {
    let rows: Vec<(i64,)> =
        sqlx::query_as("SELECT rowid FROM sandbox_operations_inbox ORDER BY rowid").fetch_all(&mut *c).await?;
    let bare = format!(
        "INSERT INTO sandbox_operations (rowid, {COLUMNS}) \
         SELECT {}, i.id, i.organization_id, NULL, i.session_key, NULL, NULL, NULL, i.operation, i.target, i.ok, \
           i.detail, i.duration_ms, i.created_at, i.seq, NULL \
         FROM sandbox_operations_inbox i WHERE i.rowid = $1 \
           AND EXISTS (SELECT 1 FROM organizations o WHERE o.id = i.organization_id)",
        next_time_key("i.created_at")
    );
    let resolved = moved_sql("rowid = $1");
    let (mut moved, mut refused) = (0, 0);
    for (row,) in rows {
        let mut tx = sqlx::Connection::begin_with(&mut *c, "BEGIN IMMEDIATE").await?;
        let inserted = match sqlx::query(&resolved).bind(row).execute(&mut *tx).await {
            Ok(_) => Ok(()),
            Err(_) => sqlx::query(&bare).bind(row).execute(&mut *tx).await.map(|_| ()),
        };
        let done = match inserted {
            Ok(()) => {
                sqlx::query("DELETE FROM sandbox_operations_inbox WHERE rowid = $1").bind(row).execute(&mut *tx).await
            }
            Err(e) => Err(e),
        };
        match done {
            Ok(_) => {
                tx.commit().await?;
                moved += 1;
            }
            Err(e) => {
                drop(tx);
                refused += 1;
                tracing::error!(error = %e, row, event = "operations_not_moved", "the operation log refused a row of its inbox; it stays there");
            }
        }
    }
    Ok((moved, refused))
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
    let moved = index_in(&mut tx, most).await?;
    tx.commit().await?;
    Ok(moved)
}

/// The oldest `most` queued rows into the search index, inside the caller's transaction.
async fn index_in(c: &mut Conn, most: i64) -> Result<u64, DbError> {
    let last = last_of_oldest(c, "SELECT row FROM sandbox_operations_search_queue ORDER BY row", most).await?;
    sqlx::query(
        "INSERT INTO sandbox_operations_search (rowid, target, detail) \
         SELECT o.rowid, o.target, o.detail FROM sandbox_operations_search_queue q \
         CROSS JOIN sandbox_operations o WHERE o.rowid = q.row AND q.row <= $1 ORDER BY q.row",
    )
    .bind(last)
    .execute(&mut *c)
    .await?;
    Ok(sqlx::query("DELETE FROM sandbox_operations_search_queue WHERE row <= $1")
        .bind(last)
        .execute(&mut *c)
        .await?
        .rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_statement_is_the_one_built_for_its_number_of_rows() {
        for kind in [DbKind::Sqlite, DbKind::Postgres] {
            for rows in 1..=KEPT_STATEMENTS + 2 {
                let first = statement(kind, rows);
                assert_eq!(first, built(kind, rows), "{kind:?}, {rows} rows");
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
