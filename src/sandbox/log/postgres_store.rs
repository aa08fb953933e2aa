//! The operation log's SQL on PostgreSQL (`postgres.rs` runs it).
//!
//! **Written directly**: a batch is written into `sandbox_operations` as multi-row statements in
//! one transaction. Each row's references are looked up in the statement (`(SELECT id FROM runs
//! WHERE id = v.run_id)`), so a run, conversation, workspace, agent or connection deleted before
//! the write leaves that reference empty instead of failing the batch; a row whose organization is
//! gone is skipped (its rows go with it anyway). A delete committed between the statement's
//! snapshot and its foreign-key check still fails it: the batch is tried again (the references are
//! looked up anew), and as a last resort row by row with every optional reference empty, so no row
//! can take another down.
//!
//! **Read**: the id is a `uuid`, the organization's time index is keyed on its `hashtext`
//! (migration `20261230090000_operation_log_compact`), a search asks the `pg_trgm` GIN indexes.
//! The log is partitioned by rows (`partitions.rs`) and a page, an export's batch, the timeline and
//! a search's probe ask the partitions newest first, a window of them a statement
//! ([`partitions::windows`]), until they have their rows: a GIN index answers with a bitmap that
//! cannot be read in time order, so one statement over the whole log read every candidate of a
//! rare term or one session and sorted them, a cost that grew with the log. Nothing waits behind
//! the writer: there is nothing to settle.

use std::sync::OnceLock;

use super::model::Record;
use super::record_store::{self, resolved_sql, values, BatchSql, NotRecorded, KEPT_STATEMENTS};
use super::store::{
    bind_all, fetch_page, rarest_trigrams, term_is_common, Arg, Clause, Dialect, Narrowing, Window, PROBE_WINDOW,
};
use super::{partition_store, partitions};
use crate::db::{like_escaped, Conn, DbError, DbKind, DbResult};
use crate::sandbox::operations::cursor::{Cursor, Direction};
use crate::sandbox::operations::filter::Filter;
use crate::sandbox::operations::model::OperationItem;
use crate::sandbox::operations::timeline::Counted;
use sqlx::Row as _;

/// How PostgreSQL spells the shared statements.
pub static DIALECT: Dialect = Dialect {
    kind: DbKind::Postgres,
    id_text: "o.id::text AS id",
    as_id,
    of_organization,
    bound_reference,
    reference,
    substring: "strpos",
    search,
};

fn as_id(placeholder: &str) -> String {
    format!("{placeholder}::uuid")
}

/// A bound id as the log's `uuid` column: NULL (no row) when the text is not a UUID (migration
/// `20270121090000_operation_log_uuid_ids`).
fn bound_reference(placeholder: &str) -> String {
    format!("operation_log_uuid({placeholder})")
}

/// A `uuid` column as the text the items show and the referenced tables' ids are.
fn reference(column: &str) -> String {
    format!("{column}::text")
}

/// The organization's rows: the time index is keyed on the organization's `uuid_hash` (4 bytes,
/// not its 16), so a statement names it as well as the organization itself, which drops another
/// organization's row of the same hash.
fn of_organization(placeholder: &str) -> String {
    let org = bound_reference(placeholder);
    format!("uuid_hash(o.organization_id) = uuid_hash({org}) AND o.organization_id = {org}")
}

/// The text a search's trigram index holds: both columns, lower-cased, in one value.
const SEARCHED_TEXT: &str = "(LOWER(o.target) || ' ' || LOWER(o.detail))";

/// The LIKEs are what the trigram GIN indexes serve; narrowed ([`Narrowing::Grams`]), the
/// indexes are asked only for the rare trigrams (a common trigram's list is long: reading every
/// one of `module42/file1`'s took 110 ms of 2,000,000 rows, its two rarest 10 ms) and the term is
/// checked with `strpos`, which no index serves.
fn search(w: &mut Clause, q: &str, narrowing: Option<&Narrowing>) {
    if let Some(Narrowing::Grams(grams)) = narrowing {
        let likes: Vec<String> = grams
            .iter()
            .map(|g| {
                let p = w.arg(Arg::Text(format!("%{}%", like_escaped(g))));
                format!("{SEARCHED_TEXT} LIKE {p} ESCAPE '\\'")
            })
            .collect();
        w.conditions.push(format!("({})", likes.join(" AND ")));
        let (a, b) = (w.arg(Arg::Text(q.to_string())), w.arg(Arg::Text(q.to_string())));
        w.conditions.push(format!("(strpos(LOWER(o.target), {a}) > 0 OR strpos(LOWER(o.detail), {b}) > 0)"));
        w.narrowed = true;
        return;
    }
    if q.chars().count() >= 3 {
        // The trigram index's candidates (both columns in one value), checked column by column.
        let p = w.arg(Arg::Text(format!("%{}%", like_escaped(q))));
        w.conditions.push(format!("{SEARCHED_TEXT} LIKE {p} ESCAPE '\\'"));
    }
    w.likes(q);
}

