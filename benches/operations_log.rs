//! `cargo bench --bench operations_log [-- --quick] [-- --postgres URL]`: the operation log on a
//! large table, through the HTTP API of the application (in this process, one worker).
//!
//! Fills a fresh database with 200,000 rows of one organization over 30 days (2,000 sessions,
//! 50 agents, ~3% failures) and as many rows of noise in 20 other organizations, measures, then
//! grows both to 1,000,000 and measures again (`--quick`: 20,000 then 100,000). The rows are
//! written as the recorder writes them, in time order with the organizations interleaved; on
//! SQLite the growth writes its rows over the same 30 days again (a second time-ordered run); on
//! PostgreSQL the log is emptied and filled again at the second size, in time order into
//! partitions made as the writer makes them (`sandbox/log/partitions.rs`). The fill is
//! PostgreSQL's `COPY` and SQLite's prepared multi-row statement in large transactions (1.7× and
//! 2.2× faster than literal INSERTs in the dev profile; what is left is the indexes' upkeep, about
//! 70 µs a row on PostgreSQL in release). At each size it
//! reports p50/p95 over `--requests` (200) requests each, every one sent with
//! `Accept-Encoding: gzip` as real clients send it, of: the first page, page 200 by cursor, the
//! searches of the issue (a rare word, words in about 1 % and 17 % of rows, two characters, a
//! path fragment, a search with failed-only, with a session, with a time range), failed-only,
//! one session, one agent — each at `limit` 50 and 200, with its match count —, a searched export
//! of every search case (all its matches, gzip, unzipped as it comes: seconds, the first byte's,
//! rows/s; the goal is met when the export takes at most a page's 50 ms and then its rows at
//! 100,000 a second, [`export_meets_rate`]), the table's bytes per row (table and indexes on
//! PostgreSQL; the whole file on SQLite) and, at the second size, the growth of each p50/p95; and
//! the Activity timeline's bars and total (`operations/timeline.rs`: p50/p95, the total shown
//! against the exact count) for any time, the last day, failed-only, a common and a rare word, one
//! session (`--timeline-caps 10000,5000`: at each cap in turn, request by request). Then the
//! export of 100,000 rows (`--quick`: 20,000): rows/s and the process's RSS.
//! SQLite by default (a temporary file); `--postgres URL` uses a fresh database on that server
//! (created and dropped; `--keep` keeps it, or SQLite's file, and prints its name; `--sizes 1000000,10000000` sets
//! the two sizes (rows of the organization, as many of noise); `--fill-only` stops after the
//! fills (their times and bytes a row); `--no-analyze` never analyses the table, so every plan is
//! made without statistics; `--export-rows N` sets the export's size; `--ranges-at-once N` how
//! many of an export's ranges are read at once, 2 by default). Goals (printed beside the
//! figures, not enforced): every page ≤ 50 ms at p95, growth ≤ 1.5×, a searched export ≥ 100,000
//! rows/s, ≤ 400 bytes a row on PostgreSQL (issue 50).

#[path = "support/flags.rs"]
mod flags;
#[path = "support/proc_status.rs"]
mod proc_status;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agenticos::startup::Application;

use flags::Flags;
use proc_status::status_kib;

struct Args {
    /// The sizes measured, rows of the organization (as many of noise).
    sizes: [usize; 2],
    requests: usize,
    export_rows: usize,
    /// How many of an export's ranges are read at once (`operations/segments.rs`; 2 by default).
    ranges_at_once: Option<u32>,
    postgres: Option<String>,
    /// Keep the PostgreSQL database (its name is printed) to look at its plans afterwards.
    keep: bool,
    /// PostgreSQL: measure a freshly loaded log, never analysed (autovacuum off for the table, no
    /// `VACUUM ANALYZE` after a fill): the plans made without statistics.
    no_analyze: bool,
    /// The timeline's caps measured, request by request in turn on the same rows (`--timeline-caps
    /// 10000,5000`; the service's `CAP` alone by default).
    timeline_caps: Vec<u64>,
    /// Stop after the fills (their times and bytes a row): `--fill-only`.
    fill_only: bool,
}

