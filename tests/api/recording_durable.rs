//! Nothing lost (issue 25): every acknowledged workspace operation is a row of the operation log,
//! whatever another organization deletes meanwhile, on another replica too, and after a `kill -9`
//! of the console; and SQLite answers many clients at once without "database is locked".

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use agenticos::startup::Application;
use reqwest::Method;
use serde_json::{json, Value};

use crate::db_test;
use crate::helpers::{test_config, TestApp};
use crate::support::console_process::{agenticos, printed_token, run_ok, serve};

/// A REST client of one organization: an API token and one kept connection.
#[derive(Clone)]
struct Rest {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Rest {
    fn new(base: &str, token: &str) -> Rest {
        let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        Rest { base: base.to_string(), token: token.to_string(), http }
    }

    fn on(&self, base: &str) -> Rest {
        Rest { base: base.to_string(), ..self.clone() }
    }

    /// The status and the JSON body (Null when none); a transport failure is status 0.
    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut rb = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        match rb.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                let v = r.json::<Value>().await.unwrap_or(Value::Null);
                (status, v)
            }
            Err(_) => (0, Value::Null),
        }
    }

    async fn created(&self, path: &str, body: Value) -> String {
        let (status, v) = self.call(Method::POST, path, Some(body)).await;
        assert_eq!(status, 201, "{path}: {v}");
        v["id"].as_str().expect("id").to_string()
    }

    /// Writes a small file through the run's workspace; whether it was acknowledged (2xx).
    async fn write(&self, run: &str, path: &str) -> bool {
        let url = format!("{}/api/v1/runs/{run}/workspace/files?path={path}", self.base);
        match self.http.put(url).bearer_auth(&self.token).body("hello").send().await {
            Ok(r) => r.status().is_success(),
            Err(_) => false,
        }
    }
}

async fn org_id(app: &TestApp, name: &str) -> String {
    app.scalar_strings(&format!("SELECT id FROM organizations WHERE name = '{name}'")).await.remove(0)
}

/// Targets of the organization's `write` rows.
async fn written(app: &TestApp, org: &str) -> Vec<String> {
    app.scalar_strings(&format!(
        "SELECT target FROM sandbox_operations WHERE organization_id = '{org}' AND operation = 'write'"
    ))
    .await
}

/// The default client's organization (the victim) and a second one (the tenant that deletes),
/// each with a token and a `state` agent.
async fn two_tenants(app: &TestApp) -> (Rest, String, Rest, String) {
    app.setup_owner().await;
    let victim = Rest::new(&app.address, &app.web.create_token_in_page("victim runtime", "admin").await);
    let attacker_web = app.other_org_user("tenant@example.com", "Deleting tenant").await;
    let attacker = Rest::new(&app.address, &attacker_web.create_token_in_page("tenant runtime", "admin").await);
    let body = json!({"name": "notes", "backend": "state", "scope": "conversation"});
    let victim_agent = victim.created("/api/v1/agents", body.clone()).await;
    let attacker_agent = attacker.created("/api/v1/agents", body).await;
    (victim, victim_agent, attacker, attacker_agent)
}

/// One tenant loops write-then-delete (through `deleter`, which may be another replica) while the
/// victim writes steadily; returns the victim's and the tenant's acknowledged targets.
async fn write_while_another_tenant_deletes(
    victim: Rest,
    victim_agent: String,
    attacker: Rest,
    deleter: Rest,
    attacker_agent: String,
) -> (Vec<String>, Vec<String>) {
    let conversation =
        victim.created("/api/v1/conversations", json!({"agent_id": victim_agent, "title": "steady"})).await;
    let run = victim
        .created(
            "/api/v1/runs",
            json!({"agent_id": victim_agent, "conversation_id": conversation, "started_by": "api"}),
        )
        .await;
    let steady = tokio::spawn(async move {
        let mut acknowledged = Vec::new();
        for i in 0..120 {
            let path = format!("steady-{i}.txt");
            if victim.write(&run, &path).await {
                acknowledged.push(format!("/workspace/{path}"));
            }
        }
        acknowledged
    });
    let churn = tokio::spawn(async move {
        let mut acknowledged = Vec::new();
        for i in 0..30 {
            let conv = attacker
                .created("/api/v1/conversations", json!({"agent_id": attacker_agent, "title": format!("t{i}")}))
                .await;
            let run = attacker
                .created(
                    "/api/v1/runs",
                    json!({"agent_id": attacker_agent, "conversation_id": conv, "started_by": "api"}),
                )
                .await;
            let path = format!("churn-{i}.txt");
            if attacker.write(&run, &path).await {
                acknowledged.push(format!("/workspace/{path}"));
            }
            let (status, v) = deleter.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
            assert!(status == 200 || status == 204, "delete: {status} {v}");
        }
        acknowledged
    });
    (steady.await.expect("steady writer"), churn.await.expect("deleting tenant"))
}

