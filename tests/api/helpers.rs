//! `spawn_app`: the real application on 127.0.0.1:0 with a fresh database per test (a temp SQLite
//! file, or a new randomly named database on the PostgreSQL server of `TEST_DATABASE_URL`), and a
//! reqwest client with a cookie jar and no redirects. Logs are captured for leak searches.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use actix_web::web::Data;
use agenticos::config::Config;
use agenticos::startup::{AppState, Application};
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use sqlx::Connection;

pub const OWNER_EMAIL: &str = "owner@example.com";
pub const OWNER_PASSWORD: &str = "correct horse battery";
pub const OWNER_ORG: &str = "Acme";
/// The password `member_with_role` chooses for each new member.
pub const MEMBER_PASSWORD: &str = "member password 1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Generates one test per database: `name::sqlite` and `name::postgres`. A passing PostgreSQL
/// test drops its database; a failing one keeps it to look at.
///
/// - `async fn name(app: TestApp) { … }`: a fresh app.
/// - `async fn name(app: TestApp) settings(&[("NAME", "value")]) { … }`: an app started with extra
///   settings (evaluated in the test, so they may await, e.g. a peer's token).
/// - `async fn name(app: TestApp) -> anyhow::Result<()> { … }`: a body that returns a `Result`
///   (the database is dropped only on `Ok`).
/// - `async fn name(database: TestDatabase) { … }`: a fresh, empty database and no app (for the
///   binary's own commands).
#[macro_export]
macro_rules! db_test {
    ($(#[$meta:meta])* async fn $name:ident($app:ident: TestApp) $body:block) => {
        $crate::db_test! { $(#[$meta])* async fn $name($app: TestApp) settings(&[]) $body }
    };
    ($(#[$meta:meta])* async fn $name:ident($app:ident: TestApp) settings($settings:expr) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(#[$meta])*
            async fn run($app: $crate::helpers::TestApp) $body
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                if let Some(app) = $crate::helpers::spawn_app_with($crate::helpers::Backend::Sqlite, $settings).await {
                    run(app).await
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(app) = $crate::helpers::spawn_app_with($crate::helpers::Backend::Postgres, $settings).await {
                    let database = app.database.clone();
                    run(app).await;
                    $crate::helpers::drop_database(database).await;
                }
            }
        }
    };
    ($(#[$meta:meta])* async fn $name:ident($app:ident: TestApp) -> $ret:ty $body:block) => {
        $crate::db_test! { $(#[$meta])* async fn $name($app: TestApp) settings(&[]) -> $ret $body }
    };
    ($(#[$meta:meta])* async fn $name:ident($app:ident: TestApp) settings($settings:expr) -> $ret:ty $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(#[$meta])*
            async fn run($app: $crate::helpers::TestApp) -> $ret $body
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() -> $ret {
                match $crate::helpers::spawn_app_with($crate::helpers::Backend::Sqlite, $settings).await {
                    Some(app) => run(app).await,
                    None => Ok(()),
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() -> $ret {
                let Some(app) = $crate::helpers::spawn_app_with($crate::helpers::Backend::Postgres, $settings).await else {
                    return Ok(());
                };
                let database = app.database.clone();
                let outcome = run(app).await;
                if outcome.is_ok() {
                    $crate::helpers::drop_database(database).await;
                }
                outcome
            }
        }
    };
    ($(#[$meta:meta])* async fn $name:ident($db:ident: TestDatabase) $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $(#[$meta])*
            async fn run($db: $crate::helpers::TestDatabase) $body
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                if let Some(database) = $crate::helpers::fresh_database($crate::helpers::Backend::Sqlite).await {
                    run(database).await
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                if let Some(database) = $crate::helpers::fresh_database($crate::helpers::Backend::Postgres).await {
                    let name = database.name.clone();
                    run(database).await;
                    $crate::helpers::drop_database(name).await;
                }
            }
        }
    };
}

// ---------------------------------------------------------------------------------------------
// Captured logs

#[derive(Clone)]
struct LogSink(Arc<Mutex<Vec<u8>>>);

impl Write for LogSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if std::env::var("TEST_LOG").is_ok() {
            let _ = std::io::stderr().write_all(buf);
        }
        self.0.lock().map(|mut v| v.extend_from_slice(buf)).map_err(|_| std::io::Error::other("poisoned"))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_sink() -> &'static Arc<Mutex<Vec<u8>>> {
    static SINK: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    SINK.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = LogSink(buf.clone());
        let log = agenticos::config::LogConfig {
            filter: "debug,sqlx=warn,hyper=info,reqwest=info,actix_server=warn,h2=info,rustls=info".into(),
            format: agenticos::config::LogFormat::Json,
        };
        agenticos::telemetry::init(&log, move || sink.clone());
        buf
    })
}

/// Everything every test in this process has logged so far.
pub fn captured_logs() -> String {
    String::from_utf8_lossy(&log_sink().lock().expect("log lock")).to_string()
}

// ---------------------------------------------------------------------------------------------
// Databases

fn is_ci() -> bool {
    std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
}

pub fn postgres_admin_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

async fn fresh_postgres() -> Option<String> {
    let admin = postgres_admin_url();
    let mut conn = match sqlx::PgConnection::connect(&admin).await {
        Ok(c) => c,
        Err(e) => {
            if is_ci() {
                panic!("PostgreSQL is required with CI=true, but {admin} does not answer: {e}");
            }
            eprintln!("SKIPPED: PostgreSQL at {admin} does not answer ({e}); set TEST_DATABASE_URL");
            return None;
        }
    };
    sweep_abandoned_databases(&mut conn).await;
    // The test process's pid is part of the name, so databases of dead runs can be swept.
    let name = format!("agos_t_{}_{}", std::process::id(), uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.expect("create test database");
    let mut url = url::Url::parse(&admin).expect("TEST_DATABASE_URL is a URL");
    url.set_path(&name);
    Some(url.to_string())
}

/// Drops the databases of test processes that are gone (a panicking test keeps its own).
async fn sweep_abandoned_databases(conn: &mut sqlx::PgConnection) {
    static SWEPT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if SWEPT.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let names: Vec<String> = sqlx::query_scalar("SELECT datname FROM pg_database WHERE datname LIKE 'agos_t_%'")
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
    for name in names {
        let pid = name.trim_start_matches("agos_t_").split('_').next().unwrap_or_default();
        let alive = !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && std::path::Path::new("/proc").join(pid).exists();
        if !alive {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut *conn).await;
        }
    }
}

/// Drops a test's database once the test passed.
pub async fn drop_database(name: Option<String>) {
    let Some(name) = name else { return };
    if let Ok(mut conn) = sqlx::PgConnection::connect(&postgres_admin_url()).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(&mut conn).await;
    }
}

// ---------------------------------------------------------------------------------------------
// The application

#[allow(dead_code)]
pub struct TestApp {
    pub address: String,
    pub port: u16,
    pub backend: Backend,
    pub state: Data<AppState>,
    /// The PostgreSQL database of this test, dropped when it passes.
    pub database: Option<String>,
    /// The default browser-like client (cookie jar, no redirects).
    pub web: Client,
    _dir: tempfile::TempDir,
}

/// The runtime catalog the tests run with: `workbench` (the shipped entry as it was before the
/// coding agents) and `python` (a ready-made image without a network), so that the tests cover
/// both kinds of entry; the shipped catalog (`catalog/`) has `workbench` only. Its
/// `sandboxd.version` is a link to the pin.
pub const TEST_CATALOG_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/catalog");

pub fn test_config(backend_url: &str, dir: &std::path::Path, extra: &[(&str, &str)]) -> Config {
    let mut vars: HashMap<String, String> = HashMap::new();
    vars.insert("AGENTICOS_BIND".into(), "127.0.0.1:0".into());
    vars.insert("DATABASE_URL".into(), backend_url.into());
    vars.insert("AGENTICOS_DB_MAX_CONNECTIONS".into(), "5".into());
    vars.insert("AGENTICOS_WORKERS".into(), "1".into());
    vars.insert("AGENTICOS_VAULT_KEY".into(), hex::encode(rand_bytes()));
    vars.insert("AGENTICOS_CATALOG_DIR".into(), TEST_CATALOG_DIR.into());
    vars.insert("AGENTICOS_VAULT_KEY_FILE".into(), dir.join("vault.key").display().to_string());
    // The manifest tests serve their repositories on loopback.
    vars.insert("MANIFEST_GIT_ALLOW_PRIVATE".into(), "true".into());
    vars.insert("AGENTICOS_SNAPSHOT_DIR".into(), dir.join("snapshots").display().to_string());
    for (k, v) in extra {
        vars.insert(k.to_string(), v.to_string());
    }
    Config::from_vars(&vars).expect("test config is valid")
}

fn rand_bytes() -> [u8; 32] {
    let mut b = [0u8; 32];
    for (i, x) in uuid::Uuid::new_v4().as_bytes().iter().chain(uuid::Uuid::new_v4().as_bytes()).enumerate() {
        b[i] = *x;
    }
    b
}

pub async fn spawn_app(backend: Backend) -> Option<TestApp> {
    spawn_app_with(backend, &[]).await
}

/// A new, empty database (nothing migrated) and a temporary directory beside it.
pub struct TestDatabase {
    /// `sqlite://<dir>/agenticos.db` or `postgres://…/<name>`.
    pub url: String,
    /// The PostgreSQL database's name, dropped when the test passes.
    pub name: Option<String>,
    pub dir: tempfile::TempDir,
}

/// `None` (the test skips) when PostgreSQL is not there outside CI.
pub async fn fresh_database(backend: Backend) -> Option<TestDatabase> {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = match backend {
        Backend::Sqlite => format!("sqlite://{}/agenticos.db", dir.path().display()),
        Backend::Postgres => fresh_postgres().await?,
    };
    let name = (backend == Backend::Postgres).then(|| url.rsplit('/').next().unwrap_or_default().to_string());
    Some(TestDatabase { url, name, dir })
}

pub async fn spawn_app_with(backend: Backend, extra: &[(&str, &str)]) -> Option<TestApp> {
    Some(spawn_app_on(backend, fresh_database(backend).await?, extra).await)
}

/// The application on `database` as it is (migrated on start, like a release upgrade).
pub async fn spawn_app_on(backend: Backend, database: TestDatabase, extra: &[(&str, &str)]) -> TestApp {
    log_sink();
    let TestDatabase { url, name: database, dir } = database;
    let config = test_config(&url, dir.path(), extra);
    let app = Application::build(config).await.expect("the application builds");
    let port = app.port();
    let state = app.state();
    tokio::spawn(app.run_until_stopped());
    let address = format!("http://127.0.0.1:{port}");
    TestApp { web: Client::new(&address), address, port, backend, state, database, _dir: dir }
}

impl TestApp {
    /// Another browser, with its own cookie jar.
    pub fn new_client(&self) -> Client {
        Client::new(&self.address)
    }

    /// Rows of `table`, the operation log's inbox moved first (`LogStore::settle`), as every reader
    /// of the log does.
    pub async fn count(&self, table: &str) -> i64 {
        self.state.log.settle().await;
        let mut c = self.state.db.conn().await.expect("conn");
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}")).fetch_one(&mut *c).await.expect("count")
    }

    /// The strings `sql` selects, the operation log's inbox moved first.
    pub async fn scalar_strings(&self, sql: &str) -> Vec<String> {
        self.state.log.settle().await;
        let mut c = self.state.db.conn().await.expect("conn");
        sqlx::query_scalar(sql).fetch_all(&mut *c).await.expect("query")
    }

    /// A Daytona connection of `org_id` (with vault secret `key` as its credential), written
    /// straight into the table: the product refuses to register one until Daytona is supported,
    /// but rows from before that rule may exist.
    pub async fn insert_daytona_connection(&self, org_id: &str, name: &str, key: Option<&str>) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        let mut c = self.state.db.conn().await.expect("conn");
        sqlx::query(
            "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
             default_runtime, is_default, is_enabled, created_at, updated_at) \
             VALUES ($1, $2, $3, 'daytona', NULL, $4, NULL, 0, 1, 1, 1)",
        )
        .bind(&id)
        .bind(org_id)
        .bind(name)
        .bind(key)
        .execute(&mut *c)
        .await
        .expect("a Daytona row");
        id
    }

    /// A sandboxd connection of the signed-in owner's organization at an address nothing listens
    /// on, with a key of purpose `sandboxd` bound to it (for forms that need a host; nothing is
    /// sent to it). Its id.
    pub async fn insert_idle_sandboxd_connection(&self, name: &str) -> String {
        let address = "http://127.0.0.1:9";
        let key = serde_json::json!({"name": format!("{name} key"), "purpose": "sandboxd", "value": "not-sent", "address": address});
        let key = self.web.api(reqwest::Method::POST, "/api/v1/vault/secrets", Some(key)).await;
        assert_eq!(key.status, 201, "{}", key.body);
        let key = key.json()["id"].as_str().expect("secret id").to_string();
        let org =
            self.scalar_strings(&format!("SELECT id FROM organizations WHERE name = '{OWNER_ORG}'")).await.remove(0);
        let id = uuid::Uuid::new_v4().to_string();
        let mut c = self.state.db.conn().await.expect("conn");
        sqlx::query(
            "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
             default_runtime, is_default, is_enabled, created_at, updated_at) \
             VALUES ($1, $2, $3, 'sandboxd', $4, $5, NULL, 1, 1, 1, 1)",
        )
        .bind(&id)
        .bind(&org)
        .bind(name)
        .bind(address)
        .bind(&key)
        .execute(&mut *c)
        .await
        .expect("a sandboxd row");
        id
    }

    /// Runs `/setup` in the default client: the owner is signed in afterwards.
    pub async fn setup_owner(&self) {
        let r = self.web.post_setup(OWNER_EMAIL, OWNER_PASSWORD, OWNER_ORG).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "setup failed: {}", r.body);
    }

    /// A second person in a second organization, signed in in a new client.
    pub async fn other_org_user(&self, email: &str, org: &str) -> Client {
        agenticos::auth::service::create_owner(&self.state.db, email, OWNER_PASSWORD.to_string().into(), org)
            .await
            .expect("create owner");
        let c = self.new_client();
        let r = c.post_login(email, OWNER_PASSWORD).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "login failed: {}", r.body);
        c
    }

    /// Runs one SQL statement against the test's database (to put a row in a state no route
    /// reaches in a test's time, such as an expired invitation).
    pub async fn execute(&self, sql: &str) {
        self.state.log.settle().await;
        let mut c = self.state.db.conn().await.expect("conn");
        sqlx::query(sql).execute(&mut *c).await.expect("execute");
    }

    /// Invites `email` to the default client's current organization through the members page,
    /// returning the path of the invitation link it shows once.
    pub async fn invite(&self, email: &str, role: &str) -> String {
        let r = self.web.post_form("/members", &[("email", email), ("role", role)]).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let link = r.select_text("#invitation-link").expect("the invitation link is shown once");
        link_path(&link)
    }

    /// Adds a member to the owner's organization: invites them through /members, opens the link
    /// in a fresh client, chooses a password there, and returns that client, signed in.
    pub async fn member_with_role(&self, email: &str, role: &str) -> Client {
        let link = self.invite(email, role).await;
        let c = self.new_client();
        let r = c.accept_invitation(&link, MEMBER_PASSWORD).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        assert_eq!(r.location().as_deref(), Some("/"));
        c
    }
}