fn args() -> Args {
    let mut a = Args {
        sizes: [200_000, 1_000_000],
        requests: 200,
        export_rows: 100_000,
        ranges_at_once: None,
        postgres: None,
        keep: false,
        no_analyze: false,
        timeline_caps: vec![agenticos::sandbox::operations::timeline::CAP],
        fill_only: false,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--quick" => {
                a.sizes = [20_000, 100_000];
                a.export_rows = 20_000;
            }
            "--sizes" => {
                let sizes = flags.value("--sizes");
                let parsed: Vec<usize> = sizes
                    .split(',')
                    .map(|n| n.parse().unwrap_or_else(|_| panic!("--sizes takes two numbers, not {sizes:?}")))
                    .collect();
                match parsed[..] {
                    [a0, a1] if 0 < a0 && a0 < a1 => a.sizes = [a0, a1],
                    _ => {
                        panic!("--sizes takes two growing numbers (rows of the organization), such as 1000000,10000000")
                    }
                }
            }
            "--requests" => a.requests = flags.number("--requests", 1) as usize,
            "--postgres" => a.postgres = Some(flags.value("--postgres")),
            "--keep" => a.keep = true,
            "--no-analyze" => a.no_analyze = true,
            "--fill-only" => a.fill_only = true,
            "--export-rows" => a.export_rows = flags.number("--export-rows", 1) as usize,
            "--ranges-at-once" => a.ranges_at_once = Some(flags.number("--ranges-at-once", 1) as u32),
            "--timeline-caps" => {
                let caps = flags.value("--timeline-caps");
                a.timeline_caps = caps
                    .split(',')
                    .map(|c| c.parse().unwrap_or_else(|_| panic!("--timeline-caps takes numbers, not {caps:?}")))
                    .collect();
            }
            _ => {}
        }
    }
    a
}

const DAY: i64 = 86_400_000;
const SESSIONS: usize = 2_000;
const AGENTS: usize = 50;

/// A case at one size: its name, p50 and p95 (ms), the rows of its page and its matches.
type Measured = (String, f64, f64, usize, i64);

/// The rows whose lower-cased target or detail holds `word` (lower-case, no quote).
fn term(word: &str) -> String {
    format!("(LOWER(target) LIKE '%{word}%' OR LOWER(detail) LIKE '%{word}%')")
}

fn peak_rss_kib() -> u64 {
    status_kib("self", "VmHWM")
}

fn rss_kib() -> u64 {
    status_kib("self", "VmRSS")
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// One row of the fill, as the recorder would have written it.
struct FillRow<'a> {
    /// SQLite's rowid: the row's time key.
    key: i64,
    org: &'a str,
    session: usize,
    agent: &'a str,
    op: &'static str,
    target: String,
    ok: i64,
    detail: String,
    duration_ms: u64,
    at: i64,
    seq: usize,
}

/// The rows of a fill, in the order written: `n` rows of the first organization of `orgs` (each
/// with its agents) and as many spread over the others, in time order (over the 30 days up to
/// `now`), the organizations interleaved row by row. A second fill writes its rows over the same
/// 30 days again, so at every size the rows spread evenly over the 30 days and the table holds one
/// time-ordered run per fill. `salt` picks the rows (a second fill takes another); `run` is the
/// fill's part of SQLite's time keys (a row's millisecond times 2^20, then the fill's `run` and
/// the row's number: migration `20270104090000_operation_log_time_rowids`).
fn fill_rows<'a>(
    orgs: &'a [(String, Vec<String>)],
    n: usize,
    now: i64,
    salt: u64,
    run: i64,
) -> impl Iterator<Item = FillRow<'a>> + 'a {
    let ops = ["read", "write", "ls", "mkdir", "remove", "execute"];
    let (own, noise) = orgs.split_first().expect("an organization");
    let total = 2 * n;
    let step = (30 * DAY) as f64 / total as f64;
    let mut x = salt.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..total).map(move |k| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let r = x;
        let (org, agents) = if k % 2 == 0 {
            (&own.0, &own.1)
        } else {
            (&noise[(k / 2) % noise.len()].0, &noise[(k / 2) % noise.len()].1)
        };
        let op = ops[(r % 6) as usize];
        // Failures drawn from other bits than the operation's (`r % 33 == 0` made every failure a
        // multiple of 3, never `r % 6 == 5`, so no command ever failed).
        let ok = if (r >> 48) % 33 == 0 { 0 } else { 1 };
        // In time order: the k-th of the fill's rows, within its own slot of the 30 days.
        let at = now - 30 * DAY + (k as f64 * step) as i64 + (r >> 40) as i64 % step.max(1.0) as i64;
        let target = if op == "execute" {
            format!("cargo test --package crate{}", r % 997)
        } else {
            format!("/workspace/src/module{}/file{}.rs", r % 89, r % 1009)
        };
        FillRow {
            key: at * agenticos::sandbox::log::sqlite_store::TIME_KEY_SPAN + (run << 19) + (k as i64 % (1 << 19)),
            org,
            session: (r >> 20) as usize % SESSIONS,
            agent: agents[(r >> 32) as usize % agents.len()].as_str(),
            op,
            target,
            ok,
            detail: if op == "execute" { format!("exit {}", 1 - ok) } else { format!("{} bytes", r % 5000) },
            duration_ms: r % 200,
            at,
            seq: k,
        }
    })
}

