//! Issue 45, item 5: a database that does not answer is a 503 with `Retry-After` everywhere —
//! `/readyz`, `/api/v1/health`, any API route and any page — never a 500, and the console serves
//! again once it answers. PostgreSQL is reached through a relay the test cuts (the server
//! stopped, or the network to it failed, mid-session); SQLite is held locked by another
//! connection (a write waits out the busy timeout) and then closed under the console.

use reqwest::Method;
use serde_json::json;

use crate::db_test;
use crate::helpers::{postgres_admin_url, spawn_app_on, Backend, Resp, TestApp, TestDatabase};
use crate::support::tcp_relay::TcpRelay;
use crate::support::Org;

/// Asserts the answer of a database that did not answer: 503, the `unavailable` problem type,
/// words that say so, and `Retry-After`.
fn assert_unavailable(r: &Resp, what: &str) {
    let p = r.problem(503);
    assert!(p["type"].as_str().is_some_and(|t| t.ends_with("/unavailable")), "{what}: {p}");
    assert!(p["detail"].as_str().is_some_and(|d| d.contains("database did not answer")), "{what}: {p}");
    assert_eq!(r.header("retry-after").as_deref(), Some("5"), "{what}");
}

async fn assert_ready(app: &TestApp, ready: bool) {
    let r = app.web.get("/readyz").await;
    if ready {
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["database"], "ok");
    } else {
        assert_eq!(r.status, 503, "{}", r.body);
        assert_eq!(r.json()["database"], "unreachable");
        assert_eq!(r.header("retry-after").as_deref(), Some("5"));
    }
}

db_test! {
    async fn a_database_that_does_not_answer_is_a_503_everywhere_and_the_console_comes_back(database: TestDatabase) {
        match database.name.is_some() {
            true => postgres_cut_and_restored(database).await,
            false => sqlite_locked_then_closed(database).await,
        }
    }
}

async fn postgres_cut_and_restored(database: TestDatabase) {
    let admin = url::Url::parse(&postgres_admin_url()).expect("TEST_DATABASE_URL");
    let target = format!("{}:{}", admin.host_str().unwrap_or("127.0.0.1"), admin.port().unwrap_or(5432));
    let target = tokio::net::lookup_host(&target).await.expect("PostgreSQL's address").next().expect("an address");
    let relay = TcpRelay::start(target).await;
    let mut url = url::Url::parse(&database.url).expect("the test database's URL");
    url.set_host(Some("127.0.0.1")).expect("host");
    url.set_port(Some(relay.port())).expect("port");
    let database = TestDatabase { url: url.to_string(), ..database };
    let app = spawn_app_on(Backend::Postgres, database, &[]).await;
    let o = Org::new(&app).await;
    assert_eq!(o.call(Method::GET, "/api/v1/health", None).await.status, 200);
    assert_ready(&app, true).await;

    relay.cut();
    assert_ready(&app, false).await;
    assert_unavailable(&o.call(Method::GET, "/api/v1/health", None).await, "/api/v1/health");
    let agent = json!({"name": "while down", "backend": "state", "scope": "conversation"});
    assert_unavailable(&o.call(Method::POST, "/api/v1/agents", Some(agent)).await, "POST /api/v1/agents");
    // A page says so too, as a page.
    let home = app.web.get("/").await;
    assert_eq!(home.status, 503, "{}", home.body);
    assert!(home.body.contains("The database did not answer"), "{}", home.body);

    relay.restore();
    assert_ready(&app, true).await;
    let health = o.call(Method::GET, "/api/v1/health", None).await;
    assert_eq!(health.status, 200, "{}", health.body);
    assert!(health.json()["ok"].is_boolean(), "{}", health.body);
    let agents = o.call(Method::GET, "/api/v1/agents", None).await.json();
    let names: Vec<&str> = agents.as_array().expect("agents").iter().filter_map(|a| a["name"].as_str()).collect();
    assert!(!names.contains(&"while down"), "nothing was written while the database was away: {names:?}");
}

async fn sqlite_locked_then_closed(database: TestDatabase) {
    use sqlx::Connection;
    let url = database.url.clone();
    let app = spawn_app_on(Backend::Sqlite, database, &[]).await;
    let o = Org::new(&app).await;

    // Another connection holds the write lock: a write waits out the busy timeout, then is a 503.
    let mut holder = sqlx::SqliteConnection::connect(&url).await.expect("a second connection");
    sqlx::query("BEGIN IMMEDIATE").execute(&mut holder).await.expect("the write lock");
    let agent = json!({"name": "while locked", "backend": "state", "scope": "conversation"});
    assert_unavailable(&o.call(Method::POST, "/api/v1/agents", Some(agent.clone())).await, "a locked write");
    sqlx::query("ROLLBACK").execute(&mut holder).await.expect("the lock released");
    holder.close().await.expect("closed");
    let r = o.call(Method::POST, "/api/v1/agents", Some(agent)).await;
    assert_eq!(r.status, 201, "the same write once the lock is gone: {}", r.body);

    // The embedded database closed under the console (as at shutdown): 503, not 500.
    assert_ready(&app, true).await;
    app.state.db.close().await;
    assert_ready(&app, false).await;
    assert_unavailable(&o.call(Method::GET, "/api/v1/health", None).await, "/api/v1/health");
}
