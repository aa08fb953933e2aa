//! A run's resolved rows kept for a second (issue 26, CPU per operation): on SQLite an expired
//! entry is renewed by one change counter (`resolve_epoch`) instead of six statements, and the
//! counter moves with every change to what a run is resolved from, by this console or another one
//! on the same database, so such a change still reaches the next operation within about a second.
//! On PostgreSQL there is no counter: the rows are looked up again.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;

use agenticos::db::DbKind;
use agenticos::sandbox::workspaces::cache::RESOLVE_TTL;

use crate::db_test;
use crate::helpers::TestApp;
use crate::operations_inbox;

/// A run of a new `state` agent (no host needed): the bearer token, the agent's id and the run's.
async fn open_run(app: &TestApp) -> (String, String, String) {
    let (token, run) = operations_inbox::open_run(app).await;
    let agent = app.scalar_strings(&format!("SELECT agent_id FROM runs WHERE id = '{run}'")).await.remove(0);
    (token, agent, run)
}

/// Writes `path` in the run's workspace (a document: the write moves the counter): the status and
/// the body.
async fn write(app: &TestApp, token: &str, run: &str, path: &str) -> (u16, String) {
    let r = app
        .web
        .bearer_raw(token, Method::PUT, &format!("/api/v1/runs/{run}/workspace/files?path={path}"), "hello")
        .await;
    (r.status.as_u16(), r.body)
}

/// Reads `a.txt` in the run's workspace: the status and the body.
async fn read(app: &TestApp, token: &str, run: &str) -> (u16, String) {
    let r = app.web.bearer(token, Method::GET, &format!("/api/v1/runs/{run}/workspace/files?path=a.txt"), None).await;
    (r.status.as_u16(), r.body)
}

async fn counter(app: &TestApp) -> i64 {
    app.scalar_strings("SELECT CAST(n AS TEXT) FROM resolve_epoch WHERE id = 1").await[0].parse().expect("a number")
}

db_test! {
    async fn a_run_finished_by_another_console_is_refused_within_about_a_second(app: TestApp) {
        let (token, _, run) = open_run(&app).await;
        for name in ["a.txt", "b.txt"] {
            let (status, body) = write(&app, &token, &run, name).await;
            assert!((200..300).contains(&status), "{status} {body}");
        }
        // Reads for a little longer than an entry lives: the run is resolved again at least once
        // after the writes (which moved the counter), so its entry now carries the counter as it
        // stands, and on SQLite the next ones are renewals.
        let reading = Instant::now();
        while reading.elapsed() < RESOLVE_TTL + Duration::from_millis(300) {
            assert_eq!(read(&app, &token, &run).await.0, 200);
        }
        // Another console finishes the run: this one's cache is not told.
        let now = agenticos::db::now_ms();
        app.execute(&format!("UPDATE runs SET status = 'finished', finished_at = {now} WHERE id = '{run}'")).await;
        let changed = Instant::now();
        // Reads only: a write to a document moves the counter itself.
        let refused = loop {
            let (status, body) = read(&app, &token, &run).await;
            if status == 409 {
                break body;
            }
            assert!((200..300).contains(&status), "{status} {body}");
            assert!(changed.elapsed() < Duration::from_secs(5), "the finished run was still served after 5 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(refused.contains("This run is finished."), "{refused}");
    }
}

db_test! {
    async fn every_change_to_what_a_run_is_resolved_from_moves_the_counter_and_new_rows_do_not(app: TestApp) {
        let (token, agent, run) = open_run(&app).await;
        let (status, body) = write(&app, &token, &run, "a.txt").await;
        assert!((200..300).contains(&status), "{status} {body}");
        if app.state.db.kind() != DbKind::Sqlite {
            let tables = app.scalar_strings("SELECT table_name FROM information_schema.tables WHERE table_name = 'resolve_epoch'").await;
            assert!(tables.is_empty(), "PostgreSQL looks the rows up again and keeps no counter: {tables:?}");
            return;
        }
        // New rows change nothing already resolved.
        let before = counter(&app).await;
        let body = json!({"agent_id": agent, "started_by": "api"});
        let other = app.web.bearer(&token, Method::POST, "/api/v1/runs", Some(body)).await;
        assert_eq!(other.status, 201, "{}", other.body);
        let other = other.json()["id"].as_str().expect("run id").to_string();
        assert_eq!(counter(&app).await, before, "a new run of the agent");
        let workspace = app.scalar_strings(&format!("SELECT id FROM sandbox_workspaces WHERE run_id = '{run}'")).await.remove(0);
        // Each change, as another console would make it, in SQL.
        let changes = [
            format!("UPDATE runs SET workspace_opened = workspace_opened WHERE id = '{run}'"),
            format!("UPDATE agents SET name = name WHERE id = '{agent}'"),
            format!("UPDATE sandbox_workspaces SET updated_at = updated_at + 1 WHERE id = '{workspace}'"),
            format!("DELETE FROM runs WHERE id = '{other}'"),
        ];
        for sql in changes {
            let before = counter(&app).await;
            app.execute(&sql).await;
            assert_eq!(counter(&app).await, before + 1, "{sql}");
        }
    }
}
