//! `cargo bench --bench operations_log [-- --quick] [-- --postgres URL]`: the operation log on a
//! large table, through the HTTP API of the application (in this process, one worker).
//!
//! Fills a fresh database with 1,000,000 rows of one organization over 30 days (2,000 sessions,
//! 50 agents, ~3% failures) and 1,000,000 rows of noise in 20 other organizations (`--quick`:
//! 100,000 and 100,000), then reports p50/p95 over `--requests` (200) requests each of: the first
//! page, page 200 by cursor, a search term, failed-only, one session, one agent; and the export of
//! 100,000 rows (`--quick`: 20,000): rows/s and the process's peak RSS before and after.
//! SQLite by default (a temporary file); `--postgres URL` uses a fresh database on that server
//! (created and dropped). Targets (reported, not enforced): p95 ≤ 25 ms PostgreSQL, ≤ 50 ms SQLite.

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
    rows: usize,
    noise: usize,
    requests: usize,
    export_rows: usize,
    postgres: Option<String>,
}

fn args() -> Args {
    let mut a = Args { rows: 1_000_000, noise: 1_000_000, requests: 200, export_rows: 100_000, postgres: None };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--quick" => {
                a.rows = 100_000;
                a.noise = 100_000;
                a.export_rows = 20_000;
            }
            "--requests" => a.requests = flags.number("--requests", 1) as usize,
            "--postgres" => a.postgres = Some(flags.value("--postgres")),
            _ => {}
        }
    }
    a
}

const DAY: i64 = 86_400_000;
const SESSIONS: usize = 2_000;
const AGENTS: usize = 50;

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

