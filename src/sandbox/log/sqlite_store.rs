//! The operation log's SQL on SQLite (`sqlite.rs` runs it).
//!
//! **Written behind the recorder**: a batch is written into the bare `sandbox_operations_inbox`
//! (migration `20270106090000_operation_log_inbox`), and [`settle_step`] moves the inbox's rows
//! into the log in bulk with the statement shape of `record_store.rs` reading the inbox instead
//! of `VALUES`: references looked up, each row's time key given, and the moved rows taken out of
//! the inbox in the same transaction (`BEGIN IMMEDIATE`, so nothing is deleted between the lookups
//! and the insert). A move that fails is tried row by row, so a row the log refuses stays in the
//! inbox and its neighbours move. The search index is written behind it too (migration
//! `20270105090000_operation_log_search_queue`): an insert queues its rowid, [`index_in`] moves
//! queued rows into the FTS5 index.
//!
//! **Read**: a row's rowid is its time key ([`TIME_KEY_SPAN`]); a search of 3 characters or more
//! reads the FTS5 trigram index by descending rowid and stops at the page ([`time_keyed_page`]);
//! an export's batch reads it the same way without the page's sorts ([`time_keyed_batch`]).
//!
//! **The change counter** of the rows runs are resolved from (`resolve_epoch`, moved by triggers:
//! migration `20270107090000_resolve_epoch`).

use std::sync::OnceLock;

use super::model::Record;
use super::record_store::{self, resolved_sql, values, BatchSql, NotRecorded, COLUMNS, KEPT_STATEMENTS};
use super::store::{
    arrivals, bind_all, fetch_page, rarest_trigrams, term_is_common, without_bound_behind, Arg, Clause, Dialect,
    Narrowing, PROBE_WINDOW,
};
use crate::db::{Conn, DbError, DbKind, DbResult};
use crate::sandbox::operations::cursor::{Cursor, Direction};
use crate::sandbox::operations::filter::Filter;
use crate::sandbox::operations::model::OperationItem;
use crate::sandbox::operations::timeline::Counted;

/// How SQLite spells the shared statements.
pub static DIALECT: Dialect = Dialect {
    kind: DbKind::Sqlite,
    id_text: "o.id",
    as_id: str::to_string,
    of_organization,
    bound_reference: str::to_string,
    reference: str::to_string,
    substring: "instr",
    search,
};

fn of_organization(placeholder: &str) -> String {
    format!("o.organization_id = {placeholder}")
}

/// A term of 3 characters or more first picks its candidate rows from the FTS5 trigram index —
/// its rarest trigrams ([`Narrowing::Fts`]) or else the term as a quoted phrase (a substring, no
/// query syntax) — and the LIKEs recheck them, so the result is exact; a shorter term has no
/// trigram and is only the LIKEs, along the organization's index.
fn search(w: &mut Clause, q: &str, narrowing: Option<&Narrowing>) {
    if q.chars().count() >= 3 {
        // CROSS JOIN: SQLite reads the matches first (left to right), then each row by rowid;
        // it never walks the organization's rows to test them against the index's.
        w.from = "sandbox_operations_search CROSS JOIN sandbox_operations o";
        let fts = match narrowing {
            Some(Narrowing::Fts(expression)) => expression.clone(),
            _ => fts_phrase(q),
        };
        let p = w.arg(Arg::Text(fts));
        w.conditions.push(format!("sandbox_operations_search MATCH {p} AND o.rowid = sandbox_operations_search.rowid"));
        w.time_keyed = true;
    }
    w.likes(q);
}

/// `text` as one FTS5 phrase: in double quotes, each double quote doubled.
pub fn fts_phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A page ([`page_sql`]), with the rows that arrived above a ranked cursor's top row. The
/// statement is prepared once per connection and its plan kept (SQLite plans it the same way for
/// any values).
pub async fn page(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    cursor: Option<&Cursor>,
    fetch: u32,
) -> DbResult<(Vec<OperationItem>, u64)> {
    let (sql, args) = page_sql(org_id, f, cursor, fetch, narrowing);
    fetch_page(c, &sql, &args, true).await
}