fn same(mut rows: Vec<String>, mut acknowledged: Vec<String>, who: &str) {
    rows.sort();
    acknowledged.sort();
    assert_eq!(rows, acknowledged, "{who}: the log must hold exactly the acknowledged writes");
}

db_test! {
    async fn a_tenant_deleting_its_conversations_takes_no_operation_row_with_it(app: TestApp) {
        let (victim, victim_agent, attacker, attacker_agent) = two_tenants(&app).await;
        let deleter = attacker.clone();
        let (steady, churn) = write_while_another_tenant_deletes(victim, victim_agent, attacker, deleter, attacker_agent).await;
        assert_eq!(steady.len(), 120, "every steady write is acknowledged");
        assert_eq!(churn.len(), 30, "every churn write is acknowledged");

        same(written(&app, &org_id(&app, "Acme").await).await, steady, "the victim");
        // The deleted conversations' own rows outlive them, their references emptied.
        let tenant = org_id(&app, "Deleting tenant").await;
        same(written(&app, &tenant).await, churn, "the deleting tenant");
        let dangling = app
            .scalar_strings(&format!(
                "SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE organization_id = '{tenant}' \
                 AND (conversation_id IS NOT NULL OR run_id IS NOT NULL OR workspace_id IS NOT NULL)"
            ))
            .await;
        assert!(dangling.is_empty(), "a deleted conversation's rows keep no reference to it: {dangling:?}");
    }
}

db_test! {
    async fn replicas_deleting_while_others_record_lose_no_row(app: TestApp) {
        let (victim, victim_agent, attacker, attacker_agent) = two_tenants(&app).await;
        // A second replica on the same database deletes; the first one records.
        let dir = tempfile::tempdir().expect("tempdir");
        let url = app.state.config.database.url.clone();
        let replica = Application::build(test_config(&url, dir.path(), &[])).await.expect("replica builds");
        let replica_address = format!("http://127.0.0.1:{}", replica.port());
        tokio::spawn(replica.run_until_stopped());
        let deleter = attacker.on(&replica_address);
        let (steady, churn) = write_while_another_tenant_deletes(victim, victim_agent, attacker, deleter, attacker_agent).await;
        same(written(&app, &org_id(&app, "Acme").await).await, steady, "the victim");
        same(written(&app, &org_id(&app, "Deleting tenant").await).await, churn, "the deleting tenant");
    }
}

