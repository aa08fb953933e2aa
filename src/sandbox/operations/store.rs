//! SQL for the operation log. Every statement is one organization's (`organization_id = $1`),
//! pages are keyset ranges on (created_at, id) read in index order and stopped by LIMIT, counts
//! stop at 10,001 rows. The migration `20261204090000_operation_log` holds the indexes;
//! `20261210000000_operation_log_search` the search's (`q`): trigram GIN indexes on PostgreSQL,
//! an FTS5 trigram table on SQLite.

use super::cursor::{Cursor, Direction};
use super::filter::Filter;
use super::model::{OperationItem, AGENT_DELETED, COUNT_CAP};
use crate::db::{Conn, DbKind, DbResult};

const COLUMNS: &str = "o.id, o.created_at AS time, o.operation AS op, o.target, o.ok, o.detail, o.duration_ms, \
     o.session_key, o.workspace_id, o.connection_id, c.name AS connection_name, o.agent_id, \
     COALESCE(a.name, 'agent deleted') AS agent_name, o.run_id, o.conversation_id";

/// A value to bind, in the order of the `$n` written.
#[derive(Debug, Clone)]
pub enum Arg {
    Text(String),
    Int(i64),
}

/// A WHERE clause and its arguments (`$1` is the organization).
struct Clause {
    /// The FROM list: the table `o`, read first (a search of SQLite's trigram index) or alone.
    from: &'static str,
    conditions: Vec<String>,
    args: Vec<Arg>,
}

impl Clause {
    fn new(org_id: &str) -> Clause {
        Clause {
            from: "sandbox_operations o",
            conditions: vec!["o.organization_id = $1".into()],
            args: vec![Arg::Text(org_id.into())],
        }
    }

    /// Adds `arg` and returns its placeholder.
    fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }

    fn eq(&mut self, column: &str, value: &Option<String>) {
        if let Some(v) = value {
            let p = self.arg(Arg::Text(v.clone()));
            self.conditions.push(format!("{column} = {p}"));
        }
    }

    fn of(kind: DbKind, org_id: &str, f: &Filter, fts: Option<&str>) -> Clause {
        let mut w = Clause::new(org_id);
        w.eq("o.session_key", &f.session_key);
        w.eq("o.workspace_id", &f.workspace_id);
        w.eq("o.connection_id", &f.connection_id);
        w.eq("o.agent_id", &f.agent_id);
        w.eq("o.run_id", &f.run_id);
        w.eq("o.conversation_id", &f.conversation_id);
        if !f.ops.is_empty() {
            let ps: Vec<String> = f.ops.iter().map(|o| w.arg(Arg::Text((*o).into()))).collect();
            w.conditions.push(format!("o.operation IN ({})", ps.join(", ")));
        }
        if f.failed_only {
            // Written as the partial index's predicate, so the planner may use it.
            w.conditions.push("o.ok = 0".into());
        }
        if let Some(q) = &f.q {
            w.search(kind, q, fts);
        }
        if let Some(s) = f.since {
            let p = w.arg(Arg::Int(s));
            w.conditions.push(format!("o.created_at >= {p}"));
        }
        if let Some(u) = f.until {
            let p = w.arg(Arg::Int(u));
            w.conditions.push(format!("o.created_at <= {p}"));
        }
        w
    }

    /// `q`: the rows whose lower-cased target or detail holds `q` (lower-cased), `%`, `_` and
    /// `\` literal. On PostgreSQL the LIKEs are what the trigram GIN indexes serve. On SQLite a
    /// term of 3 characters or more first picks its candidate rows from the FTS5 trigram index —
    /// `fts` (a few of its rarest trigrams, [`search_expression`]) or else the term as a quoted
    /// phrase (a substring, no query syntax) — and the LIKEs recheck them, so the result is exact;
    /// a shorter term has no trigram and is only the LIKEs, along the organization's index.
    fn search(&mut self, kind: DbKind, q: &str, fts: Option<&str>) {
        if kind == DbKind::Sqlite && q.chars().count() >= 3 {
            // CROSS JOIN: SQLite reads the matches first (left to right), then each row by rowid;
            // it never walks the organization's rows to test them against the index's.
            self.from = "sandbox_operations_search CROSS JOIN sandbox_operations o";
            let p = self.arg(Arg::Text(fts.map_or_else(|| fts_phrase(q), str::to_string)));
            self.conditions
                .push(format!("sandbox_operations_search MATCH {p} AND o.rowid = sandbox_operations_search.rowid"));
        }
        let pattern = format!("%{}%", like_escaped(q));
        let (a, b) = (self.arg(Arg::Text(pattern.clone())), self.arg(Arg::Text(pattern)));
        self.conditions.push(format!("(LOWER(o.target) LIKE {a} ESCAPE '\\' OR LOWER(o.detail) LIKE {b} ESCAPE '\\')"));
    }

    /// Rows older (`After`) or newer (`Before`) than the position. Written so that both databases
    /// turn the first comparison into the index range and check the tie on the id.
    fn position(&mut self, c: &Cursor) {
        let (t1, t2, i) =
            (self.arg(Arg::Int(c.created_at)), self.arg(Arg::Int(c.created_at)), self.arg(Arg::Text(c.id.clone())));
        self.conditions.push(match c.direction {
            Direction::After => format!("o.created_at <= {t1} AND (o.created_at < {t2} OR o.id < {i})"),
            Direction::Before => format!("o.created_at >= {t1} AND (o.created_at > {t2} OR o.id > {i})"),
        });
    }

    fn sql(&self) -> String {
        self.conditions.join(" AND ")
    }
}