/// The log's columns the fill writes (the others stay NULL: no conversation).
const FILL_COLUMNS: &str = "id, organization_id, workspace_id, session_key, connection_id, agent_id, run_id, \
                            operation, target, ok, detail, duration_ms, created_at, seq";

/// Writes [`fill_rows`] into the log in their order: on PostgreSQL with `COPY ... FROM STDIN` on a
/// connection of its own (`synchronous_commit` off for it, the same rows, indexes and heap order as
/// row-by-row inserts), on SQLite with one prepared statement of [`SQLITE_ROWS`] rows (each with
/// its time key as rowid) in transactions of [`SQLITE_TX_ROWS`], `synchronous = OFF` on the fill's
/// own connection. Multi-row literal INSERTs of 500 took about 85 µs a row on PostgreSQL
/// (20,000,000 rows, the 10M size and its noise, ≈ 28 min).
async fn fill(url: &str, postgres: bool, orgs: &[(String, Vec<String>)], n: usize, now: i64, salt: u64, run: i64) {
    let rows = fill_rows(orgs, n, now, salt, run);
    if postgres {
        fill_postgres(url, rows).await
    } else {
        fill_sqlite(url, rows).await
    }
}

/// Rows of one `COPY` statement (one transaction): the log's partitions are made between two, as
/// the writer makes them between two batches (`partition_store::extend`), so a statement's rows are a
/// tenth of a partition's ([`agenticos::sandbox::log::partitions::TARGET_ROWS`]).
const COPY_ROWS: usize = 10_000;

async fn fill_postgres<'a>(url: &str, rows: impl Iterator<Item = FillRow<'a>>) {
    use agenticos::sandbox::log::{partition_store, partitions};
    use sqlx::Connection as _;
    let mut c = sqlx::PgConnection::connect(url).await.expect("postgres");
    // The partitions are made on a connection of the application's kind, where the writer makes
    // them; each COPY is committed before the next partition is sized by the rows it got.
    let mut made = sqlx::AnyConnection::connect(url).await.expect("postgres");
    // The indexes as the recorder's inserts leave them: the GIN indexes' pending lists stay at the
    // migrations' 256 kB (a fill through 64 MB lists took 40 % less time and left 865 bytes a row
    // instead of 361, the lists' pages left in the index), so the index upkeep, not the statements,
    // is most of the fill's time on PostgreSQL.
    sqlx::query("SET synchronous_commit = off").execute(&mut c).await.expect("synchronous_commit");
    let mut rows = rows.peekable();
    let mut covered = i64::MIN;
    while rows.peek().is_some() {
        let chunk: Vec<FillRow> = rows.by_ref().take(COPY_ROWS).collect();
        let (oldest, newest) = chunk.iter().fold((i64::MAX, i64::MIN), |(lo, hi), r| (lo.min(r.at), hi.max(r.at)));
        if newest >= covered {
            covered =
                partition_store::extend(&mut made, oldest, newest, partitions::TARGET_ROWS).await.expect("partition");
        }
        let mut copy =
            c.copy_in_raw(&format!("COPY sandbox_operations ({FILL_COLUMNS}) FROM STDIN")).await.expect("copy");
        let mut buf = String::with_capacity(1 << 20);
        for r in chunk {
            use std::fmt::Write as _;
            // Text format: tab-separated, `\N` for NULL (no value here holds a tab or a backslash).
            writeln!(
                buf,
                "{}\t{}\t\\N\tsession-{}\t\\N\t{}\t\\N\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                agenticos::db::new_time_ordered_id(),
                r.org,
                r.session,
                r.agent,
                r.op,
                r.target,
                r.ok,
                r.detail,
                r.duration_ms,
                r.at,
                r.seq
            )
            .expect("write");
        }
        copy.send(buf.into_bytes()).await.expect("copy send");
        copy.finish().await.expect("copy finish");
    }
    c.close().await.expect("close");
    made.close().await.expect("close");
}