/// The SQL of a page ([`super::store::plain_page`]).
pub fn page_sql(
    org_id: &str,
    f: &Filter,
    cursor: Option<&Cursor>,
    fetch: u32,
    narrowing: Option<&Narrowing>,
) -> (String, Vec<Arg>) {
    let mut w = Clause::of(&DIALECT, org_id, f, narrowing);
    if let Some(c) = cursor {
        w.position(c);
    }
    super::store::plain_page(w, org_id, f, cursor, fetch)
}

/// Whether a page statement is prepared once per connection and its plan kept. Not on PostgreSQL:
/// there a kept statement is planned for its values only five times, and then with a generic plan
/// that knows no value. For one session, one agent, one organization among many, that plan guesses
/// a share of the rows from the averages and ANDs the session's rows with all of the
/// organization's from the time index: 10 ms at 100,000 rows of the organization and growing with
/// them, where the session's own plan reads its 50 rows in 0.8 ms. An unnamed statement is planned
/// with its values every time (about 0.2 ms).
const PLAN_IS_KEPT: bool = false;

/// A page ([`page_sql`]), with the rows that arrived above a ranked cursor's top row, read one
/// window of partitions after the other ([`windowed`]) until it is full; a page that [`walks`]
/// reads each window in a transaction of its own that prefers the walk.
pub async fn page(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    cursor: Option<&Cursor>,
    fetch: u32,
) -> DbResult<(Vec<OperationItem>, u64)> {
    windowed(c, org_id, f, narrowing, cursor, fetch, walks(f, narrowing)).await
}

/// Up to `fetch` rows of `f` from `cursor` (or the newest), asked of the partitions' windows in
/// turn ([`partitions::Windows`], from the cursor's time or now), each as wide as the rows found so
/// far say the missing ones are far ([`partitions::next_width`]), each statement asking only for
/// the rows still missing, until full: a read costs the candidates of the partitions it needs,
/// not of the whole log. A window outside the filter's `since`/`until` is not asked. Each
/// window's statement walks the organization's rows when `walk` ([`fetch_walking`]).
async fn windowed(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    cursor: Option<&Cursor>,
    fetch: u32,
    walk: bool,
) -> DbResult<(Vec<OperationItem>, u64)> {
    let bounds = partition_store::bounds(c).await?;
    let direction = cursor.map_or(Direction::After, |c| c.direction);
    let anchor = cursor.map_or_else(crate::db::now_ms, |c| c.created_at);
    let unranked = cursor.map(|c| Cursor { rank: None, ..c.clone() });
    let (mut items, mut arrived) = (Vec::new(), 0);
    let mut windows = partitions::Windows::new(&bounds, anchor, direction);
    // The partitions the windows asked span, and the next window's width in partitions.
    let (mut spanned, mut width) = (0, 1);
    while let Some(window) = windows.next(width) {
        if partitions::outside(window, f.since, f.until) {
            width = partitions::next_width(width, spanned.max(2), 0, 0);
            continue;
        }
        spanned += if spanned == 0 { 1 } else { width };
        // What arrived above a ranked cursor's top row is counted by the statement that reads
        // the page's first row.
        let from = if items.is_empty() { cursor } else { unranked.as_ref() };
        let rest = fetch - items.len() as u32;
        let mut w = Clause::of(&DIALECT, org_id, f, narrowing);
        if let Some(c) = from {
            w.position(c);
        }
        within(&mut w, window);
        let (sql, args) = super::store::plain_page(w, org_id, f, from, rest);
        let (rows, counted) = fetch_walking(c, &sql, &args, walk).await?;
        if items.is_empty() {
            arrived = counted;
        }
        items.extend(rows);
        if items.len() >= fetch as usize {
            break;
        }
        width = partitions::next_width(width, spanned, items.len(), fetch as usize - items.len());
    }
    Ok((items, arrived))
}

