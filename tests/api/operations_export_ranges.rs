//! The export read in ranges of time, two at once (`sandbox/operations/segments.rs`,
//! `export.rs`): after its first batch (200 rows, 1,000 on SQLite) the rest of a large export is cut into
//! ranges sized by the rate its rows came at; whatever the cut (bursts of many rows in one
//! millisecond on a range's edge, idle gaps, a rate that changes a thousandfold), the export holds
//! every matching row once, in the order one table gives, as NDJSON and as CSV, for every kind of
//! filter, on SQLite and PostgreSQL. The ranges are sized for 40 rows here (the console's are
//! 10,000), so some 3,000 rows cross dozens of them.

use reqwest::Method;
use serde_json::Value;

use crate::db_test;
use crate::helpers::TestApp;
use crate::operations_log::{fixture, seed, Fixture, Row, DAY, HOUR};
use crate::operations_log_partitions::table_order;

/// Rows seeded in time order, newest last: a burst of 1,400 rows in the newest 2 seconds (ten to a
/// millisecond: the first batch's last row and each range's edge fall among rows of one
/// millisecond), a row every 10 seconds for 3 hours, a day with nothing, 400 rows in one
/// millisecond, and 20 rows 20 days back. Every fifth row failed; targets cycle through `edge`,
/// `ed/x` and `other`.
async fn many(app: &TestApp, f: &Fixture) {
    let mut times: Vec<i64> = (0..20).map(|k| f.now - 20 * DAY + k * 1_000).collect();
    times.extend(std::iter::repeat_n(f.now - 4 * DAY, 400));
    times.extend((0..1_080).map(|k| f.now - 3 * HOUR - 10_000 + k * 10_000));
    times.extend((0..1_400).map(|k| f.now - 2_000 + k / 10));
    let rows: Vec<Row> = times
        .iter()
        .enumerate()
        .map(|(k, &at)| Row {
            target: match k % 3 {
                0 => format!("/workspace/edge/{k}.txt"),
                1 => format!("/workspace/ed/x{k}"),
                _ => format!("/workspace/other/{k}"),
            },
            ok: k % 5 != 0,
            detail: if k % 97 == 0 { "a seldom word".into() } else { String::new() },
            at,
            ..f.rows[0].clone()
        })
        .collect();
    for chunk in rows.chunks(500) {
        seed(app, chunk).await;
    }
}

async fn exported(app: &TestApp, query: &str) -> Vec<String> {
    let r = app.web.api(Method::GET, &format!("/api/v1/operations/export?{query}"), None).await;
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    r.body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json line")["id"].as_str().expect("id").to_string())
        .collect()
}

/// Every export case holds the rows of its condition in one table's order (`stage` names the
/// moment in the failure).
async fn exports_hold_table_order(app: &TestApp, f: &Fixture, stage: &str) {
    let (since, until) = (f.now - 5 * DAY, f.now - HOUR);
    let session = &f.rows[0].session;
    for (query, condition) in [
        // One session within a time range: a batch after a cursor is bounded by the cursor, not
        // by the range's end as well (`log::store::without_bound_behind`).
        (
            &*format!("session_key={session}&since={since}&until={until}"),
            format!(" AND session_key = '{session}' AND created_at >= {since} AND created_at <= {until}"),
        ),
        ("", String::new()),
        ("q=ed", " AND target LIKE '%ed%'".into()),
        ("q=edge", " AND target LIKE '%edge%'".into()),
        ("q=ed/x", " AND target LIKE '%ed/x%'".into()),
        // Terms of three characters or more in more rows than the first batch: on SQLite read
        // from the FTS5 index in ranges, batch edges among rows of one millisecond.
        ("q=/ed", " AND target LIKE '%/ed%'".into()),
        ("q=workspace", " AND target LIKE '%workspace%'".into()),
        ("failed_only=true", " AND ok = 0".into()),
        ("q=seldom", " AND detail LIKE '%seldom%'".into()),
        (&*format!("since={since}&until={until}"), format!(" AND created_at >= {since} AND created_at <= {until}")),
        (&*format!("q=other&since={since}"), format!(" AND target LIKE '%other%' AND created_at >= {since}")),
    ] {
        let expected = table_order(app, f, &condition).await;
        let got = exported(app, query).await;
        assert_eq!(got.len(), expected.len(), "{stage}, {query}: as many rows as the table holds");
        assert_eq!(got, expected, "{stage}, {query}: the table's rows in its order");
    }
}