/// PostgreSQL: the log emptied, its partitions dropped (as retention drops them), so that the next
/// size is filled in time order from the start, as the console writes it. Filling the same 30 days
/// again would put the second fill's rows into the first fill's partitions, five times fuller
/// than any the writer makes.
async fn empty_postgres(c: &mut agenticos::db::Conn) {
    sqlx::query("TRUNCATE sandbox_operations").execute(&mut *c).await.expect("truncate");
    while agenticos::sandbox::log::partition_store::drop_oldest_before(c, i64::MAX).await.expect("drop").is_some() {}
}

/// Rows of SQLite's prepared statement (15 values each: 1,500 of SQLite's 32,766), and of one of
/// its transactions.
const SQLITE_ROWS: usize = 100;
const SQLITE_TX_ROWS: usize = 200_000;

async fn fill_sqlite<'a>(url: &str, rows: impl Iterator<Item = FillRow<'a>>) {
    use sqlx::Connection as _;
    let mut c = sqlx::SqliteConnection::connect(url).await.expect("sqlite");
    sqlx::query("PRAGMA synchronous = OFF").execute(&mut c).await.expect("synchronous");
    sqlx::query("PRAGMA cache_size = -262144").execute(&mut c).await.expect("cache");
    let one = format!("({})", vec!["?"; 15].join(", "));
    let full = format!(
        "INSERT INTO sandbox_operations (rowid, {FILL_COLUMNS}) VALUES {}",
        vec![one.as_str(); SQLITE_ROWS].join(", ")
    );
    let mut rows = rows.peekable();
    while rows.peek().is_some() {
        let mut tx = c.begin().await.expect("tx");
        let mut written = 0;
        while written < SQLITE_TX_ROWS && rows.peek().is_some() {
            let part: Vec<FillRow> = rows.by_ref().take(SQLITE_ROWS).collect();
            written += part.len();
            let partial;
            let sql = if part.len() == SQLITE_ROWS {
                full.as_str()
            } else {
                partial = format!(
                    "INSERT INTO sandbox_operations (rowid, {FILL_COLUMNS}) VALUES {}",
                    vec![one.as_str(); part.len()].join(", ")
                );
                partial.as_str()
            };
            let mut q = sqlx::query(sql);
            for r in part {
                q = q
                    .bind(r.key)
                    .bind(agenticos::db::new_time_ordered_id())
                    .bind(r.org.to_string())
                    .bind(None::<String>)
                    .bind(format!("session-{}", r.session))
                    .bind(None::<String>)
                    .bind(r.agent.to_string())
                    .bind(None::<String>)
                    .bind(r.op)
                    .bind(r.target)
                    .bind(r.ok)
                    .bind(r.detail)
                    .bind(r.duration_ms as i64)
                    .bind(r.at)
                    .bind(r.seq as i64);
            }
            q.execute(&mut *tx).await.expect("insert");
        }
        tx.commit().await.expect("commit");
    }
    c.close().await.expect("close");
}

/// The page sizes every case is asked at: the default and the most a page may hold.
const LIMITS: [u32; 2] = [50, 200];
/// The goals printed beside the figures (issue 50): a page's p95, an export's rate, PostgreSQL's
/// bytes a row (table and indexes).
const PAGE_P95_MS: f64 = 50.0;
const EXPORT_ROWS_PER_S: f64 = 100_000.0;
const PG_BYTES_A_ROW: i64 = 400;

/// `  goal met` or `  GOAL MISSED`, printed after a figure.
fn goal(met: bool) -> &'static str {
    if met {
        "  goal met"
    } else {
        "  GOAL MISSED"
    }
}

/// `q` (a query string, `?…` or empty) asking for `limit` rows a page.
fn with_limit(q: &str, limit: u32) -> String {
    match q {
        "" => format!("?limit={limit}"),
        _ => format!("{q}&limit={limit}"),
    }
}

