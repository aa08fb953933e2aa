//! `workspace_load --churn`: the create/finish/delete mix and what durable recording costs, on
//! SQLite and (with `--postgres URL`) PostgreSQL, through the release binary.
//!
//! 1. Churn: `clients` (50) concurrent API clients, each repeating for `rounds` rounds: create a
//!    conversation and a run of a `state` agent, write a 1 KiB file, finish the run, delete the
//!    conversation. Reports every status, the 5xx count, and the rows of `sandbox_operations`
//!    against the acknowledged writes (they must be equal: nothing acknowledged is lost, nothing
//!    of a deleted conversation takes a row with it).
//! 2. Durable recording: two consoles on fresh databases of the same kind, one answering each
//!    operation after its row is committed (the product) and one before
//!    (`AGENTICOS_RECORDING_DURABLE=false`); sequential 1 KiB writes, interleaved round by round,
//!    p50/p95 of each and the difference: the added latency of the durable recording.
//!
//! Every timed request sends `Accept-Encoding: gzip`, as real clients do.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::console::{owner_token, start_console_with, Console};
use super::percentile;

pub struct ChurnArgs {
    pub clients: usize,
    pub rounds: usize,
    pub writes: usize,
    pub postgres: Option<String>,
}

/// A fresh database on the PostgreSQL server `admin` names.
async fn fresh_postgres(admin: &str) -> String {
    let name = format!("churn_{}", uuid::Uuid::new_v4().simple());
    let db = agenticos::db::Db::connect(admin, 1).await.expect("the PostgreSQL server answers");
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(db.pool()).await.expect("create database");
    db.close().await;
    let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(admin);
    format!("{base}/{name}")
}

pub async fn start(http: &reqwest::Client, postgres: Option<&str>, durable: bool) -> Console {
    let database_url = match postgres {
        Some(admin) => Some(fresh_postgres(admin).await),
        None => None,
    };
    let durable = if durable { "true" } else { "false" };
    start_console_with(http, database_url, &[("AGENTICOS_RECORDING_DURABLE", durable)]).await
}

#[derive(Clone)]
pub struct Rest {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Rest {
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut rb = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token);
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        match rb.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.json::<Value>().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    pub async fn create(&self, path: &str, body: Value) -> String {
        let (status, v) = self.call(reqwest::Method::POST, path, Some(body)).await;
        assert_eq!(status, 201, "POST {path}: {v}");
        v["id"].as_str().expect("id").to_string()
    }

