//! SQL for the operation log. Every statement is one organization's (`organization_id = $1`),
//! a page is one statement: a keyset range on (created_at, id) read in index order and stopped by
//! LIMIT, or a search index's few candidates sorted. No statement counts the matches: a page's
//! position and the total it shows come from the cursor's rank (`cursor.rs`). The migrations
//! `20261204090000_operation_log`, `20261210000000_operation_log_search` (the search's `q`: a
//! trigram index on PostgreSQL, an FTS5 trigram table on SQLite) and
//! `20261230090000_operation_log_compact` hold the indexes.

use super::cursor::{Cursor, Direction, Rank};
use super::filter::Filter;
use super::model::{OperationItem, AGENT_DELETED, COUNT_CAP};
use sqlx::Row as _;

use crate::db::{like_escaped, Conn, DbKind, DbResult};

/// The columns of an item after its id ([`columns`]).
const COLUMNS_AFTER_ID: &str = "o.created_at AS time, o.operation AS op, o.target, o.ok, o.detail, o.duration_ms, \
     o.session_key, o.workspace_id, o.connection_id, c.name AS connection_name, o.agent_id, \
     COALESCE(a.name, 'agent deleted') AS agent_name, o.run_id, o.conversation_id";

/// An item's columns: the id as text (a `uuid` on PostgreSQL, shown as the same hyphenated,
/// lower-case string), then the rest.
fn columns(kind: DbKind) -> String {
    format!("{}, {COLUMNS_AFTER_ID}", id_text(kind))
}

/// `o.id` as text.
fn id_text(kind: DbKind) -> &'static str {
    match kind {
        DbKind::Postgres => "o.id::text AS id",
        DbKind::Sqlite => "o.id",
    }
}

/// A bound id (text) as the id column's type.
fn as_id(kind: DbKind, placeholder: &str) -> String {
    match kind {
        DbKind::Postgres => format!("{placeholder}::uuid"),
        DbKind::Sqlite => placeholder.to_string(),
    }
}

/// The organization's rows: on PostgreSQL the time index is keyed on the organization's
/// `hashtext` (4 bytes, not its 37; migration `20261230090000_operation_log_compact`), so a
/// statement names it as well as the organization itself, which drops another organization's
/// row of the same hash.
fn of_organization(kind: DbKind, placeholder: &str) -> String {
    match kind {
        DbKind::Postgres => {
            format!("hashtext(o.organization_id) = hashtext({placeholder}) AND o.organization_id = {placeholder}")
        }
        DbKind::Sqlite => format!("o.organization_id = {placeholder}"),
    }
}

/// The text a PostgreSQL search's trigram index holds: both columns, lower-cased, in one value.
const SEARCHED_TEXT: &str = "(LOWER(o.target) || ' ' || LOWER(o.detail))";

/// A value to bind, in the order of the `$n` written.
#[derive(Debug, Clone)]
pub enum Arg {
    Text(String),
    Int(i64),
}

/// What a search (`q`) asks a trigram index for, found once per request by [`search_narrowing`]:
/// a few of the term's rarest trigrams. The rows holding all of them are a superset of the rows
/// holding the term, which is then checked on those rows only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrowing {
    /// SQLite: an FTS5 expression of the trigrams, joined by AND.
    Fts(String),
    /// PostgreSQL: the trigrams, each asked of the GIN indexes as `LIKE '%…%'`.
    Grams(Vec<String>),
    /// Either database: the term itself is frequent among the organization's newest rows, so a
    /// page fills after a short walk of the organization's rows newest first. The term is then
    /// written so that no trigram index can serve it: asked of an index, a frequent term's
    /// matches are all read and sorted before the first row is known (on PostgreSQL without
    /// fresh statistics the planner cannot tell, and took 1.8 s over 360,000 rows for a common
    /// word until `ANALYZE` ran).
    Common,
    /// Either database: the term checked with the LIKEs alone, no index asked; for rows another
    /// condition finds (not a search's own choice).
    Likes,
}