fn bind_all<'q, O>(
    mut q: sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>>,
    args: &[Arg],
) -> sqlx::query::QueryAs<'q, sqlx::Any, O, sqlx::any::AnyArguments<'q>> {
    for a in args {
        q = match a {
            Arg::Text(s) => q.bind(s.clone()),
            Arg::Int(n) => q.bind(*n),
        };
    }
    q
}

/// `text` matched literally by `LIKE … ESCAPE '\'`.
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

/// `text` as one FTS5 phrase: in double quotes, each double quote doubled.
pub fn fts_phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The SQL of a page: up to `fetch` rows from `cursor` (or the newest), in the order read —
/// newest first, except a `Before` page, which reads oldest first from its position.
pub fn page_sql(kind: DbKind, org_id: &str, f: &Filter, cursor: Option<&Cursor>, fetch: u32) -> (String, Vec<Arg>) {
    page_sql_matching(kind, org_id, f, cursor, fetch, None)
}

/// [`page_sql`] with the trigram index asked `fts` ([`search_expression`]) instead of the phrase.
pub fn page_sql_matching(
    kind: DbKind,
    org_id: &str,
    f: &Filter,
    cursor: Option<&Cursor>,
    fetch: u32,
    fts: Option<&str>,
) -> (String, Vec<Arg>) {
    let mut w = Clause::of(kind, org_id, f, fts);
    if let Some(c) = cursor {
        w.position(c);
    }
    let order = match cursor.map(|c| c.direction) {
        Some(Direction::Before) => "o.created_at ASC, o.id ASC",
        _ => "o.created_at DESC, o.id DESC",
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM {} \
         LEFT JOIN sandbox_connections c ON c.id = o.connection_id \
         LEFT JOIN agents a ON a.id = o.agent_id \
         WHERE {} ORDER BY {order} LIMIT {fetch}",
        w.from,
        w.sql()
    );
    debug_assert!(COLUMNS.contains(AGENT_DELETED));
    (sql, w.args)
}

/// Up to `fetch` rows, in the order [`page_sql`] reads them; `fts` is the filter's
/// [`search_expression`] (asked once for a page and its counts).
pub async fn page(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    fts: Option<&str>,
    cursor: Option<&Cursor>,
    fetch: u32,
) -> DbResult<Vec<OperationItem>> {
    let (sql, args) = page_sql_matching(kind_of(c), org_id, f, cursor, fetch, fts);
    Ok(bind_all(sqlx::query_as(&sql), &args).fetch_all(c).await?)
}

