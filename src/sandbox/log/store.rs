//! SQL for the operation log that both databases share, each spelling its own part through its
//! [`Dialect`] (`sqlite_store.rs`, `postgres_store.rs`). Every statement is one organization's
//! (`organization_id = $1`), a page is one statement: a keyset range on (created_at, id) read in
//! index order and stopped by LIMIT, or a search index's few candidates sorted. No statement counts
//! the matches: a page's position and the total it shows come from the cursor's rank
//! (`operations/cursor.rs`). The migrations `20261204090000_operation_log`,
//! `20261210000000_operation_log_search` (the search's `q`: a trigram index on PostgreSQL, an FTS5
//! trigram table on SQLite) and `20261230090000_operation_log_compact` hold the indexes.
//!
//! Nothing here is reached but through a [`super::Reader`] (`mod.rs`), which only the log store
//! hands out, after its own settling.

pub use super::model::Narrowing;
use crate::db::{like_escaped, Conn, DbKind, DbResult};
use crate::sandbox::operations::cursor::{Cursor, Direction, Rank};
use crate::sandbox::operations::filter::Filter;
use crate::sandbox::operations::model::{OperationItem, AGENT_DELETED, COUNT_CAP};
use crate::sandbox::operations::timeline::Counted;

pub use super::partitions::{windows, Window};

/// The columns of an item after its id ([`Clause::columns`]), each id a row names read as text
/// ([`Dialect::reference`]).
fn columns_after_id(d: &Dialect) -> String {
    let r = d.reference;
    format!(
        "o.created_at AS time, o.operation AS op, o.target, o.ok, o.detail, o.duration_ms, \
         o.session_key, {} AS workspace_id, {} AS connection_id, c.name AS connection_name, {} AS agent_id, \
         COALESCE(a.name, '{AGENT_DELETED}') AS agent_name, {} AS run_id, {} AS conversation_id, \
         (SELECT pu.email FROM runs pr JOIN users pu ON pu.id = pr.user_id \
          JOIN memberships pm ON pm.user_id = pu.id AND pm.organization_id = pr.organization_id \
          WHERE pr.id = {}) AS user_name",
        r("o.workspace_id"),
        r("o.connection_id"),
        r("o.agent_id"),
        r("o.run_id"),
        r("o.conversation_id"),
        r("o.run_id"),
    )
}

/// The log's columns that name another row by its id (a `uuid` on PostgreSQL: migration
/// `20270121090000_operation_log_uuid_ids`); `session_key` is the client's own text.
const REFERENCES: [&str; 5] = ["workspace_id", "connection_id", "agent_id", "run_id", "conversation_id"];

/// How one database spells what the shared statements leave to it.
pub struct Dialect {
    pub kind: DbKind,
    /// `o.id` as text (a `uuid` on PostgreSQL, shown as the same hyphenated, lower-case string).
    pub id_text: &'static str,
    /// A bound id (text) as the id column's type.
    pub as_id: fn(&str) -> String,
    /// The organization's rows, its id bound at the placeholder given.
    pub of_organization: fn(&str) -> String,
    /// A bound id (text) as a reference column's type ([`REFERENCES`], the organization): on
    /// PostgreSQL a `uuid`, NULL when the text is not one (it then matches no row).
    pub bound_reference: fn(&str) -> String,
    /// A reference column as text (what the items show and the joins compare).
    pub reference: fn(&str) -> String,
    /// The function that finds a literal substring (`strpos`, `instr`): no index serves it.
    pub substring: &'static str,
    /// A search's own conditions ([`Clause::search`]) beside the shared ones.
    pub search: fn(&mut Clause, &str, Option<&Narrowing>),
}

/// A value to bind, in the order of the `$n` written.
#[derive(Debug, Clone)]
pub enum Arg {
    Text(String),
    Int(i64),
}

