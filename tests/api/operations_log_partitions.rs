//! The PostgreSQL operation log partitioned by rows (migration
//! `20270122090000_operation_log_partitions`, `sandbox/log/partitions.rs` and `partition_store.rs`): pages, the export and
//! the timeline read across many small partitions give what one table gives; retention drops
//! whole partitions and leaves exactly the rows after the cut-off; two writers making the same
//! next partition at once make it once. Every test runs on SQLite too (one table there): the same
//! rows, the same answers.

use agenticos::db::DbKind;
use agenticos::sandbox::log::partition_store;
use agenticos::sandbox::recording::{Operation, Record};
use reqwest::Method;
use serde_json::Value;

use crate::db_test;
use crate::helpers::TestApp;
use crate::operations_log::{fixture, paged_both_ways, seed, Fixture, Row, DAY, HOUR};

const MINUTE: i64 = 60_000;

/// Rows a partition is sized for in these tests: a partition of a minute (the narrowest) each.
const SMALL: i64 = 3;

/// Seeds rows across many small partitions, each batch's partition made first as the writer makes
/// it (`partition_store::extend`, on PostgreSQL): from three hours ago, a batch a minute (three rows in
/// the minute's last millisecond, three in the next minute's first, so ties sit on both sides of
/// each bound), an idle gap of a quarter of an hour, a batch just before the fixture's rows (made
/// into partitions after them: they move out of the default partition), and last a batch older
/// than the first partition (it stays in the default one). Returns the cut of the first minute.
async fn across_partitions(app: &TestApp, f: &Fixture) -> i64 {
    let base = (f.now - 3 * HOUR).div_euclid(MINUTE) * MINUTE;
    let mut batches: Vec<Vec<Row>> = Vec::new();
    let row = |at: i64, name: String, k: usize| Row {
        target: format!("/workspace/edge/{name}-{k}.txt"),
        session: format!("session-{}", k % 2),
        ok: k % 4 != 0,
        at,
        ..f.rows[0].clone()
    };
    for m in (0..40i64).filter(|m| !(10..25).contains(m)) {
        let at = base + m * MINUTE;
        batches.push((0..6).map(|k| row(if k < 3 { at - 1 } else { at }, m.to_string(), k)).collect());
    }
    batches.push((0..6).map(|k| row(f.now - HOUR - 50_000, "late".into(), k)).collect());
    batches.push((0..6).map(|k| row(base - 2 * DAY, "old".into(), k)).collect());
    for batch in &batches {
        if app.state.db.kind() == DbKind::Postgres {
            let times = batch.iter().map(|r| r.at);
            let (oldest, newest) = (times.clone().min().expect("rows"), times.max().expect("rows"));
            let mut c = app.state.db.conn().await.expect("conn");
            partition_store::extend(&mut c, oldest, newest, SMALL).await.expect("partition");
        }
        seed(app, batch).await;
    }
    base
}

/// The organization's rows matching `condition`, as one table orders them (newest first, ties by
/// id).
pub(crate) async fn table_order(app: &TestApp, f: &Fixture, condition: &str) -> Vec<String> {
    app.scalar_strings(&format!(
        "SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE organization_id = '{}'{condition} \
         ORDER BY created_at DESC, id DESC",
        f.org
    ))
    .await
}