/// The path of an invitation link (the links carry `AGENTICOS_PUBLIC_URL`, port 0 in tests).
pub fn link_path(link: &str) -> String {
    url::Url::parse(link).unwrap_or_else(|e| panic!("{link:?} is no URL: {e}")).path().to_string()
}

// ---------------------------------------------------------------------------------------------
// A client and its responses

pub struct Client {
    pub http: reqwest::Client,
    pub base: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

/// A response read whole.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
    }
    pub fn location(&self) -> Option<String> {
        self.header("location")
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    pub fn html(&self) -> scraper::Html {
        scraper::Html::parse_document(&self.body)
    }
    pub fn select_all(&self, css: &str) -> Vec<String> {
        let sel = scraper::Selector::parse(css).expect("selector");
        self.html().select(&sel).map(|e| e.text().collect::<String>().trim().to_string()).collect()
    }
    pub fn select_text(&self, css: &str) -> Option<String> {
        self.select_all(css).into_iter().next()
    }
    pub fn select_attr(&self, css: &str, attr: &str) -> Option<String> {
        let sel = scraper::Selector::parse(css).expect("selector");
        self.html().select(&sel).next().and_then(|e| e.value().attr(attr).map(str::to_string))
    }
    /// The inline message of a form field (`<p class="field-error" id="<id>-error">`).
    pub fn field_error(&self, id: &str) -> Option<String> {
        self.select_text(&format!("#{id}-error"))
    }
    /// Asserts an `application/problem+json` answer with `status`, returning it.
    pub fn problem(&self, status: u16) -> serde_json::Value {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.header("content-type").as_deref(), Some("application/problem+json"), "body: {}", self.body);
        let p = self.json();
        assert_eq!(p["status"], status);
        p
    }
    /// The field names of a problem's field errors.
    pub fn problem_fields(&self) -> Vec<String> {
        self.json()["errors"]
            .as_array()
            .map(|a| a.iter().filter_map(|e| e["field"].as_str().map(str::to_string)).collect())
            .unwrap_or_default()
    }
}