/// The most RSS seen while an export streamed (KiB).
static MAX_RSS_KIB: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Exports the rows the filters `query` (without `?`) name, as NDJSON, sent with `Accept-Encoding:
/// gzip` as real clients send it and unzipped as it comes: the rows, the seconds to the last byte
/// and to the first; the process's RSS is sampled at every chunk ([`MAX_RSS_KIB`]).
async fn export(http: &reqwest::Client, base: &str, token: &str, query: &str) -> (usize, f64, f64) {
    let t = Instant::now();
    let mut r = http
        .get(format!("{base}/api/v1/operations/export?{query}"))
        .bearer_auth(token)
        .header(reqwest::header::ACCEPT_ENCODING, "gzip")
        .send()
        .await
        .expect("export");
    assert_eq!(r.status(), 200, "export?{query}");
    let gzipped = r.headers().get(reqwest::header::CONTENT_ENCODING).is_some_and(|v| v == "gzip");
    let mut lines = Lines(0);
    let mut unzip = flate2::write::GzDecoder::new(Lines(0));
    let mut first = None;
    while let Some(chunk) = r.chunk().await.expect("chunk") {
        first.get_or_insert_with(|| t.elapsed().as_secs_f64());
        if gzipped {
            std::io::Write::write_all(&mut unzip, &chunk).expect("gunzip");
        } else {
            std::io::Write::write_all(&mut lines, &chunk).expect("count");
        }
        MAX_RSS_KIB.fetch_max(rss_kib(), std::sync::atomic::Ordering::Relaxed);
    }
    let lines = if gzipped { unzip.finish().expect("gunzip").0 } else { lines.0 };
    let secs = t.elapsed().as_secs_f64();
    (lines, secs, first.unwrap_or(secs))
}

/// A sink that counts the lines written to it.
struct Lines(usize);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.iter().filter(|b| **b == b'\n').count();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether a searched export of `rows` rows taking `secs` meets the rate: at most the time of the
/// search's first page ([`PAGE_P95_MS`], what the same search may take to show its first rows)
/// and then `rows` at [`EXPORT_ROWS_PER_S`]. An export of a few hundred rows is its first
/// statement, not a rate: 170 rows at 100,000 a second would be 1.7 ms, less than the plan of
/// any search costs.
fn export_meets_rate(rows: usize, secs: f64) -> bool {
    secs <= PAGE_P95_MS / 1000.0 + rows as f64 / EXPORT_ROWS_PER_S
}

async fn owner_with_agents(st: &agenticos::state::AppState, name: &str, agents: usize) -> (String, Vec<String>) {
    let org = agenticos::auth::service::create_owner(
        &st.db,
        &format!("owner@{name}.example"),
        "correct horse battery".to_string().into(),
        name,
    )
    .await
    .expect("owner");
    let mut ids = Vec::new();
    let mut c = st.db.conn().await.expect("conn");
    for i in 0..agents {
        let id = uuid::Uuid::new_v4().to_string();
        sqlx::query(
            "INSERT INTO agents (id, organization_id, name, backend, scope, created_at, updated_at) VALUES ($1, $2, $3, 'state', 'conversation', 1, 1)",
        )
        .bind(&id)
        .bind(&org)
        .bind(format!("agent-{i}"))
        .execute(&mut *c)
        .await
        .expect("agent");
        ids.push(id);
    }
    (org, ids)
}