/// The partitions of the log and the rows of its default partition (PostgreSQL).
async fn layout(app: &TestApp) -> (Vec<(i64, i64)>, i64) {
    let mut c = app.state.db.conn().await.expect("conn");
    let parts: Vec<(i64, i64)> =
        sqlx::query_as("SELECT start_ms, end_ms FROM operation_log_partitions ORDER BY start_ms")
            .fetch_all(&mut *c)
            .await
            .expect("registry");
    let (default,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM sandbox_operations_default").fetch_one(&mut *c).await.expect("default");
    (parts, default)
}

db_test! {
    async fn pages_across_partitions_return_the_tables_order_both_ways_with_ties_in_one_millisecond(app: TestApp) {
        let f = fixture(&app).await;
        let base = across_partitions(&app, &f).await;
        if app.state.db.kind() == DbKind::Postgres {
            let (parts, default) = layout(&app).await;
            assert!(parts.len() >= 25, "many partitions: {parts:?}");
            assert!(parts.windows(2).all(|p| p[0].1 == p[1].0), "one after the other, no gap: {parts:?}");
            assert_eq!(parts[1], (base + MINUTE, base + 2 * MINUTE), "a minute each once the rate is known");
            assert_eq!(default, 6, "only the rows older than the first partition wait in the default one");
        }
        for (query, condition) in [
            ("", ""),
            ("&q=edge", " AND target LIKE '%edge%'"),
            ("&q=edge/3", " AND target LIKE '%edge/3%'"),
            ("&session_key=session-0", " AND session_key = 'session-0'"),
            ("&failed_only=true", " AND ok = 0"),
        ] {
            let expected = table_order(&app, &f, condition).await;
            assert!(expected.len() > 12, "{query}: rows on many partitions");
            for limit in [4, 7] {
                let (forward, backward) = paged_both_ways(&app.web, &format!("?limit={limit}{query}")).await;
                assert_eq!(forward, expected, "{query} by {limit}: forward, the table's rows in its order");
                assert_eq!(backward, expected, "{query} by {limit}: backward, the table's rows in its order");
            }
        }
        // Within a range whose ends are partitions' bounds, and from a cursor inside it.
        let (since, until) = (base + 5 * MINUTE, base + 30 * MINUTE - 1);
        let expected = table_order(&app, &f, &format!(" AND created_at >= {since} AND created_at <= {until}")).await;
        let (forward, backward) = paged_both_ways(&app.web, &format!("?limit=5&since={since}&until={until}")).await;
        assert_eq!((forward, backward), (expected.clone(), expected));
    }
}

db_test! {
    async fn the_export_and_the_timeline_read_across_partitions_as_one_table(app: TestApp) {
        let f = fixture(&app).await;
        across_partitions(&app, &f).await;
        for (query, condition) in [("", ""), ("q=edge", " AND target LIKE '%edge%'"), ("failed_only=true", " AND ok = 0")] {
            let r = app.web.api(Method::GET, &format!("/api/v1/operations/export?{query}"), None).await;
            assert_eq!(r.status, 200);
            let exported: Vec<String> = r
                .body
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("json line")["id"].as_str().expect("id").to_string())
                .collect();
            assert_eq!(exported, table_order(&app, &f, condition).await, "{query}: the export in the table's order");
        }
        // The timeline's bars: every row counted once, each in its bar; capped, the newest rows.
        let (start, width) = (f.now - 4 * DAY, HOUR);
        let times: Vec<i64> = app
            .scalar_strings(&format!(
                "SELECT CAST(created_at AS TEXT) FROM sandbox_operations WHERE organization_id = '{}' ORDER BY created_at DESC",
                f.org
            ))
            .await
            .iter()
            .map(|t| t.parse().expect("a time"))
            .collect();
        let filter = agenticos::sandbox::operations::filter::parse_filter(
            &agenticos::sandbox::operations::filter::FilterInput::from_query(""),
        )
        .expect("filter");
        for cap in [times.len() as u32 + 1, 10, 25] {
            let mut reader = app.state.log.reader().await.expect("reader");
            let bars = reader.timeline(&f.org, &filter, None, (start, width), cap).await.expect("timeline");
            let read: Vec<i64> = times.iter().take(cap as usize).copied().collect();
            let mut want: Vec<(i64, i64)> = Vec::new();
            for t in &read {
                let bar = (t - start) / width;
                match want.iter_mut().find(|w| w.0 == bar) {
                    Some(w) => w.1 += 1,
                    None => want.push((bar, 1)),
                }
            }
            let mut got: Vec<(i64, i64)> = bars.iter().map(|b| (b.bar, b.rows)).collect();
            got.sort_unstable();
            want.sort_unstable();
            assert_eq!(got, want, "cap {cap}: the newest rows, each in its bar");
            let oldest = bars.iter().map(|b| b.oldest).min().expect("bars");
            assert_eq!(oldest, *read.last().expect("rows"), "cap {cap}: the oldest row read");
        }
    }
}