/// A window's range of `created_at` as conditions of `w` ([`super::store::window_conditions`]).
fn within(w: &mut Clause, window: Window) {
    w.conditions.extend(super::store::window_conditions(window));
}

/// A page statement's rows, in a transaction of its own that walks the organization's rows when
/// `walk` ([`walk_in`]).
async fn fetch_walking(c: &mut Conn, sql: &str, args: &[Arg], walk: bool) -> DbResult<(Vec<OperationItem>, u64)> {
    if walk {
        let mut tx = sqlx::Connection::begin(&mut *c).await?;
        walk_in(&mut tx).await?;
        let page = fetch_page(&mut tx, sql, args, PLAN_IS_KEPT).await?;
        tx.commit().await?;
        return Ok(page);
    }
    fetch_page(c, sql, args, PLAN_IS_KEPT).await
}

/// A batch of the export: up to `fetch` rows after `after` (or the newest), as [`page`] reads a
/// page (through the partitions' windows), except that every batch that has no rare thing to read
/// from an index walks the organization's time index newest first ([`export_walks`]).
pub async fn export_batch(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    after: Option<&Cursor>,
    fetch: u32,
) -> DbResult<Vec<OperationItem>> {
    Ok(windowed(c, org_id, f, narrowing, after, fetch, export_walks(f, narrowing)).await?.0)
}

/// The timeline's counts ([`super::store::timeline_sql`] over [`super::store::counted_rows`]): the
/// newest `fetch` matching rows asked of the partitions' windows newest first, as a page is, each
/// window's bars added to the others', until `fetch` rows are counted; read as an export batch is,
/// along the organization's time index unless the filters name something rare ([`export_walks`]).
pub async fn timeline(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    (start, width): (i64, i64),
    fetch: u32,
) -> DbResult<Vec<Counted>> {
    let walk = export_walks(f, narrowing);
    let bounds = partition_store::bounds(c).await?;
    let (mut bars, mut read): (Vec<Counted>, i64) = (Vec::new(), 0);
    for window in partitions::windows(&bounds, crate::db::now_ms(), Direction::After) {
        if partitions::outside(window, f.since, f.until) {
            continue;
        }
        let mut w = Clause::of(&DIALECT, org_id, f, narrowing);
        within(&mut w, window);
        let (sql, args) = super::store::counted_rows(w, fetch - read as u32);
        let sql = super::store::timeline_sql(&sql, start, width);
        let counted = if walk {
            let mut tx = sqlx::Connection::begin(&mut *c).await?;
            walk_in(&mut tx).await?;
            let counted = super::store::fetch_timeline(&mut tx, &sql, &args).await?;
            tx.commit().await?;
            counted
        } else {
            super::store::fetch_timeline(c, &sql, &args).await?
        };
        read += counted.iter().map(|b| b.rows).sum::<i64>();
        super::store::add_bars(&mut bars, counted);
        if read >= i64::from(fetch) {
            break;
        }
    }
    Ok(bars)
}

/// Whether a page is walked along the organization's time index ([`walk_in`]): on PostgreSQL,
/// a [`Narrowing::Common`] search without a filter of one session, workspace, connection, agent,
/// run or conversation. With such a filter the planner knows how many rows it names (its
/// statistics of an equality) and reads them from the filters' index; forced to walk, one
/// session's 48 rows among 100,000 of the organization took 60 ms. Those filters are the
/// equality ones (`filter::Param::column`).
pub fn walks(f: &Filter, narrowing: Option<&Narrowing>) -> bool {
    narrowing == Some(&Narrowing::Common) && !f.has_equality()
}

/// Whether a batch of the export walks the organization's time index ([`export_batch`]): unless
/// one session, workspace, connection, agent, run or conversation is named (the planner reads its
/// rows from the filters' index, by their statistics as an equality) or a search is narrowed to
/// its rare trigrams (read from the trigram index and sorted, as a page is). A batch is 1,000
/// rows, so without fresh statistics of a freshly loaded table the planner takes the organization
/// for a few dozen rows and reads and sorts all of its rows from the cursor on (down to `since`)
/// for each batch: 141 ms a batch of 200,000 rows where the walk takes 1.7 ms. The walk is the
/// plan the planner makes with fresh statistics, now made whatever they say.
pub fn export_walks(f: &Filter, narrowing: Option<&Narrowing>) -> bool {
    !f.has_equality() && matches!(narrowing, None | Some(Narrowing::Common))
}