db_test! {
    async fn fifty_clients_creating_finishing_and_deleting_get_no_server_error(app: TestApp) {
        app.setup_owner().await;
        let rest = Rest::new(&app.address, &app.web.create_token_in_page("load", "admin").await);
        let agent = rest.created("/api/v1/agents", json!({"name": "load", "backend": "state", "scope": "conversation"})).await;
        let server_errors = Arc::new(AtomicUsize::new(0));
        let acknowledged = Arc::new(AtomicUsize::new(0));
        let clients: Vec<_> = (0..50)
            .map(|c| {
                let rest = rest.clone();
                let agent = agent.clone();
                let server_errors = server_errors.clone();
                let acknowledged = acknowledged.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    for i in 0..4 {
                        let mut step = |status: u16, what: &str, v: &Value| {
                            if status >= 500 || status == 0 {
                                server_errors.fetch_add(1, Ordering::Relaxed);
                                seen.push(format!("{what}: {status} {v}"));
                            }
                            status
                        };
                        let (s, v) = rest.call(Method::POST, "/api/v1/conversations", Some(json!({"agent_id": agent, "title": format!("c{c}-{i}")}))).await;
                        if step(s, "conversation", &v) != 201 {
                            continue;
                        }
                        let conv = v["id"].as_str().unwrap_or_default().to_string();
                        let (s, v) = rest.call(Method::POST, "/api/v1/runs", Some(json!({"agent_id": agent, "conversation_id": conv, "started_by": "api"}))).await;
                        if step(s, "run", &v) == 201 {
                            let run = v["id"].as_str().unwrap_or_default().to_string();
                            if rest.write(&run, &format!("c{c}-{i}.txt")).await {
                                acknowledged.fetch_add(1, Ordering::Relaxed);
                            }
                            let (s, v) = rest.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
                            step(s, "finish", &v);
                        }
                        let (s, v) = rest.call(Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
                        step(s, "delete", &v);
                    }
                    seen
                })
            })
            .collect();
        let mut seen = Vec::new();
        for c in clients {
            seen.extend(c.await.expect("client"));
        }
        assert_eq!(server_errors.load(Ordering::Relaxed), 0, "no 5xx: {:?}", &seen[..seen.len().min(10)]);
        assert_eq!(acknowledged.load(Ordering::Relaxed), 200, "every write is acknowledged");
        assert_eq!(app.count("sandbox_operations").await, 200, "rows = acknowledged operations");
        assert_eq!(app.count("conversations").await, 0, "every conversation was deleted");
    }
}

// ---------------------------------------------------------------------------------------------
// `kill -9` under load

db_test! {
    async fn a_console_killed_under_load_loses_no_acknowledged_operation(database: TestDatabase) {
        run_ok(agenticos(&database).arg("migrate"));
        run_ok(agenticos(&database).args(["admin", "create-owner", "--email", "ops@example.com", "--organization", "Ops"]));
        let text = run_ok(agenticos(&database).args(["admin", "create-token", "--organization", "Ops", "--role", "admin", "--name", "load"]));
        let token = printed_token(&text);
        let mut console = serve(agenticos(&database)).await;
        let rest = Rest::new(&console.address, &token);
        let agent = rest.created("/api/v1/agents", json!({"name": "load", "backend": "state", "scope": "run"})).await;
        let runs: Vec<String> = {
            let mut v = Vec::new();
            for _ in 0..4 {
                v.push(rest.created("/api/v1/runs", json!({"agent_id": agent, "started_by": "api"})).await);
            }
            v
        };
        let acknowledged_count = Arc::new(AtomicUsize::new(0));
        let enough = Arc::new(tokio::sync::Notify::new());
        let writers: Vec<_> = runs
            .into_iter()
            .enumerate()
            .map(|(w, run)| {
                let rest = rest.clone();
                let count = acknowledged_count.clone();
                let enough = enough.clone();
                tokio::spawn(async move {
                    let mut acknowledged = Vec::new();
                    for i in 0..100_000 {
                        let path = format!("w{w}-{i}.txt");
                        if !rest.write(&run, &path).await {
                            break;
                        }
                        acknowledged.push(format!("/workspace/{path}"));
                        if count.fetch_add(1, Ordering::SeqCst) + 1 == 400 {
                            enough.notify_one();
                        }
                    }
                    acknowledged
                })
            })
            .collect();
        enough.notified().await;
        console.child.kill().await.expect("kill -9");
        let mut acknowledged = HashSet::new();
        for w in writers {
            acknowledged.extend(w.await.expect("writer"));
        }
        assert!(acknowledged.len() >= 400, "{}", acknowledged.len());

        let db = agenticos::db::Db::connect(&database.url, 1).await.expect("connect");
        // On SQLite what the killed console had not moved waits in the log's inbox, durable, for
        // the next console to move before anything reads the log.
        agenticos::sandbox::log::LogStore::new(db.clone()).settle().await;
        let rows: Vec<(String,)> = sqlx::query_as("SELECT target FROM sandbox_operations WHERE operation = 'write'")
            .fetch_all(db.pool())
            .await
            .expect("rows");
        let rows: HashSet<String> = rows.into_iter().map(|r| r.0).collect();
        let lost: Vec<&String> = acknowledged.iter().filter(|a| !rows.contains(*a)).collect();
        assert!(lost.is_empty(), "{} of {} acknowledged writes are not in the log: {:?}", lost.len(), acknowledged.len(), &lost[..lost.len().min(5)]);
        db.close().await;
    }
}