/// The timeline's counts ([`super::store::timeline_sql`] over [`super::store::counted_rows`], or a
/// search's newest `fetch` matches read from the FTS5 index as a page finds them,
/// [`time_keyed_matches`], their time and outcome only).
pub async fn timeline(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    (start, width): (i64, i64),
    fetch: u32,
) -> DbResult<Vec<Counted>> {
    let w = Clause::of(&DIALECT, org_id, f, narrowing);
    let (sql, args) = match w.time_keyed {
        true => {
            let (matches, args) = time_keyed_matches(w, org_id, f, None, fetch);
            (format!("SELECT m.t AS time, m.ok AS ok FROM ({matches}) AS m"), args)
        }
        false => super::store::counted_rows(w, fetch),
    };
    super::store::fetch_timeline(c, &super::store::timeline_sql(&sql, start, width), &args).await
}

/// The SQL of a page ([`super::store::plain_page`], or a search of the FTS5 index
/// [`time_keyed_page`]).
pub fn page_sql(
    org_id: &str,
    f: &Filter,
    cursor: Option<&Cursor>,
    fetch: u32,
    narrowing: Option<&Narrowing>,
) -> (String, Vec<Arg>) {
    let mut w = Clause::of(&DIALECT, org_id, &without_bound_behind(f, cursor), narrowing);
    if let Some(c) = cursor {
        w.position(c);
    }
    if w.time_keyed {
        return time_keyed_page(w, org_id, f, cursor, fetch);
    }
    super::store::plain_page(w, org_id, f, cursor, fetch)
}

/// A batch of the export ([`super::Reader::export_batch`]): up to `fetch` rows after `after` (or
/// the newest), newest first, the same rows in the same order as [`page`] reads them.
///
/// A search of the FTS5 index is read without the page's sorts ([`time_keyed_batch`]); anything
/// else is the page's statement.
pub async fn export_batch(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    after: Option<&Cursor>,
    fetch: u32,
) -> DbResult<Vec<OperationItem>> {
    let mut w = Clause::of(&DIALECT, org_id, f, narrowing);
    if !w.time_keyed || after.is_some_and(|a| a.direction == Direction::Before) {
        return Ok(page(c, org_id, f, narrowing, after, fetch).await?.0);
    }
    if let Some(a) = after {
        w.position(a);
    }
    time_keyed_batch(c, w, org_id, f, after, fetch).await
}