db_test! {
    async fn retention_drops_whole_partitions_and_leaves_exactly_the_rows_after_the_cut_off(app: TestApp) {
        let f = fixture(&app).await;
        let base = across_partitions(&app, &f).await;
        // Inside the idle gap's partition: the partitions before it go whole, its own rows and the
        // default partition's old rows by batch.
        let cutoff = base + 20 * MINUTE;
        let before = app.count("sandbox_operations").await;
        let kept = app.scalar_strings(&format!("SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE created_at >= {cutoff} ORDER BY 1")).await;
        let n = agenticos::sandbox::operations::sweep::sweep_before(&app.state.log, cutoff).await.expect("sweep");
        assert_eq!(n as usize + kept.len(), before as usize, "the count is the rows deleted");
        let left = app.scalar_strings("SELECT CAST(id AS TEXT) FROM sandbox_operations ORDER BY 1").await;
        assert_eq!(left, kept, "exactly the rows at or after the cut-off are left");
        if app.state.db.kind() == DbKind::Postgres {
            let (parts, default) = layout(&app).await;
            assert!(parts.iter().all(|p| p.1 > cutoff), "no partition ends by the cut-off: {parts:?}");
            assert_eq!(parts[0].0, base + 10 * MINUTE, "the partition the cut-off falls in stays");
            assert_eq!(default, 0);
            let tables = app
                .scalar_strings("SELECT CAST(COUNT(*) AS TEXT) FROM pg_class WHERE relname LIKE 'sandbox_operations_p%' AND relkind = 'r'")
                .await;
            assert_eq!(tables, [parts.len().to_string()], "the dropped partitions' tables are gone");
        }
        // The pages read what is left, in the table's order.
        let (forward, backward) = paged_both_ways(&app.web, "?limit=6").await;
        let expected = table_order(&app, &f, "").await;
        assert_eq!((forward, backward), (expected.clone(), expected));
    }
}

db_test! {
    async fn two_writers_making_the_same_next_partition_at_once_make_it_once(app: TestApp) {
        let f = fixture(&app).await;
        // Two consoles (two stores on the same database), their partitions sized small.
        let (one, two) = (agenticos::sandbox::log::LogStore::new(app.state.db.clone()), agenticos::sandbox::log::LogStore::new(app.state.db.clone()));
        one.set_partition_rows(SMALL);
        two.set_partition_rows(SMALL);
        let record = |at: i64, i: i64| Record {
            id: agenticos::db::new_time_ordered_id(),
            organization_id: f.org.clone(),
            workspace_id: "no-such-workspace".into(),
            session_key: "race".into(),
            connection_id: None,
            agent_id: None,
            run_id: "no-such-run".into(),
            conversation_id: None,
            operation: Operation::Write,
            target: format!("/workspace/race-{i}.txt"),
            ok: true,
            detail: String::new(),
            duration_ms: 1,
            created_at: at,
            seq: i,
        };
        // After the fixture's rows (the newest an hour ago): they stay in the default partition.
        let start = (f.now - HOUR).div_euclid(MINUTE) * MINUTE + 2 * MINUTE;
        let mut written = Vec::new();
        for step in 0..8i64 {
            // Both reach past the newest partition's end at once, in the same minute.
            let at = start + step * 2 * MINUTE;
            let a: Vec<Record> = (0..3).map(|i| record(at + i, step * 10 + i)).collect();
            let b: Vec<Record> = (3..6).map(|i| record(at + i, step * 10 + i)).collect();
            let (ra, rb) = tokio::join!(one.write(&a), two.write(&b));
            ra.expect("the first writer");
            rb.expect("the second writer");
            written.extend(a.iter().chain(&b).map(|r| r.id.clone()));
        }
        written.sort();
        let mut stored = app.scalar_strings("SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE session_key = 'race'").await;
        stored.sort();
        assert_eq!(stored, written, "every row of both writers once");
        if app.state.db.kind() == DbKind::Postgres {
            let (parts, default) = layout(&app).await;
            assert!(parts.windows(2).all(|p| p[0].1 == p[1].0), "one after the other, no overlap: {parts:?}");
            assert!(parts.len() >= 8, "a partition a step at least: {parts:?}");
            assert_eq!(default, 90, "only the fixture's rows, older than the first partition, are in the default one");
            let tables = app
                .scalar_strings("SELECT CAST(COUNT(*) AS TEXT) FROM pg_class WHERE relname LIKE 'sandbox_operations_p%' AND relkind = 'r'")
                .await;
            assert_eq!(tables, [parts.len().to_string()], "no partition made twice or left unregistered");
        }
    }
}