#[tokio::main]
async fn main() {
    let a = args();
    let dir = tempfile::tempdir().expect("tempdir");
    let (url, pg_admin) = match &a.postgres {
        Some(base) => {
            let name = format!("oplog_bench_{}", std::process::id());
            let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(base).await.expect("postgres");
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut admin).await.expect("create database");
            let (prefix, _) = base.rsplit_once('/').expect("a database URL");
            (format!("{prefix}/{name}"), Some((base.clone(), name)))
        }
        None => (format!("sqlite://{}/bench.db?mode=rwc", dir.path().display()), None),
    };
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("AGENTICOS_BIND".into(), "127.0.0.1:0".into());
    vars.insert("DATABASE_URL".into(), url.clone());
    vars.insert("AGENTICOS_WORKERS".into(), "1".into());
    vars.insert("AGENTICOS_VAULT_KEY".into(), "00".repeat(32));
    vars.insert("AGENTICOS_CATALOG_DIR".into(), format!("{}/catalog", env!("CARGO_MANIFEST_DIR")));
    vars.insert("AGENTICOS_LOG".into(), "warn".into());
    let config = agenticos::config::Config::from_vars(&vars).expect("config");
    let app = Application::build(config).await.expect("app");
    let port = app.port();
    let state = app.state();
    if let Some(n) = a.ranges_at_once {
        state.log.set_export_ranges_at_once(n);
        println!("an export reads {n} of its ranges at once (--ranges-at-once)");
    }
    tokio::spawn(app.run_until_stopped());
    let base = format!("http://127.0.0.1:{port}");
    let now = agenticos::db::now_ms();

    let (org, agents) = owner_with_agents(&state, "Bench", AGENTS).await;
    let mut orgs = vec![(org.clone(), agents.clone())];
    for i in 0..20 {
        orgs.push(owner_with_agents(&state, &format!("Noise{i}"), 2).await);
    }
    let caller = agenticos::orgs::service::command_line_caller(&state.db, "Bench", None).await.expect("caller");
    let token = agenticos::tokens::service::create(
        &state.db,
        &caller,
        agenticos::tokens::service::NewToken {
            name: "bench".into(),
            role: "operator".into(),
            description: String::new(),
        },
    )
    .await
    .expect("token")
    .value;
    let http = reqwest::Client::new();
    let get = |q: String| {
        let (http, token, base) = (http.clone(), token.clone(), base.clone());
        async move {
            let t = Instant::now();
            let r = http
                .get(format!("{base}/api/v1/operations{q}"))
                .bearer_auth(&token)
                .header(reqwest::header::ACCEPT_ENCODING, "gzip")
                .send()
                .await
                .expect("send");
            assert_eq!(r.status(), 200, "{q}");
            let gzipped = r.headers().get(reqwest::header::CONTENT_ENCODING).is_some_and(|v| v == "gzip");
            let body = r.bytes().await.expect("body");
            let elapsed = t.elapsed();
            let body = if gzipped {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut out).expect("gunzip");
                out
            } else {
                body.to_vec()
            };
            let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
            (elapsed, v)
        }
    };

    let postgres = a.postgres.is_some();
    let analyze = !(postgres && a.no_analyze);
    if !analyze {
        println!("statistics: none (the table is never analysed: --no-analyze)");
    }
    let mut filled = 0;
    let mut results: Vec<Vec<Measured>> = Vec::new();
    for (step, &size) in a.sizes.iter().enumerate() {
        let started = Instant::now();
        if postgres && filled > 0 {
            empty_postgres(&mut state.db.conn().await.expect("conn")).await;
            filled = 0;
        }
        fill(&url, postgres, &orgs, size - filled, now, 1 + step as u64 * 1000, step as i64).await;
        filled = size;
        if !analyze {
            // Nothing analyses the log behind the bench's back.
            let mut c = state.db.conn().await.expect("conn");
            agenticos::sandbox::log::partition_store::autovacuum_off(&mut c).await.expect("autovacuum off");
        }
        // On SQLite the rows wait in the search index's queue, as a serving console's tick would
        // not leave them: indexed before anything is timed.
        let written = started.elapsed().as_secs_f64();
        state.log.index_search().await.expect("index the queued rows");
        let mut c = state.db.conn().await.expect("conn");
        if postgres && analyze {
            sqlx::query("VACUUM ANALYZE sandbox_operations").execute(&mut *c).await.expect("analyze");
        }
        let (rows,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM sandbox_operations").fetch_one(&mut *c).await.expect("rows");
        let bytes: i64 = if postgres {
            sqlx::query_as::<_, (i64,)>(
                "SELECT COALESCE(SUM(pg_total_relation_size(relid)), 0)::bigint \
                 FROM pg_partition_tree('sandbox_operations')",
            )
            .fetch_one(&mut *c)
            .await
            .expect("size")
            .0
        } else {
            let (pages,): (i64,) = sqlx::query_as("PRAGMA page_count").fetch_one(&mut *c).await.expect("pages");
            let (page,): (i64,) = sqlx::query_as("PRAGMA page_size").fetch_one(&mut *c).await.expect("page size");
            pages * page
        };
        drop(c);
        println!(
            "filled {size} rows (+{size} noise) on {} in {:.1} s (written in {written:.1} s, then indexed and analysed); \
             {} bytes a row ({}, {rows} rows)",
            if postgres { "PostgreSQL" } else { "SQLite" },
            started.elapsed().as_secs_f64(),
            bytes / rows.max(1),
            if postgres { "table + indexes" } else { "whole file" },
        );
        if postgres {
            println!(
                "goal: at most {PG_BYTES_A_ROW} bytes a row on PostgreSQL{}",
                goal(bytes / rows.max(1) <= PG_BYTES_A_ROW)
            );
        }

        if a.fill_only {
            continue;
        }
        // Page 200's cursor: follow 199 next cursors once.
        let mut cursor = String::new();
        for _ in 0..199 {
            let (_, v) = get(format!("?cursor={cursor}")).await;
            cursor = v["next_cursor"].as_str().expect("next").to_string();
        }
        let day_ago = now - DAY;
        // (name, query, the matching rows as SQL, for their count)
        let cases = [
            ("first page", String::new(), String::new()),
            ("page 200 by cursor", format!("?cursor={cursor}"), String::new()),
            ("rare word", "?q=crate123".to_string(), term("crate123")),
            ("word in ~1%", "?q=module42".to_string(), term("module42")),
            ("word in ~17%", "?q=cargo".to_string(), term("cargo")),
            ("two characters", "?q=42".to_string(), term("42")),
            ("path fragment", "?q=module42/file1".to_string(), term("module42/file1")),
            ("failed + word", "?q=cargo&failed_only=true".to_string(), format!("{} AND ok = 0", term("cargo"))),
            (
                "session + word",
                "?q=module&session_key=session-1234".to_string(),
                format!("{} AND session_key = 'session-1234'", term("module")),
            ),
            (
                "time range + word",
                format!("?q=module42&since={day_ago}"),
                format!("{} AND created_at >= {day_ago}", term("module42")),
            ),
            ("failed only", "?failed_only=true".to_string(), "ok = 0".to_string()),
            ("one session", "?session_key=session-1234".to_string(), "session_key = 'session-1234'".to_string()),
            ("one agent", format!("?agent_id={}", agents[7]), format!("agent_id = '{}'", agents[7])),
        ];
        println!("{:<20} {:>5} {:>9} {:>9} {:>6} {:>9}", "request", "limit", "p50 ms", "p95 ms", "rows", "matches");
        let mut measured = Vec::new();
        for (name, q, matching) in &cases {
            let mut c = state.db.conn().await.expect("conn");
            let condition = if matching.is_empty() { "1 = 1" } else { matching.as_str() };
            let (matches,): (i64,) = sqlx::query_as(&format!(
                "SELECT COUNT(*) FROM sandbox_operations WHERE organization_id = '{org}' AND {condition}"
            ))
            .fetch_one(&mut *c)
            .await
            .expect("matches");
            drop(c);
            for limit in LIMITS {
                let q = with_limit(q, limit);
                get(q.clone()).await;
                let mut times = Vec::with_capacity(a.requests);
                let mut rows = 0;
                for _ in 0..a.requests {
                    let (t, v) = get(q.clone()).await;
                    rows = v["items"].as_array().map(Vec::len).unwrap_or(0);
                    times.push(t);
                }
                times.sort();
                let (p50, p95) = (percentile(&times, 0.5), percentile(&times, 0.95));
                println!(
                    "{name:<20} {limit:>5} {p50:>9.2} {p95:>9.2} {rows:>6} {matches:>9}{}",
                    goal(p95 <= PAGE_P95_MS)
                );
                measured.push((format!("{name} ({limit})"), p50, p95, rows, matches));
            }
        }

        // A searched export of every search case: all its matches, streamed as NDJSON.
        println!(
            "\n{:<20} {:>9} {:>9} {:>9} {:>12} {:>14}",
            "searched export", "rows", "s", "first ms", "rows/s", "rows/s after"
        );
        for (name, q, _) in cases.iter().filter(|(_, q, _)| q.contains("q=")) {
            let (lines, secs, first) = export(&http, &base, &token, q.trim_start_matches('?')).await;
            let (rate, after) = (lines as f64 / secs, lines as f64 / (secs - first).max(1e-6));
            println!(
                "{name:<20} {lines:>9} {secs:>9.3} {:>9.1} {rate:>12.0} {after:>14.0}{}",
                first * 1000.0,
                goal(export_meets_rate(lines, secs))
            );
        }
        results.push(measured);

        // The timeline above Activity's table: the bars and the total of the filters over their
        // range, one statement reading at most the cap + 1 rows (the service itself, no HTTP);
        // each cap's requests in turn, so that they share the machine's load.
        println!(
            "\n{:<20} {:>6} {:>9} {:>9} {:>22} {:>9}",
            "timeline and total", "cap", "p50 ms", "p95 ms", "total shown", "matches"
        );
        let timeline_cases = [
            ("any time", String::new(), "1 = 1".to_string()),
            ("last 24 hours", format!("since={day_ago}"), format!("created_at >= {day_ago}")),
            ("failed only", "failed_only=true".to_string(), "ok = 0".to_string()),
            ("word in ~17%", "q=cargo".to_string(), term("cargo")),
            ("rare word", "q=crate123".to_string(), term("crate123")),
            ("one session", "session_key=session-1234".to_string(), "session_key = 'session-1234'".to_string()),
        ];
        for (name, q, matching) in &timeline_cases {
            let mut c = state.db.conn().await.expect("conn");
            let (matches,): (i64,) = sqlx::query_as(&format!(
                "SELECT COUNT(*) FROM sandbox_operations WHERE organization_id = '{org}' AND {matching}"
            ))
            .fetch_one(&mut *c)
            .await
            .expect("matches");
            drop(c);
            let input = agenticos::sandbox::operations::filter::FilterInput::from_query(q);
            let caps = &a.timeline_caps;
            let mut shown = vec![String::new(); caps.len()];
            let mut times = vec![Vec::with_capacity(a.requests); caps.len()];
            for _ in 0..=a.requests {
                for (i, &cap) in caps.iter().enumerate() {
                    let t = Instant::now();
                    let got =
                        agenticos::sandbox::operations::service::timeline_capped(&state, &caller, &input, now, cap)
                            .await
                            .expect("timeline");
                    times[i].push(t.elapsed());
                    shown[i] = got.map(|t| t.total_words()).unwrap_or_default();
                }
            }
            for ((cap, times), shown) in caps.iter().zip(&mut times).zip(&shown) {
                times.remove(0);
                times.sort();
                let (p50, p95) = (percentile(times, 0.5), percentile(times, 0.95));
                println!("{name:<20} {cap:>6} {p50:>9.2} {p95:>9.2} {shown:>22} {matches:>9}");
            }
        }
    }
    if let [small, large] = results.as_slice() {
        println!(
            "\n{:<20} {:>16} {:>16} {:>9} {:>9}",
            "growth",
            format!("p50 {}k→{}k", a.sizes[0] / 1000, a.sizes[1] / 1000),
            "p95",
            "x p50",
            "x p95"
        );
        for (s, l) in small.iter().zip(large) {
            println!(
                "{:<20} {:>7.2} → {:>6.2} {:>7.2} → {:>6.2} {:>8.2}x {:>8.2}x",
                s.0,
                s.1,
                l.1,
                s.2,
                l.2,
                l.1 / s.1,
                l.2 / s.2
            );
        }
    }
    if !a.fill_only {
        // Export: rows of the newest `export_rows` (a `since` that takes in about that many).
        let span = (30 * DAY) as f64 * a.export_rows as f64 / a.sizes[1] as f64;
        let since = now - span as i64;
        let rss_before = rss_kib();
        MAX_RSS_KIB.store(rss_before, std::sync::atomic::Ordering::Relaxed);
        let (lines, secs, _) = export(&http, &base, &token, &format!("since={since}")).await;
        let max_rss = MAX_RSS_KIB.load(std::sync::atomic::Ordering::Relaxed).max(rss_before);
        println!(
            "export: {lines} rows in {secs:.2} s = {:.0} rows/s; RSS {} MiB before, at most {} MiB during (peak of the process {} MiB)",
            lines as f64 / secs,
            rss_before / 1024,
            max_rss / 1024,
            peak_rss_kib() / 1024
        );
    }
    state.db.close().await;
    if pg_admin.is_none() && a.keep {
        println!("kept the database {}/bench.db", dir.keep().display());
    } else if let (Some((_, name)), true) = (&pg_admin, a.keep) {
        println!("kept the database {name}");
    } else if let Some((admin_url, name)) = pg_admin {
        let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&admin_url).await.expect("postgres");
        let _ = sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)")).execute(&mut admin).await;
    }
}