/// A search's export batch read in time-key order, which is the rows' time order but for the
/// order within one millisecond (the tie-break is the id, not the row's count in it): the
/// matches from the FTS5 index by descending rowid, each row read once with its columns, up to
/// `fetch`; when that many came, the rest of the last millisecond's matches, which may belong
/// before rows of it already read; and the rows still queued for the index in the same range.
/// Put in (time, id) order here and cut at `fetch`, they are exactly the page's rows: all
/// `fetch` indexed rows are at or above the last millisecond, and every match at or above it
/// was read; the statements share one read transaction. No statement sorts, materialises or reads a row twice (the page's statement does
/// all three to stop in the right place, [`time_keyed_page`]); docs/benchmarks.md has the rates.
async fn time_keyed_batch(
    c: &mut Conn,
    w: Clause,
    org_id: &str,
    f: &Filter,
    after: Option<&Cursor>,
    fetch: u32,
) -> DbResult<Vec<OperationItem>> {
    let (oldest, mut newest) = (f.since, f.until);
    if let Some(a) = after {
        newest = Some(newest.map_or(a.created_at, |u| u.min(a.created_at)));
    }
    let indexed = |w: &Clause, oldest: Option<i64>, newest: Option<i64>, limit: Option<u32>| {
        let mut w = Clause { args: w.args.clone(), conditions: w.conditions.clone(), ..*w };
        time_keys_within(&mut w, "sandbox_operations_search.rowid", oldest, newest);
        let limit = limit.map_or(String::new(), |n| format!(" LIMIT {n}"));
        let sql = format!(
            "SELECT {}, 0 AS arrived FROM {} {} WHERE {} ORDER BY sandbox_operations_search.rowid DESC{limit}",
            w.columns(),
            w.from,
            super::store::joins(&DIALECT),
            w.sql()
        );
        (sql, w.args)
    };
    // One read transaction: its statements see one snapshot, so a row the indexer moves from the
    // queue into the index meanwhile is read once, not by neither statement or by both.
    let mut tx = sqlx::Connection::begin(&mut *c).await?;
    let c: &mut Conn = &mut tx;
    let (sql, args) = indexed(&w, oldest, newest, Some(fetch));
    let (mut rows, _) = fetch_page(c, &sql, &args, true).await?;
    // Every match at or above `floor` (a millisecond) is read once the last one's are.
    let mut floor = oldest;
    if rows.len() >= fetch as usize {
        let last = rows.last().map_or(0, |r| r.time);
        rows.retain(|r| r.time > last);
        let (sql, args) = indexed(&w, Some(last), Some(last), None);
        rows.extend(fetch_page(c, &sql, &args, true).await?.0);
        floor = Some(last);
    }
    let mut queued = Clause::of(&DIALECT, org_id, f, Some(&Narrowing::Likes));
    if let Some(a) = after {
        queued.position(a);
    }
    time_keys_within(&mut queued, "q.row", floor, newest);
    queued.conditions.push("o.rowid = q.row".into());
    let sql = format!(
        "SELECT {}, 0 AS arrived FROM sandbox_operations_search_queue q CROSS JOIN sandbox_operations o {} WHERE {}",
        queued.columns(),
        super::store::joins(&DIALECT),
        queued.sql()
    );
    rows.extend(fetch_page(c, &sql, &queued.args, true).await?.0);
    tx.commit().await?;
    rows.sort_unstable_by(|a, b| (b.time, &b.id).cmp(&(a.time, &a.id)));
    rows.truncate(fetch as usize);
    Ok(rows)
}

/// SQLite: `column`, a time key ([`TIME_KEY_SPAN`]), within the milliseconds from `oldest` to
/// `newest` (each bound optional, both included).
fn time_keys_within(w: &mut Clause, column: &str, oldest: Option<i64>, newest: Option<i64>) {
    if let Some(ms) = oldest {
        let p = w.arg(Arg::Int(time_key(ms)));
        w.conditions.push(format!("{column} >= {p}"));
    }
    if let Some(ms) = newest {
        let p = w.arg(Arg::Int(time_key(ms.saturating_add(1))));
        w.conditions.push(format!("{column} < {p}"));
    }
}

/// A SQLite rowid of the operation log is its time key: `created_at * 2^20 + n`, n counting the
/// rows of one millisecond (migration `20270104090000_operation_log_time_rowids`).
pub const TIME_KEY_SPAN: i64 = 1 << 20;

/// The first time key of the millisecond `ms` (saturated: a cursor or range far out reads nothing).
fn time_key(ms: i64) -> i64 {
    ms.saturating_mul(TIME_KEY_SPAN)
}