/// A WHERE clause and its arguments (`$1` is the organization).
pub struct Clause {
    pub d: &'static Dialect,
    /// The FROM list: the table `o`, read first (a search of SQLite's trigram index) or alone.
    pub from: &'static str,
    pub conditions: Vec<String>,
    pub args: Vec<Arg>,
    /// A PostgreSQL search narrowed to its rare trigrams: ordered by `created_at + 0`, so that
    /// the planner reads the few candidates from the trigram indexes and sorts them, rather than
    /// walking the organization's rows newest first and testing each (it cannot tell how rare
    /// the term is, only its trigrams).
    pub narrowed: bool,
    /// A SQLite search read from the FTS5 index, whose rowids are time keys
    /// (`sqlite_store::time_keyed_page`).
    pub time_keyed: bool,
}

impl Clause {
    /// A clause whose arguments follow `args` (a statement's earlier ones).
    fn new(d: &'static Dialect, org_id: &str, mut args: Vec<Arg>) -> Clause {
        args.push(Arg::Text(org_id.into()));
        let org = format!("${}", args.len());
        Clause {
            d,
            from: "sandbox_operations o",
            conditions: vec![(d.of_organization)(&org)],
            args,
            narrowed: false,
            time_keyed: false,
        }
    }

    /// Adds `arg` and returns its placeholder.
    pub fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }

    /// `o.<column> = value` (an equality filter, `operations::filter::FILTERS`).
    fn eq(&mut self, column: &str, value: &str) {
        let mut p = self.arg(Arg::Text(value.to_string()));
        if REFERENCES.contains(&column) {
            p = (self.d.bound_reference)(&p);
        }
        self.conditions.push(format!("o.{column} = {p}"));
    }

    pub fn of(d: &'static Dialect, org_id: &str, f: &Filter, narrowing: Option<&Narrowing>) -> Clause {
        Clause::following(Vec::new(), d, org_id, f, narrowing)
    }

    /// [`Clause::of`], its arguments after `args`.
    pub fn following(
        args: Vec<Arg>,
        d: &'static Dialect,
        org_id: &str,
        f: &Filter,
        narrowing: Option<&Narrowing>,
    ) -> Clause {
        let mut w = Clause::new(d, org_id, args);
        for e in &f.equal {
            w.eq(e.column, &e.value);
        }
        if !f.ops.is_empty() {
            let ps: Vec<String> = f.ops.iter().map(|o| w.arg(Arg::Text((*o).into()))).collect();
            w.conditions.push(format!("o.operation IN ({})", ps.join(", ")));
        }
        if f.failed_only {
            // Written as the partial index's predicate, so the planner may use it.
            w.conditions.push("o.ok = 0".into());
        }
        if let Some(q) = &f.q {
            w.search(q, narrowing);
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
    /// `\` literal. A term known to be common ([`Narrowing::Common`]) is found with the substring
    /// function, which no index serves, along the organization's rows; [`Narrowing::Likes`] is the
    /// LIKEs alone, for rows other conditions find; anything else is the database's own search
    /// ([`Dialect::search`]: a trigram index's candidates, then the LIKEs).
    fn search(&mut self, q: &str, narrowing: Option<&Narrowing>) {
        match narrowing {
            Some(Narrowing::Common) => {
                let function = self.d.substring;
                let (a, b) = (self.arg(Arg::Text(q.to_lowercase())), self.arg(Arg::Text(q.to_lowercase())));
                self.conditions
                    .push(format!("({function}(LOWER(o.target), {a}) > 0 OR {function}(LOWER(o.detail), {b}) > 0)"));
            }
            Some(Narrowing::Likes) => self.likes(q),
            _ => (self.d.search)(self, q, narrowing),
        }
    }

    /// The LIKEs that decide a search's rows, `%`, `_` and `\` literal.
    pub fn likes(&mut self, q: &str) {
        let pattern = format!("%{}%", like_escaped(q));
        let (a, b) = (self.arg(Arg::Text(pattern.clone())), self.arg(Arg::Text(pattern)));
        self.conditions.push(format!("(LOWER(o.target) LIKE {a} ESCAPE '\\' OR LOWER(o.detail) LIKE {b} ESCAPE '\\')"));
    }

    /// Rows older (`After`) or newer (`Before`) than the position. Written so that both databases
    /// turn the first comparison into the index range and check the tie on the id.
    pub fn position(&mut self, c: &Cursor) {
        let (t1, t2) = (self.arg(Arg::Int(c.created_at)), self.arg(Arg::Int(c.created_at)));
        let i = self.arg(Arg::Text(c.id.clone()));
        let i = (self.d.as_id)(&i);
        self.conditions.push(match c.direction {
            Direction::After => format!("o.created_at <= {t1} AND (o.created_at < {t2} OR o.id < {i})"),
            Direction::Before => format!("o.created_at >= {t1} AND (o.created_at > {t2} OR o.id > {i})"),
        });
    }

    pub fn sql(&self) -> String {
        self.conditions.join(" AND ")
    }

    /// An item's columns: the id as text, then the rest.
    pub fn columns(&self) -> String {
        format!("{}, {}", self.d.id_text, columns_after_id(self.d))
    }
}

pub fn bind_all<'q, O>(
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

/// `f` without the time bound that `cursor` makes redundant: the rows after an `After` cursor at
/// or before `until` are older than the cursor, so `until` says nothing more (likewise `since`
/// before a `Before` cursor). With both, a statement had two upper bounds on the time, and
/// SQLite's planner then walked the organization's time index through the range instead of one
/// session's rows from its own index (`sqlite_store::page_sql`): an export's batch after a cursor
/// within its range took 1.76 s for the 4,098 rows of a session and a word at 10,000,000 rows
/// (docs/benchmarks.md). Only for the statement's own conditions: a ranked cursor counts the rows
/// that arrived above its top row with the filter's bounds ([`arrivals`]).
pub fn without_bound_behind<'f>(f: &'f Filter, cursor: Option<&Cursor>) -> std::borrow::Cow<'f, Filter> {
    use std::borrow::Cow;
    let Some(c) = cursor else { return Cow::Borrowed(f) };
    match c.direction {
        Direction::After if f.until.is_some_and(|u| c.created_at <= u) => {
            let mut within = f.clone();
            within.until = None;
            Cow::Owned(within)
        }
        Direction::Before if f.since.is_some_and(|s| c.created_at >= s) => {
            let mut within = f.clone();
            within.since = None;
            Cow::Owned(within)
        }
        _ => Cow::Borrowed(f),
    }
}