db_test! {
    async fn an_operation_that_never_reached_its_host_is_not_a_row(app: TestApp) {
        app.setup_owner().await;
        let rest = Rest::new(&app.address, &app.web.create_token_in_page("runtime", "admin").await);
        // The default connection's address has nothing listening: no call reaches a host.
        app.insert_idle_sandboxd_connection("nothing there").await;
        let agent = rest.created("/api/v1/agents", json!({"name": "svc", "backend": "service", "scope": "run"})).await;
        let run = rest.created("/api/v1/runs", json!({"agent_id": agent, "started_by": "api"})).await;
        let (status, problem) =
            rest.call(Method::POST, &format!("/api/v1/runs/{run}/workspace/exec"), Some(json!({"command": "echo hi"}))).await;
        assert_eq!(status, 502, "{problem}");
        assert!(!rest.write(&run, "a.txt").await, "the write is not acknowledged");
        // Finishing commits whatever a run's operations left behind.
        let (status, v) = rest.call(Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(app.count("sandbox_operations").await, 0, "docs/design.md §8: never reaching a host, it is no row");
    }
}

db_test! {
    async fn a_burst_of_more_rows_than_one_statement_holds_is_recorded_whole(app: TestApp) {
        // 1,200 operations queued while the log is locked: the writer, waiting for the lock, takes
        // them as batches of which at least one holds more than one statement's 500 rows (one
        // transaction of several statements). Each row is written once, with its own sequence
        // number and the agent it names (a batch written row by row, the last resort, would have
        // emptied that reference); rows of one millisecond keep distinct time keys on SQLite.
        app.setup_owner().await;
        let org = org_id(&app, "Acme").await;
        let rest = Rest::new(&app.address, &app.web.create_token_in_page("burst", "admin").await);
        let agent = rest.created("/api/v1/agents", json!({"name": "burst", "backend": "state", "scope": "run"})).await;
        let recorder = agenticos::sandbox::recording::Recorder::new(app.state.log.clone(), false);
        let at = agenticos::db::now_ms();
        let record = |i: i64| agenticos::sandbox::recording::Record {
            id: agenticos::db::new_time_ordered_id(),
            organization_id: org.clone(),
            workspace_id: "no-such-workspace".into(),
            session_key: "burst".into(),
            connection_id: None,
            agent_id: Some(agent.clone()),
            run_id: "no-such-run".into(),
            conversation_id: None,
            operation: agenticos::sandbox::recording::Operation::Write,
            target: format!("/workspace/burst-{i}.txt"),
            ok: true,
            detail: String::new(),
            duration_ms: 1,
            created_at: at + i / 400,
            seq: i,
        };
        let mut lock = app.state.db.begin().await.expect("lock");
        if app.state.db.kind() == agenticos::db::DbKind::Postgres {
            sqlx::query("LOCK TABLE sandbox_operations IN SHARE ROW EXCLUSIVE MODE").execute(&mut *lock).await.expect("lock");
        } else {
            sqlx::query("DELETE FROM sandbox_operations WHERE 0").execute(&mut *lock).await.expect("write lock");
        }
        for i in 0..1200 {
            recorder.record(record(i)).await;
        }
        lock.rollback().await.expect("unlock");
        recorder.flush_all().await;
        app.state.log.settle().await;

        let rows = app
            .scalar_strings(&format!(
                "SELECT target FROM sandbox_operations WHERE organization_id = '{org}' AND session_key = 'burst' \
                 AND agent_id = '{agent}' AND workspace_id IS NULL AND run_id IS NULL"
            ))
            .await;
        let unique: HashSet<&String> = rows.iter().collect();
        assert_eq!((rows.len(), unique.len()), (1200, 1200), "each queued row once, with its agent");
        let seqs = app
            .scalar_strings(&format!("SELECT CAST(COUNT(DISTINCT seq) AS TEXT) FROM sandbox_operations WHERE organization_id = '{org}'"))
            .await;
        assert_eq!(seqs, ["1200"]);
        if app.state.db.kind() == agenticos::db::DbKind::Sqlite {
            let outside = app
                .scalar_strings(
                    "SELECT CAST(COUNT(*) AS TEXT) FROM sandbox_operations \
                     WHERE rowid < created_at * 1048576 OR rowid >= (created_at + 1) * 1048576",
                )
                .await;
            assert_eq!(outside, ["0"], "every row at its time key");
        }
    }
}

db_test! {
    async fn a_batch_tried_again_writes_the_same_ids_and_each_row_once(app: TestApp) {
        // Issue 45: at shutdown a try whose commit landed but whose answer was lost was tried
        // again with new ids (a duplicate row) and logged as not recorded. Each row's id is now
        // minted once, when it is queued: what a try wrote is recognised, and never written twice.
        use agenticos::db::{Conn, DbKind};
        use agenticos::sandbox::log::{postgres_store, record_store, sqlite_store};
        use agenticos::sandbox::recording::{Operation, Record};
        // The write of each database, and which rows of a batch it has not written yet.
        async fn insert_batch(c: &mut Conn, kind: DbKind, rows: &[Record]) -> Result<(), record_store::NotRecorded> {
            match kind {
                DbKind::Sqlite => sqlite_store::insert_inbox(c, rows).await,
                DbKind::Postgres => postgres_store::insert_batch(c, rows).await,
            }
        }
        async fn missing(c: &mut Conn, kind: DbKind, rows: &[Record]) -> agenticos::db::DbResult<Vec<Record>> {
            Ok(match kind {
                DbKind::Sqlite => record_store::missing::<sqlite_store::Inbox>(c, rows).await?,
                DbKind::Postgres => record_store::missing::<postgres_store::Log>(c, rows).await?,
            })
        }
        app.setup_owner().await;
        let org = org_id(&app, "Acme").await;
        let at = agenticos::db::now_ms();
        let rows: Vec<Record> = (0..5)
            .map(|i| Record {
                id: agenticos::db::new_time_ordered_id(),
                organization_id: org.clone(),
                workspace_id: "no-such-workspace".into(),
                session_key: "retried".into(),
                connection_id: None,
                agent_id: None,
                run_id: "no-such-run".into(),
                conversation_id: None,
                operation: Operation::Write,
                target: format!("/workspace/retried-{i}.txt"),
                ok: true,
                detail: String::new(),
                duration_ms: 1,
                created_at: at,
                seq: i,
            })
            .collect();
        let ids = |rows: &[Record]| rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
        let kind = app.state.db.kind();
        let mut c = app.state.db.conn().await.expect("conn");
        // A first try that committed three of the rows.
        insert_batch(&mut c, kind, &rows[..3]).await.expect("first try");
        // What is missing is what the retry writes, and what a failure would be logged for.
        assert_eq!(ids(&missing(&mut c, kind, &rows).await.expect("missing")), ids(&rows[3..]));
        // The whole batch again, same ids: written once each, in the inbox or the log alike.
        insert_batch(&mut c, kind, &rows).await.expect("retry");
        app.state.log.settle().await;
        insert_batch(&mut c, kind, &rows).await.expect("again, after the move");
        app.state.log.settle().await;
        let stored = app
            .scalar_strings(&format!("SELECT CAST(id AS TEXT) FROM sandbox_operations WHERE session_key = 'retried' AND organization_id = '{org}'"))
            .await;
        let unique: HashSet<&String> = stored.iter().collect();
        assert_eq!((stored.len(), unique.len()), (5, 5), "each row once: {stored:?}");
        assert!(missing(&mut c, kind, &rows).await.expect("missing").is_empty());
        if kind == agenticos::db::DbKind::Sqlite {
            assert_eq!(app.count("sandbox_operations_inbox").await, 0, "the inbox moved whole");
        }
    }
}