/// The rowid `r`, time `t` and outcome `ok` of a search's newest `fetch` matching rows (the oldest
/// after a cursor's `before`): the FTS5 index read by descending time key, and the rows still
/// queued for it. Its arguments follow `w`'s.
fn time_keyed_matches(
    mut w: Clause,
    org_id: &str,
    f: &Filter,
    cursor: Option<&Cursor>,
    fetch: u32,
) -> (String, Vec<Arg>) {
    let before = cursor.is_some_and(|c| c.direction == Direction::Before);
    let (mut oldest, mut newest) = (f.since, f.until);
    match cursor {
        Some(c) if before => oldest = Some(oldest.map_or(c.created_at, |s| s.max(c.created_at))),
        Some(c) => newest = Some(newest.map_or(c.created_at, |u| u.min(c.created_at))),
        None => {}
    }
    time_keys_within(&mut w, "sandbox_operations_search.rowid", oldest, newest);
    let (from, indexed) = (w.from, w.sql());
    let mut queued = Clause::following(w.args, &DIALECT, org_id, f, Some(&Narrowing::Likes));
    if let Some(c) = cursor {
        queued.position(c);
    }
    time_keys_within(&mut queued, "q.row", oldest, newest);
    queued.conditions.push("o.rowid = q.row".into());
    let read = if before { "ASC" } else { "DESC" };
    let sql = format!(
        "SELECT r, t, ok FROM (SELECT o.rowid AS r, o.created_at AS t, o.ok AS ok FROM {from} WHERE {indexed} \
         ORDER BY sandbox_operations_search.rowid {read} LIMIT {fetch}) \
         UNION ALL SELECT o.rowid AS r, o.created_at AS t, o.ok AS ok \
         FROM sandbox_operations_search_queue q CROSS JOIN sandbox_operations o WHERE {} \
         ORDER BY r {read} LIMIT {fetch}",
        queued.sql()
    );
    (sql, queued.args)
}

/// SQLite, a search of the FTS5 index: a page that stops at the page. The index's rowids are the
/// rows' time keys ([`TIME_KEY_SPAN`]), so reading its matches by descending rowid (ascending
/// for a `Before` page) reads them newest first, from the cursor's or the time range's edge;
/// each is joined to its row and checked, and the read stops at `fetch` rows (`page`). A row of
/// the page's last millisecond that the read did not reach may still belong before another of
/// that millisecond (the order's tie-break is the id, not n), so the statement also takes every
/// match of that millisecond, by its rowid range, and puts the lot in (created_at, id) order.
/// A rare word reads its newest page's candidates, not all of them.
///
/// Rows not yet in the index are queued for it (migration
/// `20270105090000_operation_log_search_queue`, a few hundred at most while the recorder keeps
/// up): the page's read takes them too, each checked with the LIKEs, and keeps the first `fetch`
/// of both in time-key order.
fn time_keyed_page(w: Clause, org_id: &str, f: &Filter, cursor: Option<&Cursor>, fetch: u32) -> (String, Vec<Arg>) {
    let (page, args) = time_keyed_matches(w, org_id, f, cursor, fetch);
    let (edge, order) = match cursor.is_some_and(|c| c.direction == Direction::Before) {
        true => ("MAX", "ASC"),
        false => ("MIN", "DESC"),
    };
    let mut tie = Clause::following(args, &DIALECT, org_id, f, Some(&Narrowing::Likes));
    if let Some(c) = cursor {
        tie.position(c);
    }
    tie.conditions.push(format!(
        "o.rowid >= (SELECT {edge}(t) FROM page) * {TIME_KEY_SPAN} \
         AND o.rowid < ((SELECT {edge}(t) FROM page) + 1) * {TIME_KEY_SPAN}"
    ));
    let (ties, columns) = (tie.sql(), tie.columns());
    let (arrived, args) = match cursor.and_then(|c| c.rank.as_ref()) {
        Some(rank) => arrivals(tie.args, &DIALECT, org_id, f, rank),
        None => ("0".to_string(), tie.args),
    };
    let sql = format!(
        "WITH page AS MATERIALIZED ({page}) \
         SELECT {columns}, {arrived} AS arrived FROM sandbox_operations o NOT INDEXED {} \
         WHERE o.rowid IN (SELECT r FROM page) OR ({ties}) \
         ORDER BY o.created_at {order}, o.id {order} LIMIT {fetch}",
        super::store::joins(&DIALECT)
    );
    (sql, args)
}