/// Inserts `n` rows of `org` (its `agents`) in multi-row statements, in transactions of 50,000.
async fn fill(db: &agenticos::db::Db, org: &str, agents: &[String], n: usize, now: i64, salt: u64) {
    let ops = ["read", "write", "ls", "mkdir", "remove", "execute"];
    let mut done = 0;
    let mut x = salt.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    while done < n {
        let mut tx = db.begin().await.expect("tx");
        let end = (done + 50_000).min(n);
        while done < end {
            let batch = (end - done).min(500);
            let mut sql = String::from(
                "INSERT INTO sandbox_operations (id, organization_id, workspace_id, session_key, connection_id, agent_id, \
                 run_id, operation, target, ok, detail, duration_ms, created_at, seq) VALUES ",
            );
            for i in 0..batch {
                let r = next();
                let op = ops[(r % 6) as usize];
                let ok = if r % 33 == 0 { 0 } else { 1 };
                let at = now - (r >> 8) as i64 % (30 * DAY);
                let session = (r >> 20) as usize % SESSIONS;
                let agent = agents[(r >> 32) as usize % agents.len()].as_str();
                let target = if op == "execute" {
                    format!("cargo test --package crate{}", r % 997)
                } else {
                    format!("/workspace/src/module{}/file{}.rs", r % 89, r % 1009)
                };
                let detail = if op == "execute" { format!("exit {}", 1 - ok) } else { format!("{} bytes", r % 5000) };
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str(&format!(
                    "('{}', '{org}', NULL, 'session-{session}', NULL, '{agent}', NULL, '{op}', '{target}', {ok}, '{detail}', {}, {at}, {})",
                    uuid::Uuid::new_v4(),
                    r % 200,
                    done + i
                ));
            }
            sqlx::query(&sql).execute(&mut *tx).await.expect("insert");
            done += batch;
        }
        tx.commit().await.expect("commit");
    }
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
    tokio::spawn(app.run_until_stopped());
    let base = format!("http://127.0.0.1:{port}");
    let now = agenticos::db::now_ms();

    let started = Instant::now();
    let (org, agents) = owner_with_agents(&state, "Bench", AGENTS).await;
    fill(&state.db, &org, &agents, a.rows, now, 1).await;
    for i in 0..20 {
        let (o, ag) = owner_with_agents(&state, &format!("Noise{i}"), 2).await;
        fill(&state.db, &o, &ag, a.noise / 20, now, 100 + i).await;
    }
    if a.postgres.is_some() {
        let mut c = state.db.conn().await.expect("conn");
        sqlx::query("VACUUM ANALYZE sandbox_operations").execute(&mut *c).await.expect("analyze");
    }
    println!(
        "filled {} rows (+{} noise) on {} in {:.1} s",
        a.rows,
        a.noise,
        if a.postgres.is_some() { "PostgreSQL" } else { "SQLite" },
        started.elapsed().as_secs_f64()
    );

    let caller = agenticos::orgs::service::command_line_caller(&state.db, "Bench", None).await.expect("caller");
    let token = agenticos::tokens::service::create(
        &state.db,
        &caller,
        agenticos::tokens::service::NewToken { name: "bench".into(), role: "operator".into() },
    )
    .await
    .expect("token")
    .value;
    let http = reqwest::Client::new();
    let get = |q: String| {
        let (http, token, base) = (http.clone(), token.clone(), base.clone());
        async move {
            let t = Instant::now();
            let r = http.get(format!("{base}/api/v1/operations{q}")).bearer_auth(&token).send().await.expect("send");
            assert_eq!(r.status(), 200, "{q}");
            let v: serde_json::Value = r.json().await.expect("json");
            (t.elapsed(), v)
        }
    };
    // Page 200's cursor: follow 199 next cursors once.
    let mut cursor = String::new();
    for _ in 0..199 {
        let (_, v) = get(format!("?cursor={cursor}")).await;
        cursor = v["next_cursor"].as_str().expect("next").to_string();
    }
    let cases = [
        ("first page", String::new()),
        ("page 200 by cursor", format!("?cursor={cursor}")),
        ("search term", "?q=module42/file1".to_string()),
        ("failed only", "?failed_only=true".to_string()),
        ("one session", "?session_key=session-1234".to_string()),
        ("one agent", format!("?agent_id={}", agents[7])),
    ];
    println!("{:<22} {:>9} {:>9} {:>8}", "request", "p50 ms", "p95 ms", "rows");
    for (name, q) in &cases {
        get(q.clone()).await;
        let mut times = Vec::with_capacity(a.requests);
        let mut rows = 0;
        for _ in 0..a.requests {
            let (t, v) = get(q.clone()).await;
            rows = v["items"].as_array().map(Vec::len).unwrap_or(0);
            times.push(t);
        }
        times.sort();
        println!("{name:<22} {:>9.2} {:>9.2} {rows:>8}", percentile(&times, 0.5), percentile(&times, 0.95));
    }

    // Export: rows of the newest `export_rows` (a `since` that takes in about that many).
    let span = (30 * DAY) as f64 * a.export_rows as f64 / a.rows as f64;
    let since = now - span as i64;
    let rss_before = rss_kib();
    let t = Instant::now();
    let mut r = http
        .get(format!("{base}/api/v1/operations/export?since={since}"))
        .bearer_auth(&token)
        .send()
        .await
        .expect("export");
    let mut lines = 0usize;
    let mut max_rss = rss_before;
    while let Some(chunk) = r.chunk().await.expect("chunk") {
        lines += chunk.iter().filter(|b| **b == b'\n').count();
        max_rss = max_rss.max(rss_kib());
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "export: {lines} rows in {secs:.2} s = {:.0} rows/s; RSS {} MiB before, at most {} MiB during (peak of the process {} MiB)",
        lines as f64 / secs,
        rss_before / 1024,
        max_rss / 1024,
        peak_rss_kib() / 1024
    );
    state.db.close().await;
    if let Some((admin_url, name)) = pg_admin {
        let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&admin_url).await.expect("postgres");
        let _ = sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)")).execute(&mut admin).await;
    }
}