/// The SQL of a bounded count: the matching rows (newer than `newer_than`, if given), at most 10,001.
/// On PostgreSQL the rows are counted newest first, the page's order: the count is then a walk of
/// the filter's index from its newest entry, index-only (the table is read only for `q`). Without
/// the order the planner takes a sequential scan when the organization holds most of the table,
/// which reads the heap through a small ring buffer and costs as much as the rows of other
/// organizations it passes first. SQLite walks the index without being asked, and for `q` counts
/// the trigram index's matches without sorting them.
pub fn count_sql(kind: DbKind, org_id: &str, f: &Filter, newer_than: Option<&Cursor>) -> (String, Vec<Arg>) {
    count_sql_matching(kind, org_id, f, newer_than, None)
}

/// [`count_sql`] with the trigram index asked `fts` ([`search_expression`]) instead of the phrase.
pub fn count_sql_matching(
    kind: DbKind,
    org_id: &str,
    f: &Filter,
    newer_than: Option<&Cursor>,
    fts: Option<&str>,
) -> (String, Vec<Arg>) {
    let mut w = Clause::of(kind, org_id, f, fts);
    if let Some(c) = newer_than {
        w.position(c);
    }
    // Several `op`s are several ranges of sandbox_operations_org_operation: counted unordered,
    // they stay index-only (ordered, the planner would read the table along org_time).
    let order = match kind {
        DbKind::Postgres if f.ops.len() <= 1 => " ORDER BY o.created_at DESC, o.id DESC",
        _ => "",
    };
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 AS one FROM {} WHERE {}{order} LIMIT {}) AS counted",
        w.from,
        w.sql(),
        COUNT_CAP + 1
    );
    (sql, w.args)
}

/// The bounded count of [`count_sql`]; `fts` as for [`page`].
pub async fn count(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    fts: Option<&str>,
    newer_than: Option<&Cursor>,
) -> DbResult<u64> {
    let (sql, args) = count_sql_matching(kind_of(c), org_id, f, newer_than, fts);
    let (n,): (i64,) = bind_all(sqlx::query_as(&sql), &args).fetch_one(c).await?;
    Ok(n.max(0) as u64)
}

/// Newest rows of the trigram index a search counts each of its trigrams in.
const PROBE_WINDOW: i64 = 2_000;
/// Trigrams a search asks the index for, at most.
const SEARCH_TRIGRAMS: usize = 3;
/// Trigrams of a term counted, at most (a term has up to 198).
const PROBES: usize = 32;

/// SQLite: what a search (`q` of 5 characters or more) asks the FTS5 trigram index — its rarest
/// trigrams, joined by AND — or `None` to ask for the whole term as a phrase (PostgreSQL, no or a
/// short `q`, or a term whose every trigram is common). A phrase of common trigrams is slow to
/// answer (FTS5 walks every one of their lists: `module42/file1` on 2,000,000 rows took 170 ms),
/// while two or three rare ones answer in a few: each trigram is counted among the newest
/// [`PROBE_WINDOW`] rows of the index (bounded work, about a millisecond in all), then the
/// rarest are taken that do not overlap one taken before (overlapping ones mostly come from the
/// same rows, so they narrow little). The candidates are a superset of the rows holding the
/// term; the LIKEs recheck them, so the result is the phrase's.
pub async fn search_expression(c: &mut Conn, f: &Filter) -> DbResult<Option<String>> {
    let Some(q) = f.q.as_deref() else { return Ok(None) };
    let chars: Vec<char> = q.chars().collect();
    if kind_of(c) != DbKind::Sqlite || chars.len() < 5 {
        return Ok(None);
    }
    let (newest,): (Option<i64>,) =
        sqlx::query_as("SELECT MAX(rowid) FROM sandbox_operations").fetch_one(&mut *c).await?;
    let from = newest.unwrap_or(0) - PROBE_WINDOW;
    let mut counted: Vec<(i64, usize, String)> = Vec::new();
    // A long term is probed at evenly spread trigrams, at most PROBES of them.
    let step = (chars.len() - 2).div_ceil(PROBES);
    for (at, gram) in chars.windows(3).enumerate().step_by(step) {
        let gram: String = gram.iter().collect();
        if counted.iter().any(|(_, _, g)| *g == gram) {
            continue;
        }
        let (n,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM sandbox_operations_search WHERE sandbox_operations_search MATCH $1 AND rowid > $2",
        )
        .bind(fts_phrase(&gram))
        .bind(from)
        .fetch_one(&mut *c)
        .await?;
        counted.push((n, at, gram));
    }
    Ok(rarest_trigrams(counted))
}