/// Whether a search is read from its trigram index newest first whatever the term's frequency,
/// never walked to: the FTS5 index is read in time order and stops at the page
/// ([`time_keyed_page`]), when nothing but the term, the operations and a time range narrow it.
/// A common term's page is then found among its newest matches, as a walk would, without reading
/// the organization's rows that do not hold it. With a filter of the planner's list
/// (`operations::filter::Param::narrows`: one session, workspace, connection, agent, run or
/// conversation, or failures only) the page may be far down the term's matches, and the term is
/// probed as on PostgreSQL: a common one is walked to along that filter's own index.
pub fn reads_index_in_time_order(f: &Filter) -> bool {
    !f.is_narrowed()
}

/// What a search asks the FTS5 index (`store.rs` and `postgres_store::search_narrowing` explain
/// the choice): the term walked to when common and not read in time order, else its rarest
/// trigrams counted in the index among the newest [`PROBE_WINDOW`] rows.
pub async fn search_narrowing(c: &mut Conn, org_id: &str, f: &Filter, page: u32) -> DbResult<Option<Narrowing>> {
    let Some(q) = f.q.as_deref() else { return Ok(None) };
    if q.chars().count() < 3 {
        return Ok(None);
    }
    if !reads_index_in_time_order(f) && term_is_common(c, &DIALECT, org_id, &q.to_lowercase(), page, &[]).await? {
        return Ok(Some(Narrowing::Common));
    }
    let Some(grams) = super::store::probed_trigrams(q) else { return Ok(None) };
    // The newest rows' time keys (not dense: the PROBE_WINDOW-th newest row's).
    let from: Option<(i64,)> = sqlx::query_as(&format!(
        "SELECT rowid FROM sandbox_operations ORDER BY rowid DESC LIMIT 1 OFFSET {}",
        PROBE_WINDOW - 1
    ))
    .fetch_optional(&mut *c)
    .await?;
    let from = from.map_or(i64::MIN, |r| r.0 - 1);
    let mut counted = Vec::new();
    for (at, gram) in grams {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM sandbox_operations_search WHERE sandbox_operations_search MATCH $1 AND rowid > $2",
        )
        .bind(fts_phrase(&gram))
        .bind(from)
        .fetch_one(&mut *c)
        .await?;
        counted.push((n, at, gram));
    }
    let chosen = rarest_trigrams(counted, PROBE_WINDOW);
    Ok((!chosen.is_empty())
        .then(|| Narrowing::Fts(chosen.iter().map(|g| fts_phrase(g)).collect::<Vec<_>>().join(" AND "))))
}

/// The plan of a statement, as text (`EXPLAIN QUERY PLAN`), for the plan test.
pub async fn explain(c: &mut Conn, sql: &str, args: &[Arg]) -> DbResult<String> {
    let rows: Vec<(i64, i64, i64, String)> =
        bind_all(sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}")), args).fetch_all(c).await?;
    Ok(rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n"))
}

/// Retention: deletes at most `batch` rows created before `cutoff_ms`, in one short statement:
/// the rows before the cutoff are those whose time key is below the cutoff's, oldest first along
/// the table itself (no index of the time is kept for it). Returns how many it deleted.
pub async fn delete_batch_before(c: &mut Conn, cutoff_ms: i64, batch: i64) -> DbResult<u64> {
    let sql = format!(
        "DELETE FROM sandbox_operations WHERE rowid IN (SELECT rowid FROM sandbox_operations \
         WHERE rowid < $1 ORDER BY rowid LIMIT {batch})"
    );
    Ok(sqlx::query(&sql).bind(time_key(cutoff_ms)).execute(c).await?.rows_affected())
}

/// The change counter of the rows a run is resolved from (migration `20270107090000_resolve_epoch`).
pub async fn change_counter(c: &mut Conn) -> DbResult<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT n FROM resolve_epoch WHERE id = 1").fetch_one(c).await?;
    Ok(n)
}