/// A WHERE clause and its arguments (`$1` is the organization).
struct Clause {
    kind: DbKind,
    /// The FROM list: the table `o`, read first (a search of SQLite's trigram index) or alone.
    from: &'static str,
    conditions: Vec<String>,
    args: Vec<Arg>,
    /// A PostgreSQL search narrowed to its rare trigrams: ordered by `created_at + 0`, so that
    /// the planner reads the few candidates from the trigram indexes and sorts them, rather than
    /// walking the organization's rows newest first and testing each (it cannot tell how rare
    /// the term is, only its trigrams).
    narrowed: bool,
    /// A SQLite search read from the FTS5 index, whose rowids are time keys
    /// ([`time_keyed_page`]).
    time_keyed: bool,
}

impl Clause {
    /// A clause whose arguments follow `args` (a statement's earlier ones).
    fn new(kind: DbKind, org_id: &str, mut args: Vec<Arg>) -> Clause {
        args.push(Arg::Text(org_id.into()));
        let org = format!("${}", args.len());
        Clause {
            kind,
            from: "sandbox_operations o",
            conditions: vec![of_organization(kind, &org)],
            args,
            narrowed: false,
            time_keyed: false,
        }
    }

    /// Adds `arg` and returns its placeholder.
    fn arg(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        format!("${}", self.args.len())
    }

    /// `o.<column> = value` (an equality filter, `filter::FILTERS`).
    fn eq(&mut self, column: &str, value: &str) {
        let p = self.arg(Arg::Text(value.to_string()));
        self.conditions.push(format!("o.{column} = {p}"));
    }

    fn of(kind: DbKind, org_id: &str, f: &Filter, narrowing: Option<&Narrowing>) -> Clause {
        Clause::following(Vec::new(), kind, org_id, f, narrowing)
    }