    /// One round of the churn: a conversation of `agent` titled `title` and a run in it, `work`
    /// on the run, the run finished and the conversation deleted; each status told to `tally`.
    pub async fn round<Fut: std::future::Future<Output = ()>>(
        &self,
        agent: &str,
        title: &str,
        tally: &(dyn Fn(&'static str, u16) -> u16 + Sync),
        work: impl FnOnce(String) -> Fut,
    ) {
        let body = json!({"agent_id": agent, "title": title});
        let (s, v) = self.call(reqwest::Method::POST, "/api/v1/conversations", Some(body)).await;
        if tally("create conversation", s) != 201 {
            return;
        }
        let conv = v["id"].as_str().unwrap_or_default().to_string();
        let body = json!({"agent_id": agent, "conversation_id": conv, "started_by": "api"});
        let (s, v) = self.call(reqwest::Method::POST, "/api/v1/runs", Some(body)).await;
        if tally("create run", s) == 201 {
            let run = v["id"].as_str().unwrap_or_default().to_string();
            work(run.clone()).await;
            let (s, _) = self.call(reqwest::Method::POST, &format!("/api/v1/runs/{run}/finish"), None).await;
            tally("finish", s);
        }
        let (s, _) = self.call(reqwest::Method::DELETE, &format!("/api/v1/conversations/{conv}"), None).await;
        tally("delete conversation", s);
    }

    /// A timed 1 KiB write, as a gzip-accepting client; the status and the time in µs.
    pub async fn write(&self, run: &str, path: &str) -> (u16, u64) {
        let url = format!("{}/api/v1/runs/{run}/workspace/files?path={path}", self.base);
        let started = Instant::now();
        let r = self
            .http
            .put(url)
            .bearer_auth(&self.token)
            .header("accept-encoding", "gzip")
            .body(vec![b'x'; 1024])
            .send()
            .await;
        let status = match r {
            Ok(r) => {
                let s = r.status().as_u16();
                let _ = r.bytes().await;
                s
            }
            Err(_) => 0,
        };
        (status, started.elapsed().as_micros() as u64)
    }
}

pub async fn rest_for(console: &Console) -> Rest {
    let token = owner_token(&console.base, "workspace-load").await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");
    Rest { http, base: console.base.clone(), token }
}

pub async fn rows(console: &Console) -> i64 {
    let db = agenticos::db::Db::connect(&console.database_url, 1).await.expect("connect");
    // SQLite: rows still in the log's inbox are moved first, as the console does before a read.
    agenticos::sandbox::log::LogStore::new(db.clone()).settle().await;
    let (n,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM sandbox_operations").fetch_one(db.pool()).await.expect("count");
    db.close().await;
    n
}

pub async fn drop_database(console: Console) {
    let url = console.database_url.clone();
    drop(console);
    if let Some((admin, name)) = url.rsplit_once('/').filter(|_| url.starts_with("postgres")) {
        let admin = format!("{admin}/postgres");
        if let Ok(db) = agenticos::db::Db::connect(&admin, 1).await {
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).execute(db.pool()).await;
            db.close().await;
        }
    }
}

/// The churn on one database kind; `false` when a 5xx or a lost row makes the run untrustworthy.
async fn churn(a: &ChurnArgs, postgres: Option<&str>, label: &str) -> bool {
    let plain = reqwest::Client::new();
    let console = start(&plain, postgres, true).await;
    let rest = rest_for(&console).await;
    let agent =
        rest.create("/api/v1/agents", json!({"name": "churn", "backend": "state", "scope": "conversation"})).await;
    let statuses: Arc<Mutex<BTreeMap<(&'static str, u16), u64>>> = Arc::default();
    let acknowledged = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let clients: Vec<_> = (0..a.clients)
        .map(|c| {
            let rest = rest.clone();
            let agent = agent.clone();
            let statuses = statuses.clone();
            let acknowledged = acknowledged.clone();
            let rounds = a.rounds;
            tokio::spawn(async move {
                let tally = |what: &'static str, s: u16| {
                    if let Ok(mut m) = statuses.lock() {
                        *m.entry((what, s)).or_default() += 1;
                    }
                    s
                };
                for i in 0..rounds {
                    let (rest, acknowledged) = (&rest, &acknowledged);
                    let work = |run: String| async move {
                        let (s, _) = rest.write(&run, &format!("c{c}-{i}.txt")).await;
                        if (200..300).contains(&tally("write", s)) {
                            acknowledged.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    };
                    rest.round(&agent, &format!("c{c}-{i}"), &tally, work).await;
                }
            })
        })
        .collect();
    for c in clients {
        c.await.expect("client");
    }
    let secs = started.elapsed().as_secs_f64();
    let acknowledged = acknowledged.load(std::sync::atomic::Ordering::Relaxed);
    let rows = rows(&console).await;
    let statuses = statuses.lock().map(|m| m.clone()).unwrap_or_default();
    let server_errors: u64 = statuses.iter().filter(|((_, s), _)| *s >= 500 || *s == 0).map(|(_, n)| n).sum();
    println!(
        "\nchurn ({label}): {} clients x {} rounds (create conversation, create run, write 1 KiB, finish, delete) in {secs:.1} s",
        a.clients, a.rounds
    );
    for ((what, s), n) in &statuses {
        println!("  {what:<20} {s}: {n}");
    }
    println!("  5xx or failed requests: {server_errors}");
    println!("  writes acknowledged: {acknowledged}; rows in sandbox_operations: {rows}");
    drop_database(console).await;
    server_errors == 0 && rows == acknowledged as i64
}

/// Durable against answered-before-commit, interleaved; prints p50/p95 of each and the difference.
async fn recording_cost(a: &ChurnArgs, postgres: Option<&str>, label: &str) {
    let plain = reqwest::Client::new();
    let durable = start(&plain, postgres, true).await;
    let early = start(&plain, postgres, false).await;
    let mut sides = Vec::new();
    for console in [&durable, &early] {
        let rest = rest_for(console).await;
        let agent = rest.create("/api/v1/agents", json!({"name": "timed", "backend": "state", "scope": "run"})).await;
        let run = rest.create("/api/v1/runs", json!({"agent_id": agent, "started_by": "api"})).await;
        // Warm-up: the first write creates the document.
        for i in 0..20 {
            rest.write(&run, &format!("warm-{i}.txt")).await;
        }
        sides.push((rest, run, Vec::with_capacity(a.writes)));
    }
    let rounds = a.writes / 10;
    for round in 0..rounds {
        // The order alternates every round, so neither side always goes first.
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let (rest, run, times) = &mut sides[side];
            for i in 0..10 {
                // Ten files rewritten: the state document stays the same size.
                let (status, us) = rest.write(run, &format!("f{i}.txt")).await;
                assert!((200..300).contains(&status), "write: {status}");
                times.push(us);
            }
        }
    }
    let mut figures = Vec::new();
    for (_, _, times) in &mut sides {
        times.sort_unstable();
        figures.push((percentile(times, 0.5), percentile(times, 0.95)));
    }
    let ((d50, d95), (e50, e95)) = (figures[0], figures[1]);
    println!(
        "\ndurable recording ({label}): {} sequential 1 KiB writes each, interleaved in rounds of 10",
        rounds * 10
    );
    println!("  answered after the commit (default)  p50 {d50:.3} ms  p95 {d95:.3} ms");
    println!("  answered before the commit           p50 {e50:.3} ms  p95 {e95:.3} ms");
    println!("  added by durability                  p50 {:.3} ms  p95 {:.3} ms", d50 - e50, d95 - e95);
    drop_database(durable).await;
    drop_database(early).await;
}

/// Both parts on SQLite, then on PostgreSQL when given; `false` when a churn was untrustworthy.
pub async fn run(a: &ChurnArgs) -> bool {
    let mut trustworthy = churn(a, None, "SQLite").await;
    recording_cost(a, None, "SQLite").await;
    if let Some(pg) = a.postgres.as_deref() {
        trustworthy &= churn(a, Some(pg), "PostgreSQL").await;
        recording_cost(a, Some(pg), "PostgreSQL").await;
    }
    trustworthy
}