/// The plan of a statement ([`explain`]), in a transaction of its own (rolled back) that walks the
/// organization's rows when `walk`, as [`page`] and [`export_batch`] read them.
pub async fn explain_walking(c: &mut Conn, sql: &str, args: &[Arg], walk: bool) -> DbResult<String> {
    let mut tx = sqlx::Connection::begin(&mut *c).await?;
    if walk {
        walk_in(&mut tx).await?;
    }
    let plan = explain(&mut tx, sql, args).await;
    tx.rollback().await?;
    plan
}

/// In the caller's transaction: the statements that follow walk the organization's rows newest
/// first, neither sorting nor gathering them in a bitmap (an `Incremental Sort` of one
/// millisecond's rows by id is still allowed). Without statistics of a freshly loaded table the
/// planner takes the organization for a few dozen rows and sorts all of them (30,000 rows, 6,000
/// matches, in the plan test); where the rows are known to be many ([`walks`], [`export_walks`]),
/// the walk is the plan whatever the statistics say.
async fn walk_in(c: &mut Conn) -> DbResult<()> {
    sqlx::query("SET LOCAL enable_sort = off").execute(&mut *c).await?;
    sqlx::query("SET LOCAL enable_bitmapscan = off").execute(&mut *c).await?;
    Ok(())
}

/// What a search (`q` of 5 characters or more) asks the trigram indexes: its rarest trigrams, or
/// `None` to ask for the whole term (no or a short `q`, or a term whose every trigram is common),
/// or [`Narrowing::Common`] for a term walked to. Asking for every trigram of a term is slow when
/// some are common (the index walks every one of their lists: `module42/file1` on 2,000,000 rows
/// took 110 ms), while two or three rare ones answer in a few: each trigram is counted among the
/// organization's newest [`PROBE_WINDOW`] rows (bounded work, a millisecond or two in all), then
/// the rarest are taken that do not overlap one taken before (overlapping ones mostly come from the
/// same rows, so they narrow little). The candidates are a superset of the rows holding the term,
/// which is checked on them, so the result is the whole term's.
pub async fn search_narrowing(c: &mut Conn, org_id: &str, f: &Filter, page: u32) -> DbResult<Option<Narrowing>> {
    let Some(q) = f.q.as_deref() else { return Ok(None) };
    if q.chars().count() < 3 {
        return Ok(None);
    }
    let bounds = partition_store::bounds(c).await?;
    if term_is_common(c, &DIALECT, org_id, &q.to_lowercase(), page, &bounds).await? {
        return Ok(Some(Narrowing::Common));
    }
    let Some(mut grams) = super::store::probed_trigrams(q) else { return Ok(None) };
    // pg_trgm makes trigrams of words (letters and digits): a trigram with anything else in it is
    // not one of its own, so only those of letters and digits narrow.
    grams.retain(|(_, g)| g.chars().all(char::is_alphanumeric));
    if grams.is_empty() {
        return Ok(None);
    }
    // A statement a window of partitions, newest first, until PROBE_WINDOW rows are counted: the
    // organization's newest rows along its time index, each trigram counted among them (`strpos`:
    // a literal substring).
    let counts: Vec<String> =
        (0..grams.len()).map(|i| format!("COUNT(*) FILTER (WHERE strpos(s.t, ${}) > 0)", i + 2)).collect();
    let (mut probed, mut holding) = (0i64, vec![0i64; grams.len()]);
    for window in partitions::windows(&bounds, crate::db::now_ms(), Direction::After) {
        let sql = format!(
            "SELECT COUNT(*), {} FROM (SELECT LOWER(o.target) || ' ' || LOWER(o.detail) AS t \
             FROM sandbox_operations o WHERE {}{} \
             ORDER BY o.created_at DESC, o.id DESC LIMIT {}) AS s",
            counts.join(", "),
            of_organization("$1"),
            super::store::window_sql(window),
            PROBE_WINDOW - probed
        );
        let mut query = sqlx::query(&sql).bind(org_id.to_string());
        for (_, g) in &grams {
            query = query.bind(g.clone());
        }
        let row = query.fetch_one(&mut *c).await?;
        probed += row.try_get::<i64, _>(0)?;
        for (i, n) in holding.iter_mut().enumerate() {
            *n += row.try_get::<i64, _>(i + 1)?;
        }
        if probed >= PROBE_WINDOW {
            break;
        }
    }
    let counted = grams.into_iter().zip(holding).map(|((at, gram), n)| (n, at, gram)).collect();
    let chosen = rarest_trigrams(counted, probed);
    Ok((!chosen.is_empty()).then_some(Narrowing::Grams(chosen)))
}