/// The SQL of a page read along the indexes of the log itself (not SQLite's search index): up to
/// `fetch` rows from `cursor` (or the newest), in the order read — newest first, except a `Before`
/// page, which reads oldest first from its position.
pub fn plain_page(w: Clause, org_id: &str, f: &Filter, cursor: Option<&Cursor>, fetch: u32) -> (String, Vec<Arg>) {
    let time = if w.narrowed { "o.created_at + 0" } else { "o.created_at" };
    let order = match cursor.map(|c| c.direction) {
        Some(Direction::Before) => format!("{time} ASC, o.id ASC"),
        _ => format!("{time} DESC, o.id DESC"),
    };
    let (d, from, conditions, columns) = (w.d, w.from, w.sql(), w.columns());
    let (arrived, args) = match cursor.and_then(|c| c.rank.as_ref()) {
        Some(rank) => arrivals(w.args, d, org_id, f, rank),
        None => ("0".to_string(), w.args),
    };
    let sql = format!(
        "SELECT {columns}, {arrived} AS arrived FROM {from} \
         {} WHERE {conditions} ORDER BY {order} LIMIT {fetch}",
        joins(d)
    );
    (sql, args)
}

/// The joins of a page: the host's and the agent's names.
pub fn joins(d: &Dialect) -> String {
    format!(
        "LEFT JOIN sandbox_connections c ON c.id = {} LEFT JOIN agents a ON a.id = {}",
        (d.reference)("o.connection_id"),
        (d.reference)("o.agent_id")
    )
}