/// The rarest trigrams (count, position, trigram) that do not overlap, joined by AND; `None`
/// when even the rarest is held by a quarter of the probed rows (nothing rare to narrow by).
fn rarest_trigrams(mut counted: Vec<(i64, usize, String)>) -> Option<String> {
    counted.sort();
    let mut chosen: Vec<(usize, String)> = Vec::new();
    for (n, at, gram) in counted {
        if chosen.len() == SEARCH_TRIGRAMS || n * 4 > PROBE_WINDOW {
            break;
        }
        if chosen.iter().all(|(other, _)| other.abs_diff(at) >= 3) {
            chosen.push((at, gram));
        }
    }
    if chosen.is_empty() {
        return None;
    }
    Some(chosen.iter().map(|(_, g)| fts_phrase(g)).collect::<Vec<_>>().join(" AND "))
}

/// The database `c` talks to.
fn kind_of(c: &Conn) -> DbKind {
    if c.backend_name().eq_ignore_ascii_case("sqlite") {
        DbKind::Sqlite
    } else {
        DbKind::Postgres
    }
}

/// The plan of a statement, as text, for the plan test (`EXPLAIN QUERY PLAN` on SQLite,
/// `EXPLAIN` on PostgreSQL).
pub async fn explain(c: &mut Conn, kind: DbKind, sql: &str, args: &[Arg]) -> DbResult<String> {
    match kind {
        DbKind::Sqlite => {
            let rows: Vec<(i64, i64, i64, String)> =
                bind_all(sqlx::query_as(&format!("EXPLAIN QUERY PLAN {sql}")), args).fetch_all(c).await?;
            Ok(rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n"))
        }
        DbKind::Postgres => {
            let rows: Vec<(String,)> =
                bind_all(sqlx::query_as(&format!("EXPLAIN (FORMAT TEXT) {sql}")), args).fetch_all(c).await?;
            Ok(rows.into_iter().map(|r| r.0).collect::<Vec<_>>().join("\n"))
        }
    }
}

/// Whether the organization's log holds `op` (one index probe).
pub async fn has_operation(c: &mut Conn, org_id: &str, op: &str) -> DbResult<bool> {
    let row: Option<(i64,)> =
        sqlx::query_as("SELECT 1 FROM sandbox_operations WHERE organization_id = $1 AND operation = $2 LIMIT 1")
            .bind(org_id)
            .bind(op)
            .fetch_optional(c)
            .await?;
    Ok(row.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(grams: &[(i64, &str)]) -> Vec<(i64, usize, String)> {
        grams.iter().enumerate().map(|(at, (n, g))| (*n, at, g.to_string())).collect()
    }

    #[test]
    fn a_search_asks_for_its_rarest_trigrams_that_do_not_overlap() {
        // `module42/file1` as counted among the newest 2,000 rows of the benchmark's log.
        let grams = counted(&[
            (1680, "mod"),
            (1680, "odu"),
            (1680, "dul"),
            (1680, "ule"),
            (377, "le4"),
            (44, "e42"),
            (17, "42/"),
            (185, "2/f"),
            (1680, "/fi"),
            (1680, "fil"),
            (1680, "ile"),
            (385, "le1"),
        ]);
        // `42/` first; `e42`, `2/f` and `le4` overlap it; `le1` does not; the rest are common.
        assert_eq!(rarest_trigrams(grams).as_deref(), Some(r#""42/" AND "le1""#));
    }

    #[test]
    fn a_term_of_common_trigrams_only_is_asked_as_a_phrase() {
        assert_eq!(rarest_trigrams(counted(&[(1600, "abc"), (900, "bcd"), (501, "cde")])), None);
        assert_eq!(rarest_trigrams(Vec::new()), None);
    }

    #[test]
    fn at_most_three_trigrams_are_asked_and_quotes_stay_literal() {
        let grams = counted(&[
            (1, "a\"b"),
            (9, "x"),
            (9, "y"),
            (2, "abc"),
            (9, "z"),
            (9, "w"),
            (3, "def"),
            (9, "u"),
            (9, "v"),
            (4, "ghi"),
        ]);
        assert_eq!(rarest_trigrams(grams).as_deref(), Some(r#""a""b" AND "abc" AND "def""#));
    }
}
