//! The operation log written behind the recorder (issue 26): on SQLite an operation's row is
//! committed into `sandbox_operations_inbox` before its answer and moved into the log in bulk, and
//! every reader of the log moves the inbox first. So a row is read at once, a row the log refuses
//! stays in the inbox without holding its neighbours back, and a move that fails leaves the inbox
//! whole and writes no row twice, and another console on the same database reads it at once too.
//! On PostgreSQL rows are written into the log directly.

use reqwest::Method;
use serde_json::{json, Value};

use agenticos::db::DbKind;
use agenticos::sandbox::log::sqlite_store::{self as store, Settled};

use crate::db_test;
use crate::helpers::TestApp;

/// A run of a `state` agent (no host needed) and the bearer token of the owner's organization.
pub(crate) async fn open_run(app: &TestApp) -> (String, String) {
    app.setup_owner().await;
    let token = app.web.create_token_in_page("runtime", "admin").await;
    let run = run_with(&app.web, &token).await;
    (token, run)
}

/// A run of a new `state` agent of the organization `token` belongs to.
async fn run_with(web: &crate::helpers::Client, token: &str) -> String {
    let agent = web
        .bearer(
            token,
            Method::POST,
            "/api/v1/agents",
            Some(json!({"name": "notes", "backend": "state", "scope": "run"})),
        )
        .await;
    assert_eq!(agent.status, 201, "{}", agent.body);
    let agent = agent.json()["id"].as_str().expect("agent id").to_string();
    let run =
        web.bearer(token, Method::POST, "/api/v1/runs", Some(json!({"agent_id": agent, "started_by": "api"}))).await;
    assert_eq!(run.status, 201, "{}", run.body);
    run.json()["id"].as_str().expect("run id").to_string()
}

/// Writes `path` in the run's workspace; asserts it was acknowledged.
async fn write(app: &TestApp, token: &str, run: &str, path: &str) {
    let r = app
        .web
        .bearer_raw(token, Method::PUT, &format!("/api/v1/runs/{run}/workspace/files?path={path}"), "hello")
        .await;
    assert!(r.status.is_success(), "{path}: {} {}", r.status, r.body);
}

/// The targets of a page of the log, newest first.
fn targets(page: &Value) -> Vec<String> {
    page["items"].as_array().expect("items").iter().map(|i| i["target"].as_str().expect("target").to_string()).collect()
}

/// The targets of the run's rows as the API lists them, oldest first.
async fn listed(app: &TestApp, token: &str, run: &str) -> Vec<String> {
    listed_by(&app.web, token, run).await
}

