//! The console as every bench starts it: the release binary (`agenticos serve`) on a free
//! loopback port and a fresh SQLite file (or a database the bench names), ready once `/readyz`
//! answers, stopped when dropped; and its owner with an API token, set up over HTTP through
//! `/setup` and the `/tokens` form as a person would.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The owner `/setup` creates.
pub const OWNER_EMAIL: &str = "bench@example.com";
pub const OWNER_PASSWORD: &str = "bench password 1";

/// How long a console may take to answer `/readyz`.
const READY_WITHIN: Duration = Duration::from_secs(60);

pub struct Console {
    pub child: Child,
    /// `http://127.0.0.1:<port>`
    pub base: String,
    /// The SQLite file (`bench.db` in `_dir`) unless another database was given.
    pub db_path: PathBuf,
    pub database_url: String,
    /// The vault key file it runs with (a command line on the same database needs it).
    pub vault_key: PathBuf,
    /// From the start of the process to its first ready `/readyz`.
    pub ready_after: Duration,
    _dir: tempfile::TempDir,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The release binary on a fresh SQLite file.
pub async fn start_console(http: &reqwest::Client) -> Console {
    start_console_with(http, None, &[]).await
}

/// The release binary on `database_url` (default: a fresh SQLite file), with `env` added.
pub async fn start_console_with(http: &reqwest::Client, database_url: Option<String>, env: &[(&str, &str)]) -> Console {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let db_path = dir.path().join("bench.db");
    let database_url = database_url.unwrap_or_else(|| format!("sqlite://{}", db_path.display()));
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_agenticos"))
        .arg("serve")
        .env("AGENTICOS_BIND", format!("127.0.0.1:{port}"))
        .env("DATABASE_URL", &database_url)
        .env("AGENTICOS_VAULT_KEY_FILE", dir.path().join("vault.key"))
        .env("AGENTICOS_CATALOG_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/catalog"))
        .env("AGENTICOS_LOG", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start agenticos");
    let base = format!("http://127.0.0.1:{port}");
    let vault_key = dir.path().join("vault.key");
    let mut console = Console { child, base, db_path, database_url, vault_key, ready_after: Duration::ZERO, _dir: dir };
    // Polled often: the start-up bench reports this time.
    loop {
        if let Ok(r) = http.get(format!("{}/readyz", console.base)).send().await {
            if r.status().is_success() {
                console.ready_after = started.elapsed();
                return console;
            }
        }
        assert!(started.elapsed() < READY_WITHIN, "agenticos not ready within {READY_WITHIN:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port")
}

/// A client like a browser's: a cookie jar and no redirects followed.
pub fn browser_like() -> reqwest::Client {
    reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("client")
}

/// The CSRF token of the form on the page at `url`.
pub async fn csrf(c: &reqwest::Client, url: &str) -> String {
    let body = c.get(url).send().await.expect("page").text().await.expect("body");
    let html = scraper::Html::parse_document(&body);
    let sel = scraper::Selector::parse("input[name=csrf_token]").expect("selector");
    html.select(&sel).next().and_then(|e| e.value().attr("value")).expect("a CSRF field").to_string()
}

/// The owner through `/setup`, in `web` (signed in afterwards).
pub async fn set_up_owner(web: &reqwest::Client, base: &str) {
    let setup_csrf = csrf(web, &format!("{base}/setup")).await;
    let form =
        [("email", OWNER_EMAIL), ("password", OWNER_PASSWORD), ("organization", "Bench"), ("csrf_token", &setup_csrf)];
    let r = web.post(format!("{base}/setup")).form(&form).send().await.expect("setup");
    assert_eq!(r.status(), 303, "setup");
}

/// The owner through `/setup`, then an owner's API token named `name` through the `/tokens` form
/// (shown once).
pub async fn owner_token(base: &str, name: &str) -> String {
    let web = browser_like();
    set_up_owner(&web, base).await;
    let tokens_csrf = csrf(&web, &format!("{base}/tokens")).await;
    let form = [("name", name), ("role", "owner"), ("csrf_token", &tokens_csrf)];
    let r = web.post(format!("{base}/tokens")).form(&form).send().await.expect("token form");
    assert_eq!(r.status(), 200, "token form");
    let html = scraper::Html::parse_document(&r.text().await.expect("body"));
    let sel = scraper::Selector::parse("#new-token-value").expect("selector");
    let token = html.select(&sel).next().expect("the new token is shown once").text().collect::<String>();
    token.trim().to_string()
}