// ---------------------------------------------------------------------------------------------
// Writing: the inbox, the move into the log, the search index.

/// Rows in the inbox that are moved (and indexed) after a batch, before the tick would.
pub const BACKLOG: i64 = 1000;
/// The most rows moved into the log, and into the search index, in one transaction, so a batch
/// (and the operations waiting for it) waits for one chunk at most.
pub const CHUNK: i64 = 1000;
/// How often a serving console moves its inbox and indexes what is queued.
pub const TICK: std::time::Duration = std::time::Duration::from_secs(1);

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

/// SQLite writes a batch into the inbox as it comes.
pub struct Inbox;

impl BatchSql for Inbox {
    fn built(rows: usize) -> String {
        format!("INSERT INTO sandbox_operations_inbox ({COLUMNS}) {}", values(rows))
    }
    fn kept() -> &'static [OnceLock<String>; KEPT_STATEMENTS] {
        static KEPT: [OnceLock<String>; KEPT_STATEMENTS] = [const { OnceLock::new() }; KEPT_STATEMENTS];
        &KEPT
    }
    fn present(list: &str) -> String {
        format!(
            "SELECT id FROM sandbox_operations_inbox WHERE id IN ({list}) \
             UNION ALL SELECT id FROM sandbox_operations WHERE id IN ({list})"
        )
    }
    fn id_of(value: &str) -> String {
        value.to_string()
    }
    const BEGIN: Option<&'static str> = Some("BEGIN IMMEDIATE");
}

/// Writes `rows` into the inbox, tried again with the same ids ([`record_store::tries`]). The
/// inbox has no constraint a row could fail: what fails is the database, so there is no row by
/// row.
pub async fn insert_inbox(c: &mut Conn, rows: &[Record]) -> Result<(), NotRecorded> {
    record_store::tries::<Inbox>(c, rows).await.map_err(|left| NotRecorded {
        missing: left.rows.len(),
        told: left.told,
        error: left.error,
    })
}

/// The first free rowid of the millisecond `created_at` (an expression) names, in the operation
/// log's time keys (`created_at * 2^20 + n`, migration `20270104090000_operation_log_time_rowids`).
fn next_time_key(created_at: &str) -> String {
    format!(
        "COALESCE((SELECT MAX(s.rowid) + 1 FROM sandbox_operations s \
         WHERE s.rowid >= {created_at} * 1048576 AND s.rowid < ({created_at} + 1) * 1048576), {created_at} * 1048576)"
    )
}

/// Readies the recorder's own connection. A move's insert runs inside a transaction and
/// fires the log's triggers, so SQLite keeps a statement journal for it (to undo that statement
/// alone); kept in memory rather than in a temporary file, which it spills to past 64 KiB, it costs
/// no file writes (`subjournalPage` was 3.8 % of the console's CPU under load in a profile).
pub async fn prepare_own(c: &mut Conn) -> Result<(), DbError> {
    sqlx::query("PRAGMA temp_store = MEMORY").execute(c).await?;
    Ok(())
}

/// Whether the inbox holds a row.
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

/// Moves the oldest `most` rows of the inbox into the log and, with `index`, the oldest
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
    resolved_sql(
        &format!("SELECT {COLUMNS} FROM sandbox_operations_inbox WHERE {condition}"),
        "v.id",
        (
            "rowid, ",
            &format!(
                "{} + ROW_NUMBER() OVER (PARTITION BY v.created_at ORDER BY v.id) - 1, ",
                next_time_key("v.created_at")
            ),
        ),
        str::to_string,
        "id",
    )
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

/// Moves the oldest `most` rows queued for the search index into it (migration `20270105090000_operation_log_search_queue`),
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
        record_store::assert_kept_statements::<Inbox>();
    }
}