/// [`listed`] through any client.
async fn listed_by(web: &crate::helpers::Client, token: &str, run: &str) -> Vec<String> {
    let r = web.bearer(token, Method::GET, &format!("/api/v1/operations?run_id={run}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    targets(&r.json()).into_iter().rev().collect()
}

/// Rows of `table` read straight from the database: no inbox moved first.
async fn raw_count(app: &TestApp, table: &str) -> i64 {
    let mut c = app.state.db.conn().await.expect("conn");
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(&mut *c).await.expect("count")
}

/// Rows of the log and of the inbox, on `c`.
async fn sizes(c: &mut agenticos::db::Conn) -> (i64, i64) {
    let log: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sandbox_operations").fetch_one(&mut *c).await.expect("log");
    let inbox: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sandbox_operations_inbox").fetch_one(&mut *c).await.expect("inbox");
    (log, inbox)
}

fn on_sqlite(app: &TestApp) -> bool {
    app.state.db.kind() == DbKind::Sqlite
}

db_test! {
    async fn an_answered_operation_is_in_what_the_next_read_of_the_log_sees(app: TestApp) {
        let (token, run) = open_run(&app).await;
        for name in ["a.txt", "b.txt", "c.txt"] {
            write(&app, &token, &run, name).await;
        }
        if on_sqlite(&app) {
            // Committed before the answers, into the inbox: nothing has read the log yet.
            assert_eq!((raw_count(&app, "sandbox_operations_inbox").await, raw_count(&app, "sandbox_operations").await), (3, 0));
        } else {
            assert_eq!(raw_count(&app, "sandbox_operations").await, 3, "PostgreSQL: into the log before the answers");
        }
        assert_eq!(listed(&app, &token, &run).await, ["/workspace/a.txt", "/workspace/b.txt", "/workspace/c.txt"]);
        if on_sqlite(&app) {
            assert_eq!((raw_count(&app, "sandbox_operations_inbox").await, raw_count(&app, "sandbox_operations").await), (0, 3));
            let keyed = app
                .scalar_strings(&format!(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM sandbox_operations WHERE run_id = '{run}' AND agent_id IS NOT NULL \
                     AND workspace_id IS NOT NULL AND rowid >= created_at * 1048576 AND rowid < (created_at + 1) * 1048576"
                ))
                .await;
            assert_eq!(keyed, ["3"], "moved with their references and at their time keys");
            assert_eq!(raw_count(&app, "sandbox_operations_search_queue").await, 3, "queued for the search index");
        }
        let found = app.web.bearer(&token, Method::GET, "/api/v1/operations?q=b.txt", None).await;
        assert_eq!(found.status, 200, "{}", found.body);
        assert_eq!(targets(&found.json()), ["/workspace/b.txt"], "the search finds the moved row");
    }
}

db_test! {
    async fn a_row_the_log_refuses_leaves_its_neighbours_to_be_read(app: TestApp) {
        let (token, run) = open_run(&app).await;
        if on_sqlite(&app) {
            app.execute(
                "CREATE TRIGGER refuse_by_test BEFORE INSERT ON sandbox_operations WHEN new.target LIKE '%refused%' \
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
            )
            .await;
        } else {
            app.execute(
                "CREATE FUNCTION refuse_by_test() RETURNS trigger AS $$ BEGIN \
                 IF NEW.target LIKE '%refused%' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$ \
                 LANGUAGE plpgsql",
            )
            .await;
            app.execute(
                "CREATE TRIGGER refuse_by_test BEFORE INSERT ON sandbox_operations FOR EACH ROW EXECUTE FUNCTION refuse_by_test()",
            )
            .await;
        }
        // Another organization's row waits beside the refused one.
        let tenant = app.other_org_user("tenant@example.com", "Tenant").await;
        let tenant_token = tenant.create_token_in_page("tenant runtime", "admin").await;
        let tenant_run = run_with(&tenant, &tenant_token).await;
        write(&app, &token, &run, "before.txt").await;
        write(&app, &token, &run, "refused.txt").await;
        let r = tenant
            .bearer_raw(&tenant_token, Method::PUT, &format!("/api/v1/runs/{tenant_run}/workspace/files?path=tenant.txt"), "hi")
            .await;
        assert!(r.status.is_success(), "{} {}", r.status, r.body);
        write(&app, &token, &run, "after.txt").await;
        assert_eq!(listed_by(&tenant, &tenant_token, &tenant_run).await, ["/workspace/tenant.txt"], "the other organization's row");
        assert_eq!(listed(&app, &token, &run).await, ["/workspace/before.txt", "/workspace/after.txt"]);
        if !on_sqlite(&app) {
            // PostgreSQL writes into the log before the answer: the refused row is dropped, logged.
            assert!(crate::helpers::captured_logs().contains("operations_not_recorded"));
            return;
        }
        // SQLite: the refused row waits in the inbox, logged, and is moved once the log takes it.
        let waiting = {
            let mut c = app.state.db.conn().await.expect("conn");
            let rows: Vec<String> =
                sqlx::query_scalar("SELECT target FROM sandbox_operations_inbox").fetch_all(&mut *c).await.expect("inbox");
            rows
        };
        assert_eq!(waiting, ["/workspace/refused.txt"]);
        assert!(crate::helpers::captured_logs().contains("operations_not_moved"));
        app.execute("DROP TRIGGER refuse_by_test").await;
        assert_eq!(
            listed(&app, &token, &run).await,
            ["/workspace/before.txt", "/workspace/refused.txt", "/workspace/after.txt"]
        );
        assert_eq!(raw_count(&app, "sandbox_operations_inbox").await, 0);
    }
}

db_test! {
    async fn a_move_that_fails_leaves_the_inbox_whole_and_writes_no_row_twice(app: TestApp) {
        let (token, run) = open_run(&app).await;
        for name in ["one.txt", "two.txt", "three.txt"] {
            write(&app, &token, &run, name).await;
        }
        if !on_sqlite(&app) {
            assert_eq!(raw_count(&app, "sandbox_operations").await, 3, "PostgreSQL has no inbox");
            return;
        }
        let mut c = app.state.db.conn().await.expect("conn");
        // The inbox refuses to lose a row on this connection: the log has already gained the rows
        // when the statement that takes them out of the inbox fails, whole and row by row.
        sqlx::query(
            "CREATE TEMP TRIGGER keep_inbox BEFORE DELETE ON main.sandbox_operations_inbox \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
        )
        .execute(&mut *c)
        .await
        .expect("trigger");
        let step = store::settle_step(&mut c, 500, true).await.expect("the step ends");
        assert_eq!(step, Settled { moved: 0, indexed: 0, left: Some(3) });
        assert_eq!(sizes(&mut c).await, (0, 3), "the failed move changed the log or the inbox");
        sqlx::query("DROP TRIGGER temp.keep_inbox").execute(&mut *c).await.expect("drop trigger");
        let step = store::settle_step(&mut c, 2, true).await.expect("two rows");
        assert_eq!((step.moved, step.left), (2, None), "the oldest two, more may wait");
        assert_eq!(sizes(&mut c).await, (2, 1));
        let step = store::settle_step(&mut c, 2, true).await.expect("the last row");
        assert_eq!((step.moved, step.left), (1, Some(0)));
        assert_eq!(sizes(&mut c).await, (3, 0));
        drop(c);
        let ids = app.scalar_strings("SELECT DISTINCT CAST(id AS TEXT) FROM sandbox_operations").await;
        assert_eq!(ids.len(), 3, "each row once");
        assert_eq!(listed(&app, &token, &run).await, ["/workspace/one.txt", "/workspace/two.txt", "/workspace/three.txt"]);
    }
}

db_test! {
    async fn a_row_one_console_answered_is_read_at_once_through_another_on_the_same_database(app: TestApp) {
        let (token, run) = open_run(&app).await;
        // A second console on the same database, as the replica tests run one.
        let dir = tempfile::tempdir().expect("tempdir");
        let url = app.state.config.database.url.clone();
        let replica = agenticos::startup::Application::build(crate::helpers::test_config(&url, dir.path(), &[]))
            .await
            .expect("the second console builds");
        let other = crate::helpers::Client::new(&format!("http://127.0.0.1:{}", replica.port()));
        tokio::spawn(replica.run_until_stopped());
        // The second console reads the log once, so it knows of no row in the inbox.
        let r = other.bearer(&token, Method::GET, &format!("/api/v1/operations?run_id={run}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["items"].as_array().map(Vec::len), Some(0));
        write(&app, &token, &run, "seen-elsewhere.txt").await;
        if on_sqlite(&app) {
            assert_eq!(raw_count(&app, "sandbox_operations_inbox").await, 1, "in the first console's inbox");
        }
        let r = other.bearer(&token, Method::GET, &format!("/api/v1/operations?run_id={run}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(targets(&r.json()), ["/workspace/seen-elsewhere.txt"], "the second console moved the first one's inbox");
    }
}