    /// [`Clause::of`], its arguments after `args`.
    fn following(args: Vec<Arg>, kind: DbKind, org_id: &str, f: &Filter, narrowing: Option<&Narrowing>) -> Clause {
        let mut w = Clause::new(kind, org_id, args);
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
            w.search(kind, q, narrowing);
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
    /// `\` literal. On PostgreSQL the LIKEs are what the trigram GIN indexes serve; narrowed
    /// ([`Narrowing::Grams`]), the indexes are asked only for the rare trigrams (a common
    /// trigram's list is long: reading every one of `module42/file1`'s took 110 ms of 2,000,000
    /// rows, its two rarest 10 ms) and the term is checked with `strpos`, which no index serves. On
    /// SQLite a term of 3 characters or more first picks its candidate rows from the FTS5 trigram
    /// index — its rarest trigrams ([`Narrowing::Fts`]) or else the term as a quoted phrase (a
    /// substring, no query syntax) — and the LIKEs recheck them, so the result is exact; a shorter
    /// term has no trigram and is only the LIKEs, along the organization's index.
    fn search(&mut self, kind: DbKind, q: &str, narrowing: Option<&Narrowing>) {
        if let (DbKind::Postgres, Some(Narrowing::Grams(grams))) = (kind, narrowing) {
            let likes: Vec<String> = grams
                .iter()
                .map(|g| {
                    let p = self.arg(Arg::Text(format!("%{}%", like_escaped(g))));
                    format!("{SEARCHED_TEXT} LIKE {p} ESCAPE '\\'")
                })
                .collect();
            self.conditions.push(format!("({})", likes.join(" AND ")));
            let (a, b) = (self.arg(Arg::Text(q.to_string())), self.arg(Arg::Text(q.to_string())));
            self.conditions.push(format!("(strpos(LOWER(o.target), {a}) > 0 OR strpos(LOWER(o.detail), {b}) > 0)"));
            self.narrowed = true;
            return;
        }
        if narrowing == Some(&Narrowing::Common) {
            // `strpos`/`instr`, a literal substring of the lower-cased columns, which no index
            // serves: the rows are walked along the organization's time index.
            let function = if kind == DbKind::Postgres { "strpos" } else { "instr" };
            let (a, b) = (self.arg(Arg::Text(q.to_lowercase())), self.arg(Arg::Text(q.to_lowercase())));
            self.conditions
                .push(format!("({function}(LOWER(o.target), {a}) > 0 OR {function}(LOWER(o.detail), {b}) > 0)"));
            return;
        }
        if narrowing == Some(&Narrowing::Likes) {
            // Only the LIKEs below: the rows are found by other conditions (a page's last
            // millisecond, [`time_keyed_page`]).
        } else if kind == DbKind::Sqlite && q.chars().count() >= 3 {
            // CROSS JOIN: SQLite reads the matches first (left to right), then each row by rowid;
            // it never walks the organization's rows to test them against the index's.
            self.from = "sandbox_operations_search CROSS JOIN sandbox_operations o";
            let fts = match narrowing {
                Some(Narrowing::Fts(expression)) => expression.clone(),
                _ => fts_phrase(q),
            };
            let p = self.arg(Arg::Text(fts));
            self.conditions
                .push(format!("sandbox_operations_search MATCH {p} AND o.rowid = sandbox_operations_search.rowid"));
            self.time_keyed = true;
        }
        let pattern = format!("%{}%", like_escaped(q));
        if kind == DbKind::Postgres && q.chars().count() >= 3 && narrowing != Some(&Narrowing::Likes) {
            // The trigram index's candidates (both columns in one value), checked column by column below.
            let p = self.arg(Arg::Text(pattern.clone()));
            self.conditions.push(format!("{SEARCHED_TEXT} LIKE {p} ESCAPE '\\'"));
        }
        let (a, b) = (self.arg(Arg::Text(pattern.clone())), self.arg(Arg::Text(pattern)));
        self.conditions.push(format!("(LOWER(o.target) LIKE {a} ESCAPE '\\' OR LOWER(o.detail) LIKE {b} ESCAPE '\\')"));
    }

    /// Rows older (`After`) or newer (`Before`) than the position. Written so that both databases
    /// turn the first comparison into the index range and check the tie on the id.
    fn position(&mut self, c: &Cursor) {
        let (t1, t2) = (self.arg(Arg::Int(c.created_at)), self.arg(Arg::Int(c.created_at)));
        let i = self.arg(Arg::Text(c.id.clone()));
        let i = as_id(self.kind, &i);
        self.conditions.push(match c.direction {
            Direction::After => format!("o.created_at <= {t1} AND (o.created_at < {t2} OR o.id < {i})"),
            Direction::Before => format!("o.created_at >= {t1} AND (o.created_at > {t2} OR o.id > {i})"),
        });
    }

    /// SQLite: `column`, a time key ([`TIME_KEY_SPAN`]), within the milliseconds from `oldest` to
    /// `newest` (each bound optional, both included).
    fn time_keys_within(&mut self, column: &str, oldest: Option<i64>, newest: Option<i64>) {
        if let Some(ms) = oldest {
            let p = self.arg(Arg::Int(time_key(ms)));
            self.conditions.push(format!("{column} >= {p}"));
        }
        if let Some(ms) = newest {
            let p = self.arg(Arg::Int(time_key(ms.saturating_add(1))));
            self.conditions.push(format!("{column} < {p}"));
        }
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

/// `text` as one FTS5 phrase: in double quotes, each double quote doubled.
pub fn fts_phrase(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The SQL of a page: up to `fetch` rows from `cursor` (or the newest), in the order read —
/// newest first, except a `Before` page, which reads oldest first from its position.
pub fn page_sql(kind: DbKind, org_id: &str, f: &Filter, cursor: Option<&Cursor>, fetch: u32) -> (String, Vec<Arg>) {
    page_sql_matching(kind, org_id, f, cursor, fetch, None)
}

/// [`page_sql`] with a search narrowed to its rare trigrams ([`search_narrowing`]).
pub fn page_sql_matching(
    kind: DbKind,
    org_id: &str,
    f: &Filter,
    cursor: Option<&Cursor>,
    fetch: u32,
    narrowing: Option<&Narrowing>,
) -> (String, Vec<Arg>) {
    let mut w = Clause::of(kind, org_id, f, narrowing);
    if let Some(c) = cursor {
        w.position(c);
    }
    if w.time_keyed {
        return time_keyed_page(w, org_id, f, cursor, fetch);
    }
    let time = if w.narrowed { "o.created_at + 0" } else { "o.created_at" };
    let order = match cursor.map(|c| c.direction) {
        Some(Direction::Before) => format!("{time} ASC, o.id ASC"),
        _ => format!("{time} DESC, o.id DESC"),
    };
    let (from, conditions) = (w.from, w.sql());
    let (arrived, args) = match cursor.and_then(|c| c.rank.as_ref()) {
        Some(rank) => arrivals(w.args, kind, org_id, f, rank),
        None => ("0".to_string(), w.args),
    };
    let sql = format!(
        "SELECT {}, {arrived} AS arrived FROM {from} \
         LEFT JOIN sandbox_connections c ON c.id = o.connection_id \
         LEFT JOIN agents a ON a.id = o.agent_id \
         WHERE {conditions} ORDER BY {order} LIMIT {fetch}",
        columns(kind),
    );
    debug_assert!(COLUMNS_AFTER_ID.contains(AGENT_DELETED));
    (sql, args)
}

/// A SQLite rowid of the operation log is its time key: `created_at * 2^20 + n`, n counting the
/// rows of one millisecond (migration `20270104090000_operation_log_time_rowids`).
pub const TIME_KEY_SPAN: i64 = 1 << 20;

/// The first time key of the millisecond `ms` (saturated: a cursor or range far out reads nothing).
fn time_key(ms: i64) -> i64 {
    ms.saturating_mul(TIME_KEY_SPAN)
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
fn time_keyed_page(mut w: Clause, org_id: &str, f: &Filter, cursor: Option<&Cursor>, fetch: u32) -> (String, Vec<Arg>) {
    let kind = DbKind::Sqlite;
    let before = cursor.is_some_and(|c| c.direction == Direction::Before);
    let (mut oldest, mut newest) = (f.since, f.until);
    match cursor {
        Some(c) if before => oldest = Some(oldest.map_or(c.created_at, |s| s.max(c.created_at))),
        Some(c) => newest = Some(newest.map_or(c.created_at, |u| u.min(c.created_at))),
        None => {}
    }
    w.time_keys_within("sandbox_operations_search.rowid", oldest, newest);
    let (from, indexed) = (w.from, w.sql());
    let mut queued = Clause::following(w.args, kind, org_id, f, Some(&Narrowing::Likes));
    if let Some(c) = cursor {
        queued.position(c);
    }
    queued.time_keys_within("q.row", oldest, newest);
    queued.conditions.push("o.rowid = q.row".into());
    let (read, edge, order) = if before { ("ASC", "MAX", "ASC") } else { ("DESC", "MIN", "DESC") };
    let page = format!(
        "SELECT r, t FROM (SELECT o.rowid AS r, o.created_at AS t FROM {from} WHERE {indexed} \
         ORDER BY sandbox_operations_search.rowid {read} LIMIT {fetch}) \
         UNION ALL SELECT o.rowid AS r, o.created_at AS t \
         FROM sandbox_operations_search_queue q CROSS JOIN sandbox_operations o WHERE {} \
         ORDER BY r {read} LIMIT {fetch}",
        queued.sql()
    );
    let mut tie = Clause::following(queued.args, kind, org_id, f, Some(&Narrowing::Likes));
    if let Some(c) = cursor {
        tie.position(c);
    }
    tie.conditions.push(format!(
        "o.rowid >= (SELECT {edge}(t) FROM page) * {TIME_KEY_SPAN} \
         AND o.rowid < ((SELECT {edge}(t) FROM page) + 1) * {TIME_KEY_SPAN}"
    ));
    let ties = tie.sql();
    let (arrived, args) = match cursor.and_then(|c| c.rank.as_ref()) {
        Some(rank) => arrivals(tie.args, kind, org_id, f, rank),
        None => ("0".to_string(), tie.args),
    };
    let sql = format!(
        "WITH page AS MATERIALIZED ({page}) \
         SELECT {}, {arrived} AS arrived FROM sandbox_operations o NOT INDEXED \
         LEFT JOIN sandbox_connections c ON c.id = o.connection_id \
         LEFT JOIN agents a ON a.id = o.agent_id \
         WHERE o.rowid IN (SELECT r FROM page) OR ({ties}) \
         ORDER BY o.created_at {order}, o.id {order} LIMIT {fetch}",
        columns(kind),
    );
    (sql, args)
}

/// The matching rows newer than a ranked cursor's top row, at most 10,001, as a scalar subquery
/// of the page's statement (its arguments after `args`): what arrived since the first page was
/// read, which shifts a deep page's position. They are walked along the organization's time
/// index from the newest down to the top row, never asked of a search index, so the count costs
/// the rows that arrived, not the matches before the page.
fn arrivals(args: Vec<Arg>, kind: DbKind, org_id: &str, f: &Filter, rank: &Rank) -> (String, Vec<Arg>) {
    let mut a = Clause::following(args, kind, org_id, f, Some(&Narrowing::Common));
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
struct Ranked {
    #[sqlx(flatten)]
    item: OperationItem,
    arrived: i64,
}

/// Up to `fetch` rows in one statement, in the order [`page_sql`] reads them (`narrowing` is the
/// filter's [`search_narrowing`]), with how many matching rows arrived above a ranked cursor's
/// top row (at most 10,001; 0 when the cursor has no rank or the page is empty).
pub async fn ranked_page(
    c: &mut Conn,
    org_id: &str,
    f: &Filter,
    narrowing: Option<&Narrowing>,
    cursor: Option<&Cursor>,
    fetch: u32,
) -> DbResult<(Vec<OperationItem>, u64)> {
    let kind = kind_of(c);
    let (sql, args) = page_sql_matching(kind, org_id, f, cursor, fetch, narrowing);
    let page = || bind_all(sqlx::query_as(&sql), &args).persistent(plan_is_kept(kind));
    let rows: Vec<Ranked> = if walks(kind, f, narrowing) {
        let mut tx = sqlx::Connection::begin(&mut *c).await?;
        prefer_walk(&mut tx, f, narrowing).await?;
        let rows = page().fetch_all(&mut *tx).await?;
        tx.commit().await?;
        rows
    } else {
        page().fetch_all(c).await?
    };
    let arrived = rows.first().map_or(0, |r| r.arrived.max(0) as u64);
    Ok((rows.into_iter().map(|r| r.item).collect(), arrived))
}

/// Whether a page statement is prepared once per connection and its plan kept. Not on PostgreSQL:
/// there a kept statement is planned for its values only five times, and then with a generic plan
/// that knows no value. For one session, one agent, one organization among many, that plan guesses
/// a share of the rows from the averages and ANDs the session's rows with all of the
/// organization's from the time index: 10 ms at 100,000 rows of the organization and growing with
/// them, where the session's own plan reads its 50 rows in 0.8 ms. An unnamed statement is planned
/// with its values every time (about 0.2 ms).
fn plan_is_kept(kind: DbKind) -> bool {
    kind == DbKind::Sqlite
}

/// Whether a page is walked along the organization's time index ([`prefer_walk`]): on PostgreSQL,
/// a [`Narrowing::Common`] search without a filter of one session, workspace, connection, agent,
/// run or conversation. With such a filter the planner knows how many rows it names (its
/// statistics of an equality) and reads them from the filters' index; forced to walk, one
/// session's 48 rows among 100,000 of the organization took 60 ms. Those filters are the
/// equality ones (`filter::Param::column`).
pub fn walks(kind: DbKind, f: &Filter, narrowing: Option<&Narrowing>) -> bool {
    kind == DbKind::Postgres && narrowing == Some(&Narrowing::Common) && !f.has_equality()
}

/// PostgreSQL, a [`Narrowing::Common`] search, in the caller's transaction: the statements that
/// follow walk the organization's rows newest first, neither sorting nor gathering them in a
/// bitmap first. Without statistics of a freshly loaded table the planner takes the organization
/// for a few dozen rows and sorts all of them (30,000 rows, 6,000 matches, in the test); the term
/// is known to be frequent here, so the walk is the plan whatever the statistics say.
pub async fn prefer_walk(c: &mut Conn, f: &Filter, narrowing: Option<&Narrowing>) -> DbResult<()> {
    if walks(kind_of(c), f, narrowing) {
        sqlx::query("SET LOCAL enable_sort = off").execute(&mut *c).await?;
        sqlx::query("SET LOCAL enable_bitmapscan = off").execute(&mut *c).await?;
    }
    Ok(())
}

/// Newest rows of the trigram index a search counts each of its trigrams in.
const PROBE_WINDOW: i64 = 2_000;
/// A term held by 1 in this many of the newest rows is always walked to, not asked of an index: a
/// page of 50 is then found within about 5,000 rows.
const COMMON_SHARE: i64 = 100;
/// The rows of a page the walk looks for (the default page, and its one row more).
const WALK_PAGE: f64 = 51.0;
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
/// about `rows` rows. A walk reads about a page's worth divided by the term's share, whatever the
/// size of the log; the index reads every candidate, a number that grows with the log. So the
/// larger the organization, the rarer the term that is still walked to: at 1,000,000 rows a term
/// in 0.3 % of them (a page within 17,000 rows, against 6,000 scattered candidates), at 20,000
/// rows only one in 1 % or more.
fn walked_to(probed: i64, holding: i64, rows: f64) -> bool {
    if probed <= 0 || holding <= 0 {
        return false;
    }
    if holding * COMMON_SHARE >= probed {
        return true;
    }
    let share = holding as f64 / probed as f64;
    let walk = WALK_PAGE / share;
    walk <= WALK_MAX && walk <= share * rows * CANDIDATES_PER_MATCH * CANDIDATE_COST
}

/// Trigrams a search asks the index for, at most.
const SEARCH_TRIGRAMS: usize = 3;
/// Trigrams of a term counted, at most (a term has up to 198).
const PROBES: usize = 32;

/// What a search (`q` of 5 characters or more) asks the trigram index: its rarest trigrams, or
/// `None` to ask for the whole term (no or a short `q`, or a term whose every trigram is common).
/// Asking for every trigram of a term is slow when some are common (the index walks every one of
/// their lists: `module42/file1` on 2,000,000 rows took 170 ms on SQLite, 110 ms on
/// PostgreSQL), while two or three rare ones answer in a few: each trigram is counted among the
/// newest [`PROBE_WINDOW`] rows (bounded work, a millisecond or two in all), then the rarest are
/// taken that do not overlap one taken before (overlapping ones mostly come from the same rows,
/// so they narrow little). The candidates are a superset of the rows holding the term, which is
/// checked on them, so the result is the whole term's.
pub async fn search_narrowing(c: &mut Conn, org_id: &str, f: &Filter) -> DbResult<Option<Narrowing>> {
    let Some(q) = f.q.as_deref() else { return Ok(None) };
    let chars: Vec<char> = q.chars().collect();
    if chars.len() < 3 {
        return Ok(None);
    }
    if !reads_index_in_time_order(kind_of(c), f) && term_is_common(c, org_id, &q.to_lowercase()).await? {
        return Ok(Some(Narrowing::Common));
    }
    if chars.len() < 5 {
        return Ok(None);
    }
    // A long term is probed at evenly spread trigrams, at most PROBES of them.
    let step = (chars.len() - 2).div_ceil(PROBES);
    let mut grams: Vec<(usize, String)> = Vec::new();
    for (at, gram) in chars.windows(3).enumerate().step_by(step) {
        let gram: String = gram.iter().collect();
        if !grams.iter().any(|(_, g)| *g == gram) {
            grams.push((at, gram));
        }
    }
    match kind_of(c) {
        DbKind::Sqlite => {
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
        DbKind::Postgres => {
            // pg_trgm makes trigrams of words (letters and digits): a trigram with anything else
            // in it is not one of its own, so only those of letters and digits narrow.
            grams.retain(|(_, g)| g.chars().all(char::is_alphanumeric));
            if grams.is_empty() {
                return Ok(None);
            }
            // One statement: the organization's newest rows along its time index, each trigram
            // counted among them (`strpos`: a literal substring).
            let counts: Vec<String> =
                (0..grams.len()).map(|i| format!("COUNT(*) FILTER (WHERE strpos(s.t, ${}) > 0)", i + 2)).collect();
            let sql = format!(
                "SELECT COUNT(*), {} FROM (SELECT LOWER(o.target) || ' ' || LOWER(o.detail) AS t \
                 FROM sandbox_operations o WHERE {} \
                 ORDER BY o.created_at DESC, o.id DESC LIMIT {PROBE_WINDOW}) AS s",
                counts.join(", "),
                of_organization(DbKind::Postgres, "$1")
            );
            let mut query = sqlx::query(&sql).bind(org_id.to_string());
            for (_, g) in &grams {
                query = query.bind(g.clone());
            }
            let row = query.fetch_one(&mut *c).await?;
            let probed: i64 = row.try_get(0)?;
            let mut counted = Vec::new();
            for (i, (at, gram)) in grams.into_iter().enumerate() {
                counted.push((row.try_get::<i64, _>(i + 1)?, at, gram));
            }
            let chosen = rarest_trigrams(counted, probed);
            Ok((!chosen.is_empty()).then_some(Narrowing::Grams(chosen)))
        }
    }
}

/// Whether a search is read from its trigram index newest first whatever the term's frequency,
/// never walked to: on SQLite, whose FTS5 index is read in time order and stops at the page
/// ([`time_keyed_page`]), when nothing but the term, the operations and a time range narrow it.
/// A common term's page is then found among its newest matches, as a walk would, without reading
/// the organization's rows that do not hold it. With one session, workspace, connection, agent,
/// run or conversation, or failures only, the page may be far down the term's matches, and the
/// term is probed as on PostgreSQL: a common one is walked to along that filter's own index.
pub fn reads_index_in_time_order(kind: DbKind, f: &Filter) -> bool {
    kind == DbKind::Sqlite && !f.is_narrowed()
}

/// Whether `term` (lower-cased) is walked to ([`walked_to`]), from its share of the
/// organization's newest [`PROBE_WINDOW`] rows and the organization's size, estimated from the
/// time those rows span against the time back to its oldest row (one more index probe).
async fn term_is_common(c: &mut Conn, org_id: &str, term: &str) -> DbResult<bool> {
    let kind = kind_of(c);
    let function = match kind {
        DbKind::Postgres => "strpos",
        DbKind::Sqlite => "instr",
    };
    let sql = format!(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN {function}(s.t, $2) > 0 THEN 1 ELSE 0 END), 0), \
         COALESCE(MIN(s.created_at), 0), COALESCE(MAX(s.created_at), 0) FROM \
         (SELECT LOWER(o.target) || ' ' || LOWER(o.detail) AS t, o.created_at FROM sandbox_operations o \
         WHERE {} ORDER BY o.created_at DESC, o.id DESC LIMIT {PROBE_WINDOW}) AS s",
        of_organization(kind, "$1")
    );
    let (probed, holding, window_oldest, newest): (i64, i64, i64, i64) =
        sqlx::query_as(&sql).bind(org_id.to_string()).bind(term.to_string()).fetch_one(&mut *c).await?;
    if holding == 0 || holding * COMMON_SHARE >= probed {
        return Ok(walked_to(probed, holding, probed as f64));
    }
    let rows = if probed < PROBE_WINDOW {
        probed as f64
    } else {
        let sql = format!(
            "SELECT o.created_at FROM sandbox_operations o WHERE {} ORDER BY o.created_at ASC LIMIT 1",
            of_organization(kind, "$1")
        );
        let oldest: Option<(i64,)> = sqlx::query_as(&sql).bind(org_id.to_string()).fetch_optional(&mut *c).await?;
        let oldest = oldest.map_or(window_oldest, |r| r.0);
        probed as f64 * (newest - oldest) as f64 / (newest - window_oldest).max(1) as f64
    };
    Ok(walked_to(probed, holding, rows))
}

/// The rarest trigrams (count among `probed` rows, position, trigram) that do not overlap;
/// none when even the rarest is held by a quarter of the probed rows (nothing rare to narrow by).
fn rarest_trigrams(mut counted: Vec<(i64, usize, String)>, probed: i64) -> Vec<String> {
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
    let sql = format!(
        "SELECT 1 FROM sandbox_operations o WHERE {} AND o.operation = $2 LIMIT 1",
        of_organization(kind_of(c), "$1")
    );
    let row: Option<(i64,)> = sqlx::query_as(&sql).bind(org_id).bind(op).fetch_optional(c).await?;
    Ok(row.is_some())
}

/// Retention (`sweep.rs`): deletes at most `batch` rows created before `cutoff_ms`, by id, in one
/// short statement; on PostgreSQL the rows it takes are locked `FOR UPDATE SKIP LOCKED`, so
/// replicas sweeping at once share the work. Returns how many it deleted.
pub async fn delete_batch_before(c: &mut Conn, kind: DbKind, cutoff_ms: i64, batch: i64) -> DbResult<u64> {
    let sql = match kind {
        DbKind::Postgres => format!(
            "DELETE FROM sandbox_operations WHERE id IN (SELECT id FROM sandbox_operations \
             WHERE created_at < $1 LIMIT {batch} FOR UPDATE SKIP LOCKED)"
        ),
        // The rows before the cutoff are those whose time key is below the cutoff's, oldest
        // first along the table itself (no index of the time is kept for it).
        DbKind::Sqlite => format!(
            "DELETE FROM sandbox_operations WHERE rowid IN (SELECT rowid FROM sandbox_operations \
             WHERE rowid < $1 ORDER BY rowid LIMIT {batch})"
        ),
    };
    let bound = match kind {
        DbKind::Postgres => cutoff_ms,
        DbKind::Sqlite => time_key(cutoff_ms),
    };
    Ok(sqlx::query(&sql).bind(bound).execute(c).await?.rows_affected())
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
        // 1 in 100 or more: always, however small the organization.
        assert!(walked_to(2_000, 20, 2_000.0));
        assert!(walked_to(500, 5, 500.0));
        // Never a term that none of the newest rows hold, nor an empty organization.
        assert!(!walked_to(2_000, 0, 1e9));
        assert!(!walked_to(0, 0, 0.0));
        // 0.5 %: asked of the index in an organization of 20,000 rows (about 200 candidates),
        // walked to at 200,000 and 1,000,000 (a page within 10,000 rows).
        assert!(!walked_to(2_000, 10, 20_000.0));
        assert!(walked_to(2_000, 10, 200_000.0));
        assert!(walked_to(2_000, 10, 1_000_000.0));
        // 0.1 %: a page 51,000 rows away is too far, however large the organization.
        assert!(!walked_to(2_000, 2, 1_000_000.0));
        assert!(!walked_to(2_000, 2, 1e9));
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