/// The matching rows newer than a ranked cursor's top row, at most 10,001, as a scalar subquery
/// of the page's statement (its arguments after `args`): what arrived since the first page was
/// read, which shifts a deep page's position. They are walked along the organization's time
/// index from the newest down to the top row, never asked of a search index, so the count costs
/// the rows that arrived, not the matches before the page.
pub fn arrivals(args: Vec<Arg>, d: &'static Dialect, org_id: &str, f: &Filter, rank: &Rank) -> (String, Vec<Arg>) {
    let mut a = Clause::following(args, d, org_id, f, Some(&Narrowing::Common));
    a.position(&Cursor::before(rank.top_created_at, &rank.top_id));
    let sql = format!(
        "(SELECT COUNT(*) FROM (SELECT 1 AS one FROM sandbox_operations o WHERE {} LIMIT {}) AS arrivals)",
        a.sql(),
        COUNT_CAP + 1
    );
    (sql, a.args)
}

/// A row of a page and the count of [`arrivals`] (0 without a ranked cursor).
#[derive(sqlx::FromRow)]
pub struct Ranked {
    #[sqlx(flatten)]
    pub item: OperationItem,
    pub arrived: i64,
}

/// Up to `fetch` rows of the statement `sql`, with how many matching rows arrived above a ranked
/// cursor's top row (at most 10,001; 0 when the cursor has no rank or the page is empty).
pub async fn fetch_page(c: &mut Conn, sql: &str, args: &[Arg], kept: bool) -> DbResult<(Vec<OperationItem>, u64)> {
    let rows: Vec<Ranked> = bind_all(sqlx::query_as(sql), args).persistent(kept).fetch_all(c).await?;
    let arrived = rows.first().map_or(0, |r| r.arrived.max(0) as u64);
    Ok((rows.into_iter().map(|r| r.item).collect(), arrived))
}

/// The timeline's statement (`operations/timeline.rs`): the rows of `page`, a page statement of
/// the newest `CAP + 1` matching rows read as a page reads them, counted by bar — `width` ms wide
/// from `start` — with the bar's failures and its oldest row. Its cost is the page's: at most
/// `CAP + 1` rows, whatever the size of the log.
pub fn timeline_sql(page: &str, start: i64, width: i64) -> String {
    format!(
        "SELECT (p.time - {start}) / {width} AS bar, COUNT(*) AS matched, \
         SUM(CASE WHEN p.ok = 0 THEN 1 ELSE 0 END) AS failed, MIN(p.time) AS oldest \
         FROM ({page}) AS p GROUP BY (p.time - {start}) / {width}"
    )
}

/// The rows a timeline counts ([`timeline_sql`]), newest first along the indexes of the log
/// itself: their time and outcome only, joined to nothing (a page's columns and joins cost most of
/// reading `CAP + 1` rows).
pub fn counted_rows(w: Clause, fetch: u32) -> (String, Vec<Arg>) {
    let time = if w.narrowed { "o.created_at + 0" } else { "o.created_at" };
    let sql = format!(
        "SELECT o.created_at AS time, o.ok AS ok FROM {} WHERE {} ORDER BY {time} DESC, o.id DESC LIMIT {fetch}",
        w.from,
        w.sql()
    );
    (sql, w.args)
}

/// The rows of [`timeline_sql`].
pub async fn fetch_timeline(c: &mut Conn, sql: &str, args: &[Arg]) -> DbResult<Vec<Counted>> {
    Ok(bind_all(sqlx::query_as(sql), args).persistent(false).fetch_all(c).await?)
}