/// How a request failed on a kept connection that the console closed under it: `Reset`, the
/// console's end was closed with our request unread (an RST: nothing of it was handled), or
/// `Closed`, the connection ended before an answer (the request may have been read).
#[derive(PartialEq)]
enum ClosedUnder {
    Reset,
    Closed,
    /// The request was never written: nothing of it reached the console.
    Unwritten,
}

fn closed_under_the_request(e: &reqwest::Error) -> Option<ClosedUnder> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if matches!(io.kind(), std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe) {
                return Some(ClosedUnder::Reset);
            }
        }
        // A request canceled before it was written: its connection ended under it (hyper read an
        // unexpected message on it, e.g. the server closing it), so the console never saw it. Or
        // an answer came on it before the request was written (the console's 408 for a connection
        // whose first request did not come within 5 s on a loaded machine: hyper's "unexpected
        // message", which it has no predicate for; a full run, `POST /setup`). Either way nothing
        // was written: any request may be sent again.
        if s.downcast_ref::<hyper::Error>()
            .is_some_and(|h| h.is_canceled() || h.to_string().contains("unexpected message"))
        {
            return Some(ClosedUnder::Unwritten);
        }
        // The connection ended before an answer: the request may have been read.
        if s.downcast_ref::<hyper::Error>().is_some_and(|h| h.is_incomplete_message()) {
            return Some(ClosedUnder::Closed);
        }
        source = s.source();
    }
    None
}