/// The plan of a statement, as text (`EXPLAIN`), for the plan test.
pub async fn explain(c: &mut Conn, sql: &str, args: &[Arg]) -> DbResult<String> {
    let rows: Vec<(String,)> =
        bind_all(sqlx::query_as(&format!("EXPLAIN (FORMAT TEXT) {sql}")), args).fetch_all(c).await?;
    Ok(rows.into_iter().map(|r| r.0).collect::<Vec<_>>().join("\n"))
}

/// Retention: deletes at most `batch` rows created before `cutoff_ms`, by id, in one short
/// statement; the rows it takes are locked `FOR UPDATE SKIP LOCKED`, so replicas sweeping at once
/// share the work. Returns how many it deleted. The rows are named by the partitioned log's key
/// (id, created_at) and the cut-off is repeated outside, so that only the partitions before it
/// are looked in (whole ones are dropped first: `partition_store::drop_oldest_before`).
pub async fn delete_batch_before(c: &mut Conn, cutoff_ms: i64, batch: i64) -> DbResult<u64> {
    let sql = format!(
        "DELETE FROM sandbox_operations WHERE created_at < $1 AND (id, created_at) IN \
         (SELECT id, created_at FROM sandbox_operations WHERE created_at < $2 LIMIT {batch} FOR UPDATE SKIP LOCKED)"
    );
    Ok(sqlx::query(&sql).bind(cutoff_ms).bind(cutoff_ms).execute(c).await?.rows_affected())
}

// ---------------------------------------------------------------------------------------------
// Writing

/// PostgreSQL writes a batch into the log, its references looked up.
pub struct Log;

impl BatchSql for Log {
    fn built(rows: usize) -> String {
        resolved_sql(&values(rows), &Log::id_of("v.id"), ("", ""), bound_reference, "id, created_at")
    }
    fn kept() -> &'static [OnceLock<String>; KEPT_STATEMENTS] {
        static KEPT: [OnceLock<String>; KEPT_STATEMENTS] = [const { OnceLock::new() }; KEPT_STATEMENTS];
        &KEPT
    }
    fn present(list: &str) -> String {
        format!("SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE id IN ({list})")
    }
    fn id_of(value: &str) -> String {
        format!("CAST({value} AS uuid)")
    }
    const BEGIN: Option<&'static str> = None;
}

/// Writes `rows` into the log ([`record_store::tries`]), and when the tries fail, row by row
/// with every optional reference empty.
pub async fn insert_batch(c: &mut Conn, rows: &[Record]) -> Result<(), NotRecorded> {
    let left = match record_store::tries::<Log>(c, rows).await {
        Ok(()) => return Ok(()),
        Err(left) => left,
    };
    let (left, error) = (left.rows, left.error);
    tracing::warn!(error = %error, rows = left.len(), event = "operations_batch_row_by_row", "recording the batch row by row");
    let mut failed = None;
    for row in left.iter() {
        if let Err(e) = insert_bare(c, row).await {
            failed = Some(e);
        }
    }
    let Some(error) = failed else { return Ok(()) };
    match record_store::missing::<Log>(c, &left).await {
        Ok(m) if m.is_empty() => Ok(()),
        Ok(m) => Err(NotRecorded { missing: m.len(), told: true, error }),
        Err(_) => Err(NotRecorded { missing: left.len(), told: false, error }),
    }
}

/// One row with no optional reference: it cannot fail on another row's account.
async fn insert_bare(c: &mut Conn, r: &Record) -> Result<(), DbError> {
    sqlx::query(&format!(
        "INSERT INTO sandbox_operations ({}) \
         SELECT {}, {}, NULL, $3, NULL, NULL, NULL, $4, $5, $6, $7, $8, $9, $10, NULL \
         WHERE EXISTS (SELECT 1 FROM organizations o WHERE o.id = $2) ON CONFLICT (id, created_at) DO NOTHING",
        record_store::COLUMNS,
        Log::id_of("$1"),
        bound_reference("$2")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_statement_is_the_one_built_for_its_number_of_rows() {
        record_store::assert_kept_statements::<Log>();
    }
}