db_test! {
    async fn an_export_read_in_ranges_holds_every_row_once_in_one_tables_order(app: TestApp) {
        let f = fixture(&app).await;
        many(&app, &f).await;
        app.state.log.set_export_range_rows(40);
        // On SQLite a search reads the FTS5 index and the rows still queued for it (a batch's
        // own statements, `sqlite_store::time_keyed_batch`): all queued, all indexed, and mixed.
        exports_hold_table_order(&app, &f, "as seeded").await;
        app.state.log.index_search().await.expect("index");
        if app.backend == crate::helpers::Backend::Sqlite {
            assert_eq!(app.count("sandbox_operations_search_queue").await, 0, "every row indexed");
        }
        exports_hold_table_order(&app, &f, "indexed").await;
        app.execute("UPDATE sandbox_operations SET detail = detail WHERE ok = 0 OR target LIKE '%other%'").await;
        if app.backend == crate::helpers::Backend::Sqlite {
            assert!(app.count("sandbox_operations_search_queue").await > 500, "the changed rows are queued again");
        }
        exports_hold_table_order(&app, &f, "some queued again").await;
        // Large enough to be read in ranges (more than the first batch, 1,000 on SQLite).
        assert!(table_order(&app, &f, " AND target LIKE '%/ed%'").await.len() > 1_500);
        // CSV: the header once, then the same rows.
        let r = app.web.api(Method::GET, "/api/v1/operations/export?q=ed&format=csv", None).await;
        let lines: Vec<&str> = r.body.split("\r\n").filter(|l| !l.is_empty()).collect();
        assert!(lines[0].starts_with("time,op,"), "{}", lines[0]);
        assert_eq!(lines.iter().filter(|l| l.starts_with("time,op,")).count(), 1, "one header");
        let ids: Vec<&str> = lines[1..].iter().map(|l| l.rsplit(',').next().expect("id")).collect();
        assert_eq!(ids, table_order(&app, &f, " AND target LIKE '%ed%'").await);
    }
}

db_test! {
    async fn exports_at_once_on_a_small_pool_each_hold_their_rows_and_pages_still_answer(app: TestApp) {
        // The tests' pool holds 5 connections (helpers.rs); an export reads two ranges at once, a
        // connection each while a batch is read (never while its bytes wait for the client). Eight
        // exports and pages at once: each export whole and in order, each page answered.
        let f = fixture(&app).await;
        many(&app, &f).await;
        app.state.log.set_export_range_rows(40);
        let queries = ["q=ed", "", "failed_only=true", "q=edge", "q=ed/x", "q=other", "q=ed", ""];
        let conditions = [
            " AND target LIKE '%ed%'",
            "",
            " AND ok = 0",
            " AND target LIKE '%edge%'",
            " AND target LIKE '%ed/x%'",
            " AND target LIKE '%other%'",
            " AND target LIKE '%ed%'",
            "",
        ];
        let exports = futures_util::future::join_all(queries.iter().map(|q| exported(&app, q)));
        let web = &app.web;
        let pages = futures_util::future::join_all(
            (0..8).map(|i| {
                let path = format!("/api/v1/operations?limit=50&q={}", ["ed", "other"][i % 2]);
                async move { web.api(Method::GET, &path, None).await }
            }),
        );
        let (exports, pages) = futures_util::join!(exports, pages);
        for ((query, condition), got) in queries.iter().zip(conditions).zip(exports) {
            let expected = table_order(&app, &f, condition).await;
            assert!(expected.len() > 300, "{query}: {} rows", expected.len());
            assert_eq!(got, expected, "{query}: the table's rows in its order");
        }
        for page in pages {
            assert_eq!(page.status, 200, "{}", page.body);
            assert_eq!(page.json()["items"].as_array().map(Vec::len), Some(50), "{}", page.body);
        }
    }
}

/// SQLite is built without its memory statistics (.cargo/config.toml): an allocation then takes no
/// process-wide mutex, which two connections reading at once contended for (docs/benchmarks.md).
#[tokio::test]
async fn the_bundled_sqlite_keeps_no_memory_statistics() {
    use sqlx::Connection as _;
    let mut c = sqlx::SqliteConnection::connect("sqlite::memory:").await.expect("sqlite");
    let options: Vec<(String,)> =
        sqlx::query_as("PRAGMA compile_options").fetch_all(&mut c).await.expect("compile options");
    assert!(options.iter().any(|(o,)| o == "DEFAULT_MEMSTATUS=0"), "{options:?}");
}