impl Client {
    pub fn new(base: &str) -> Client {
        // Every request on a connection of its own: none is kept idle, so a request is never
        // written into a kept connection the console is closing (its keep-alive and first-request
        // timers are 5 s), nor into one hyper opened beside an idle one that came back first and
        // pooled unused, which the console answers with 408. Keeping them for 2 s at most still
        // let a `POST /setup` meet a closed one in some loaded full runs (hyper's
        // IncompleteMessage, and a POST is not sent again). The browser tests (a real Chromium)
        // keep theirs, as people's browsers do.
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client");
        Client { http, base: base.to_string(), bodies: Arc::new(Mutex::new(Vec::new())) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn send(&self, rb: reqwest::RequestBuilder) -> Resp {
        // A request that met a kept connection the console had just closed is sent once more, as
        // browsers and HTTP libraries do (RFC 9112, 9.3.1): on a loaded machine a kept connection
        // was now and then reset under the next request (`GET /` after `POST /setup`, `POST
        // /setup` after `GET /setup`: two or three tests in some full runs). A GET or HEAD is sent
        // again whenever the connection ended under it; any other request only after a reset,
        // which the console's end sends when it closes with our request unread, or when it was
        // never written.
        let idempotent = rb
            .try_clone()
            .and_then(|b| b.build().ok())
            .is_some_and(|r| matches!(*r.method(), reqwest::Method::GET | reqwest::Method::HEAD));
        // Sent at most three times: a pool can hold more than one connection ending together.
        let mut tries = 1;
        let mut next = Some(rb);
        let res = loop {
            let rb = next.take().expect("a request to send");
            let again = rb.try_clone();
            match (rb.send().await, again) {
                // A 408 is never an answer of the console's handlers: it is actix-http's for a
                // connection whose first request did not come within 5 s, read by hyper as the
                // answer to the request it then wrote into that connection (a full run on a
                // loaded machine: `GET /` in health_watch). The request was never read: a GET or
                // HEAD is sent again.
                (Ok(res), Some(again)) if res.status() == StatusCode::REQUEST_TIMEOUT && idempotent && tries < 3 => {
                    tries += 1;
                    next = Some(again);
                }
                (Ok(res), _) => break res,
                (Err(e), Some(again))
                    if tries < 3
                        && closed_under_the_request(&e).is_some_and(|how| idempotent || how != ClosedUnder::Closed) =>
                {
                    tries += 1;
                    next = Some(again);
                }
                (Err(e), _) => panic!("request sent {tries} time(s): {e:?}"),
            }
        };
        let status = res.status();
        let headers = res.headers().clone();
        let body = res.text().await.expect("body");
        self.bodies.lock().expect("bodies").push(body.clone());
        Resp { status, headers, body }
    }

    /// Every response body this client has read.
    pub fn all_bodies(&self) -> String {
        self.bodies.lock().expect("bodies").join("\n")
    }

    pub async fn get(&self, path: &str) -> Resp {
        self.send(self.http.get(self.url(path))).await
    }

    /// The CSRF token a page of this client's session carries.
    pub async fn csrf(&self) -> String {
        for path in ["/", "/login", "/orgs/new"] {
            let r = self.get(path).await;
            if let Some(t) = r.select_attr("input[name=csrf_token]", "value") {
                return t;
            }
        }
        panic!("no page offered a CSRF token")
    }

    /// Posts a form with this session's CSRF token.
    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> Resp {
        let token = self.csrf().await;
        let mut all: Vec<(&str, &str)> = fields.to_vec();
        all.push(("csrf_token", &token));
        self.send(self.http.post(self.url(path)).form(&all)).await
    }

    /// Posts a form without any CSRF token.
    pub async fn post_form_without_csrf(&self, path: &str, fields: &[(&str, &str)]) -> Resp {
        self.send(self.http.post(self.url(path)).form(fields)).await
    }

    pub async fn post_setup(&self, email: &str, password: &str, org: &str) -> Resp {
        let page = self.get("/setup").await;
        let token = match page.select_attr("input[name=csrf_token]", "value") {
            Some(t) => t,
            // Setup is done: take a valid token from the sign-in page, so the POST reaches the route.
            None => self.get("/login").await.select_attr("input[name=csrf_token]", "value").unwrap_or_default(),
        };
        let form = [("email", email), ("password", password), ("organization", org), ("csrf_token", &token)];
        self.send(self.http.post(self.url("/setup")).form(&form)).await
    }

    pub async fn post_login(&self, email: &str, password: &str) -> Resp {
        let page = self.get("/login").await;
        let token = page.select_attr("input[name=csrf_token]", "value").expect("login form has a CSRF token");
        let form = [("email", email), ("password", password), ("csrf_token", &token)];
        self.send(self.http.post(self.url("/login")).form(&form)).await
    }

    /// Opens an invitation link and posts its form with `password` and the page's CSRF token.
    pub async fn accept_invitation(&self, path: &str, password: &str) -> Resp {
        let page = self.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.body);
        let token = page.select_attr("input[name=csrf_token]", "value").expect("the invitation page has a form");
        let form = [("password", password), ("csrf_token", &token)];
        self.send(self.http.post(self.url(path)).form(&form)).await
    }

    // -- API with this client's session (CSRF header) ------------------------------------------

    pub async fn api(&self, method: reqwest::Method, path: &str, body: Option<serde_json::Value>) -> Resp {
        let token = self.csrf().await;
        let mut rb = self.http.request(method, self.url(path)).header("x-csrf-token", token);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        self.send(rb).await
    }

    // -- API with a bearer token ---------------------------------------------------------------

    pub async fn bearer(
        &self,
        token: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<serde_json::Value>,
    ) -> Resp {
        let anonymous = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
        let mut rb = anonymous.request(method, self.url(path)).bearer_auth(token);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        self.send(rb).await
    }

    pub async fn bearer_raw(&self, token: &str, method: reqwest::Method, path: &str, body: &str) -> Resp {
        let anonymous = reqwest::Client::new();
        let rb = anonymous
            .request(method, self.url(path))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body.to_string());
        self.send(rb).await
    }

    /// Creates an API token through the page and returns its value (shown once).
    pub async fn create_token_in_page(&self, name: &str, role: &str) -> String {
        let r = self.post_form("/tokens", &[("name", name), ("role", role)]).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.select_text("#new-token-value").expect("the new token is shown once")
    }
}