/// The time of the organization's oldest row (one index probe a window): where "any time" begins.
/// `bounds` are the partitions' on PostgreSQL ([`super::partition_store::bounds`]), none on SQLite:
/// the windows are asked oldest first until one holds a row.
pub async fn oldest(c: &mut Conn, d: &Dialect, org_id: &str, bounds: &[i64]) -> DbResult<Option<i64>> {
    for window in windows(bounds, i64::MIN, Direction::Before) {
        let sql = format!(
            "SELECT o.created_at FROM sandbox_operations o WHERE {}{} ORDER BY o.created_at ASC LIMIT 1",
            (d.of_organization)("$1"),
            window_sql(window)
        );
        let row: Option<(i64,)> = sqlx::query_as(&sql).bind(org_id.to_string()).fetch_optional(&mut *c).await?;
        if let Some((at,)) = row {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

/// A window's range of `created_at` ([`super::partitions::windows`]) as conditions to AND to a
/// statement's (its bounds are integers of the registry, written into the statement so that the
/// planner prunes the other partitions); empty for the whole log.
pub fn window_conditions((from, to): Window) -> Vec<String> {
    let from = from.map(|from| format!("o.created_at >= {from}"));
    let to = to.map(|to| format!("o.created_at < {to}"));
    from.into_iter().chain(to).collect()
}

/// [`window_conditions`] as ` AND …` to append to a WHERE clause.
pub fn window_sql(window: Window) -> String {
    window_conditions(window).iter().map(|c| format!(" AND {c}")).collect()
}

/// Adds a window's bars to those counted before ([`timeline_sql`]'s rows): rows and failures
/// summed by bar, the oldest row kept.
pub fn add_bars(bars: &mut Vec<Counted>, more: Vec<Counted>) {
    for m in more {
        match bars.iter_mut().find(|b| b.bar == m.bar) {
            Some(b) => {
                b.rows += m.rows;
                b.failed += m.failed;
                b.oldest = b.oldest.min(m.oldest);
            }
            None => bars.push(m),
        }
    }
}

/// Newest rows of the trigram index a search counts each of its trigrams in.
pub const PROBE_WINDOW: i64 = 2_000;
/// A term whose page is found within this many of the organization's rows is always walked to,
/// not asked of an index: for the default page (50 rows and one more) a term in 1 in 100 rows.
const COMMON_WALK: i64 = 5_100;
/// The most rows a walk is expected to read: a term rarer than that is asked of the index.
const WALK_MAX: f64 = 40_000.0;
/// What reading one candidate row the index names costs, in rows walked: the candidates are
/// scattered over the table (one block each), a walk reads the organization's rows in the order
/// they were written. Measured on PostgreSQL at 100,000 rows: about 4 µs a candidate, 0.7 µs a
/// row walked.
const CANDIDATE_COST: f64 = 6.0;
/// Candidates the index names for each match: the term's trigrams are found in other rows too,
/// and in every organization's rows.
const CANDIDATES_PER_MATCH: f64 = 2.0;

/// Whether a term held by `holding` of the organization's `probed` newest rows is walked to
/// along the organization's rows rather than asked of a trigram index, for an organization of
/// about `rows` rows and a read of `page` rows (a page's limit and one more, an export's batch).
/// A walk reads about the page divided by the term's share, whatever the size of the log; the
/// index reads every candidate, a number that grows with the log. So the larger the
/// organization, the rarer the term that is still walked to (for the default page, at 1,000,000
/// rows a term in 0.3 % of them: a page within 17,000 rows, against 6,000 scattered candidates;
/// at 20,000 rows only one in 1 % or more), and the larger the page, the more common.
fn walked_to(probed: i64, holding: i64, rows: f64, page: u32) -> bool {
    if probed <= 0 || holding <= 0 {
        return false;
    }
    if i64::from(page) * probed <= COMMON_WALK * holding {
        return true;
    }
    let share = holding as f64 / probed as f64;
    let walk = f64::from(page) / share;
    walk <= WALK_MAX && walk <= share * rows * CANDIDATES_PER_MATCH * CANDIDATE_COST
}

/// Trigrams a search asks the index for, at most.
const SEARCH_TRIGRAMS: usize = 3;
/// Trigrams of a term counted, at most (a term has up to 198).
const PROBES: usize = 32;

/// A term's trigrams to probe: at most [`PROBES`] of them, evenly spread, each once, with its
/// position in the term (`None` for a term shorter than 5 characters, which is not narrowed).
pub fn probed_trigrams(q: &str) -> Option<Vec<(usize, String)>> {
    let chars: Vec<char> = q.chars().collect();
    if chars.len() < 5 {
        return None;
    }
    let step = (chars.len() - 2).div_ceil(PROBES);
    let mut grams: Vec<(usize, String)> = Vec::new();
    for (at, gram) in chars.windows(3).enumerate().step_by(step) {
        let gram: String = gram.iter().collect();
        if !grams.iter().any(|(_, g)| *g == gram) {
            grams.push((at, gram));
        }
    }
    Some(grams)
}

/// Whether `term` (lower-cased) is walked to for a read of `page` rows ([`walked_to`]), from its
/// share of the organization's newest [`PROBE_WINDOW`] rows and the organization's size, estimated
/// from the time those rows span against the time back to its oldest row ([`oldest`]). The newest
/// rows are read through the windows of the partitions' `bounds` (none on SQLite), newest first,
/// until there are enough.
pub async fn term_is_common(
    c: &mut Conn,
    d: &Dialect,
    org_id: &str,
    term: &str,
    page: u32,
    bounds: &[i64],
) -> DbResult<bool> {
    let function = d.substring;
    let (mut probed, mut holding, mut window_oldest, mut newest) = (0i64, 0i64, 0i64, None);
    for window in windows(bounds, crate::db::now_ms(), Direction::After) {
        let sql = format!(
            "SELECT COUNT(*), COALESCE(SUM(CASE WHEN {function}(s.t, $2) > 0 THEN 1 ELSE 0 END), 0), \
             COALESCE(MIN(s.created_at), 0), COALESCE(MAX(s.created_at), 0) FROM \
             (SELECT LOWER(o.target) || ' ' || LOWER(o.detail) AS t, o.created_at FROM sandbox_operations o \
             WHERE {}{} ORDER BY o.created_at DESC, o.id DESC LIMIT {}) AS s",
            (d.of_organization)("$1"),
            window_sql(window),
            PROBE_WINDOW - probed
        );
        let (n, h, low, high): (i64, i64, i64, i64) =
            sqlx::query_as(&sql).bind(org_id.to_string()).bind(term.to_string()).fetch_one(&mut *c).await?;
        if n > 0 {
            window_oldest = low;
            newest.get_or_insert(high);
        }
        (probed, holding) = (probed + n, holding + h);
        if probed >= PROBE_WINDOW {
            break;
        }
    }
    let newest = newest.unwrap_or(0);
    if holding == 0 || i64::from(page) * probed <= COMMON_WALK * holding {
        return Ok(walked_to(probed, holding, probed as f64, page));
    }
    let rows = if probed < PROBE_WINDOW {
        probed as f64
    } else {
        let oldest = oldest(c, d, org_id, bounds).await?.unwrap_or(window_oldest);
        probed as f64 * (newest - oldest) as f64 / (newest - window_oldest).max(1) as f64
    };
    Ok(walked_to(probed, holding, rows, page))
}

/// The rarest trigrams (count among `probed` rows, position, trigram) that do not overlap;
/// none when even the rarest is held by a quarter of the probed rows (nothing rare to narrow by).
pub fn rarest_trigrams(mut counted: Vec<(i64, usize, String)>, probed: i64) -> Vec<String> {
    counted.sort();
    let mut chosen: Vec<(usize, String)> = Vec::new();
    for (n, at, gram) in counted {
        if chosen.len() == SEARCH_TRIGRAMS || n * 4 > probed {
            break;
        }
        if chosen.iter().all(|(other, _)| other.abs_diff(at) >= 3) {
            chosen.push((at, gram));
        }
    }
    chosen.into_iter().map(|(_, g)| g).collect()
}

/// Whether the organization's log holds `op` (one index probe).
pub async fn has_operation(c: &mut Conn, d: &Dialect, org_id: &str, op: &str) -> DbResult<bool> {
    let sql =
        format!("SELECT 1 FROM sandbox_operations o WHERE {} AND o.operation = $2 LIMIT 1", (d.of_organization)("$1"));
    let row: Option<(i64,)> = sqlx::query_as(&sql).bind(org_id).bind(op).fetch_optional(c).await?;
    Ok(row.is_some())
}

/// How many of `org_id`'s recorded operations failed at or after `since` (epoch milliseconds):
/// Health's count.
pub async fn failed_since(c: &mut Conn, d: &Dialect, org_id: &str, since: i64) -> DbResult<i64> {
    let sql = format!(
        "SELECT COUNT(*) FROM sandbox_operations o WHERE {} AND o.ok = 0 AND o.created_at >= $2",
        (d.of_organization)("$1")
    );
    let (n,): (i64,) = sqlx::query_as(&sql).bind(org_id).bind(since).fetch_one(c).await?;
    Ok(n)
}

/// Whether the workspace had a write, mkdir, remove or command recorded after `since`: the
/// snapshot rule "when changed".
pub async fn changed_since(c: &mut Conn, d: &Dialect, org_id: &str, workspace_id: &str, since: i64) -> DbResult<bool> {
    let sql = format!(
        "SELECT o.operation FROM sandbox_operations o WHERE {} AND o.workspace_id = {} AND o.created_at >= $3 \
         AND o.operation IN ('write', 'mkdir', 'remove', 'execute') LIMIT 1",
        (d.of_organization)("$1"),
        (d.bound_reference)("$2")
    );
    let row: Option<(String,)> =
        sqlx::query_as(&sql).bind(org_id).bind(workspace_id).bind(since).fetch_optional(c).await?;
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
        assert_eq!(rarest_trigrams(grams, PROBE_WINDOW), ["42/", "le1"]);
    }

    #[test]
    fn a_term_of_common_trigrams_only_is_asked_as_a_phrase() {
        assert!(rarest_trigrams(counted(&[(1600, "abc"), (900, "bcd"), (501, "cde")]), PROBE_WINDOW).is_empty());
        assert_eq!(rarest_trigrams(counted(&[(160, "abc"), (90, "bcd"), (51, "cde")]), 200), Vec::<String>::new());
        assert!(rarest_trigrams(Vec::new(), PROBE_WINDOW).is_empty());
    }

    #[test]
    fn a_term_is_walked_to_where_a_page_of_it_is_nearer_than_its_candidates_are_many() {
        let page = crate::sandbox::log::model::DEFAULT_PAGE;
        // 1 in 100 or more: always, however small the organization.
        assert!(walked_to(2_000, 20, 2_000.0, page));
        assert!(walked_to(500, 5, 500.0, page));
        // Never a term that none of the newest rows hold, nor an empty organization.
        assert!(!walked_to(2_000, 0, 1e9, page));
        assert!(!walked_to(0, 0, 0.0, page));
        // 0.5 %: asked of the index in an organization of 20,000 rows (about 200 candidates),
        // walked to at 200,000 and 1,000,000 (a page within 10,000 rows).
        assert!(!walked_to(2_000, 10, 20_000.0, page));
        assert!(walked_to(2_000, 10, 200_000.0, page));
        assert!(walked_to(2_000, 10, 1_000_000.0, page));
        // 0.1 %: a page 51,000 rows away is too far, however large the organization.
        assert!(!walked_to(2_000, 2, 1_000_000.0, page));
        assert!(!walked_to(2_000, 2, 1e9, page));
    }

    #[test]
    fn the_walk_is_sized_by_the_rows_read() {
        // 0.5 % at 1,000,000 rows: a page of 50 is within 10,000 rows (walked to), a page of 200
        // within 40,200 (past the walk's bound: asked of the index), an export's batch of 1,000
        // within 200,000.
        assert!(walked_to(2_000, 10, 1_000_000.0, 51));
        assert!(!walked_to(2_000, 10, 1_000_000.0, 201));
        assert!(!walked_to(2_000, 10, 1_000_000.0, 1_000));
        // 1 %: always walked to for a page of 50; for a batch of 1,000 (100,000 rows away) only
        // where the index would read more.
        assert!(walked_to(2_000, 20, 2_000.0, 51));
        assert!(!walked_to(2_000, 20, 2_000.0, 1_000));
        // 17 %: a batch of 1,000 is within 6,000 rows, nearer than a large log's candidates.
        assert!(walked_to(2_000, 340, 1_000_000.0, 1_000));
    }

    #[test]
    fn at_most_three_trigrams_are_asked() {
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
        assert_eq!(rarest_trigrams(grams, PROBE_WINDOW), ["a\"b", "abc", "def"]);
    }
}
