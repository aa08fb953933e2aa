//! `cargo bench --bench documents [-- --quick | --workspaces N --entries N --rounds N]`: the
//! `/documents` listing against the real sandboxd peer (`tests/peer/run.sh`, no Docker), through the
//! release binary on a fresh SQLite file, set up over HTTP as a person and a runtime would.
//!
//! Sets up `--workspaces` (200; `--quick` 40) conversation workspaces on one peer, each opened by
//! a real run (its session then closed, the files kept on the host's disk), and fills each with
//! `--entries` (2,000; `--quick` 500) entries on the peer's disk. Then, `--rounds` times (10;
//! `--quick` 3), reads every page of `GET /api/v1/documents` and, right after each, the same
//! `POST /workspaces/trees` straight to the peer. Our own time is what the console reports in
//! `Server-Timing` (`app`: the handler less its wait for the host's answer); the page's time less
//! the direct request's is printed beside it.
//! Reports p50/p95 of both, and the host requests each page made (its `cost`): the first view
//! (text previews read once) and every later one (cached). The goal (≤ 100 ms ours, p95) is
//! reported, not enforced.

#[path = "support/console.rs"]
mod console;
#[path = "support/flags.rs"]
mod flags;
#[path = "support/load_peer.rs"]
mod load_peer;
#[path = "../tests/api/peer.rs"]
mod peer;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use console::{owner_token, start_console};
use flags::Flags;
use load_peer::start_load_peer;

struct Args {
    workspaces: usize,
    entries: usize,
    rounds: usize,
}

fn args() -> Args {
    let mut a = Args { workspaces: 200, entries: 2000, rounds: 10 };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--quick" => {
                a.workspaces = 40;
                a.entries = 500;
                a.rounds = 3;
            }
            "--workspaces" => a.workspaces = flags.number("--workspaces", 1) as usize,
            "--entries" => a.entries = flags.number("--entries", 1) as usize,
            "--rounds" => a.rounds = flags.number("--rounds", 1) as usize,
            _ => {}
        }
    }
    a
}

struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    async fn send(&self, rb: reqwest::RequestBuilder) -> Value {
        let r = rb.bearer_auth(&self.token).send().await.expect("request");
        let status = r.status();
        let text = r.text().await.expect("body");
        assert!(status.is_success(), "{status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
    async fn post(&self, path: &str, body: Value) -> Value {
        self.send(self.http.post(format!("{}{path}", self.base)).json(&body)).await
    }
    async fn get(&self, path: &str) -> Value {
        self.send(self.http.get(format!("{}{path}", self.base))).await
    }

    /// A page and its `Server-Timing` (`host` and `app` milliseconds, as the console measured).
    async fn get_timed(&self, path: &str) -> (Value, f64, f64) {
        let r = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await.expect("request");
        assert!(r.status().is_success(), "{path}: {}", r.status());
        let timing = r.headers().get("server-timing").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let dur = |name: &str| -> f64 {
            timing
                .split(',')
                .map(str::trim)
                .find(|m| m.split(';').next() == Some(name))
                .and_then(|m| m.split(';').find_map(|p| p.trim().strip_prefix("dur=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{path}: no {name} in Server-Timing {timing:?}"))
        };
        let (host, app) = (dur("host"), dur("app"));
        (r.json().await.expect("json"), host, app)
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let a = args();
    let peer = start_load_peer().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client");
    let console = start_console(&http).await;
    let api =
        Api { http: http.clone(), base: console.base.clone(), token: owner_token(&console.base, "documents").await };
    api.post("/api/v1/sandbox-connections", json!({"name": "peer", "address": peer.url, "new_key": peer.token})).await;
    let agent = api
        .post("/api/v1/agents", json!({"name": "writer", "backend": "service", "scope": "conversation"}))
        .await["id"]
        .as_str()
        .expect("agent")
        .to_string();

    // Each workspace is opened by a real run, its session closed again (the files stay), and filled
    // on the host's disk: `entries` entries over a few folders.
    let setup = Instant::now();
    let mut sessions = std::collections::HashMap::new();
    for i in 0..a.workspaces {
        let conv = api.post("/api/v1/conversations", json!({"agent_id": agent, "title": format!("chat {i}")})).await;
        let conv = conv["id"].as_str().expect("conversation").to_string();
        let run = api
            .post("/api/v1/runs", json!({"agent_id": agent, "conversation_id": conv, "started_by": "member"}))
            .await["id"]
            .as_str()
            .expect("run")
            .to_string();
        let r = http
            .put(format!("{}/api/v1/runs/{run}/workspace/files?path=hello.md", console.base))
            .bearer_auth(&api.token)
            .body("hello")
            .send()
            .await
            .expect("write");
        assert_eq!(r.status(), 204);
        let state = api.get(&format!("/api/v1/runs/{run}/workspace/state")).await;
        let key = state["session_key"].as_str().expect("key").to_string();
        let workspace_id = state["workspace_id"].as_str().expect("workspace").to_string();
        api.post(&format!("/api/v1/runs/{run}/finish"), json!({})).await;
        let _ = http
            .delete(format!("{}/sessions/{key}?purge=false", peer.url))
            .header("X-Sandbox-Token", &peer.token)
            .send()
            .await;
        let dir = peer.workspace_root.join(&key).join("workspace");
        // Folders of 100 entries each (the folder itself counted), so the tree has 2–3 levels.
        let mut made = 1;
        let mut folder = 0;
        while made < a.entries {
            let sub = dir.join(format!("part{folder:03}"));
            std::fs::create_dir_all(&sub).expect("mkdir");
            made += 1;
            for f in 0..99 {
                if made >= a.entries {
                    break;
                }
                std::fs::write(sub.join(format!("notes-{f:02}.md")), b"# notes\nline two\n").expect("write");
                made += 1;
            }
            folder += 1;
        }
        sessions.insert(workspace_id, key);
    }
    println!(
        "documents: {} workspaces × {} entries on one peer ({}), release binary on SQLite; set up in {:.1} s",
        a.workspaces,
        a.entries,
        peer.url,
        setup.elapsed().as_secs_f64()
    );

    let mut ours = Vec::new();
    let mut totals = Vec::new();
    let mut hosts = Vec::new();
    let mut first_requests = Vec::new();
    let mut later_requests = Vec::new();
    let (mut console_host, mut console_app) = (Vec::new(), Vec::new());
    for round in 0..a.rounds {
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(c) => format!("/api/v1/documents?cursor={c}"),
                None => "/api/v1/documents".to_string(),
            };
            let started = Instant::now();
            let (page, waited, app) = api.get_timed(&path).await;
            let total = started.elapsed().as_secs_f64() * 1000.0;
            console_host.push(waited);
            console_app.push(app);
            let ids: Vec<String> = page["groups"]
                .as_array()
                .expect("groups")
                .iter()
                .filter_map(|g| g["workspace"]["id"].as_str().map(str::to_string))
                .collect();
            assert!(!ids.is_empty(), "a page without workspaces");
            // The same listing straight from the host, for the host's share of the time.
            let page_sessions: Vec<&String> = ids.iter().filter_map(|id| sessions.get(id)).collect();
            let started = Instant::now();
            let r = http
                .post(format!("{}/workspaces/trees", peer.url))
                .header("X-Sandbox-Token", &peer.token)
                .json(&json!({"sessions": page_sessions, "path": ".", "max_depth": 6, "max_entries": 2000}))
                .send()
                .await
                .expect("trees");
            let _ = r.bytes().await;
            let host = started.elapsed().as_secs_f64() * 1000.0;
            totals.push(total);
            hosts.push(host);
            ours.push((total - host).max(0.0));
            let requests = page["cost"]["host_requests"].as_u64().unwrap_or(0);
            if round == 0 {
                first_requests.push(requests);
            } else {
                later_requests.push(requests);
            }
            cursor = page["next_cursor"].as_str().map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
    }
    for v in [&mut ours, &mut totals, &mut hosts, &mut console_host, &mut console_app] {
        v.sort_by(|x, y| x.total_cmp(y));
    }
    println!("pages read: {} ({} per round)", totals.len(), totals.len() / a.rounds);
    println!("page, total:     p50 {:.1} ms, p95 {:.1} ms", percentile(&totals, 0.5), percentile(&totals, 0.95));
    println!("host, trees:     p50 {:.1} ms, p95 {:.1} ms", percentile(&hosts, 0.5), percentile(&hosts, 0.95));
    println!(
        "ours (total − host): p50 {:.1} ms, p95 {:.1} ms (two separate requests: the host's variance lands here)",
        percentile(&ours, 0.5),
        percentile(&ours, 0.95),
    );
    println!(
        "console's own account (Server-Timing): waiting for the host p50 {:.1} ms, p95 {:.1} ms",
        percentile(&console_host, 0.5),
        percentile(&console_host, 0.95)
    );
    let p95 = percentile(&console_app, 0.95);
    println!(
        "ours (Server-Timing app): p50 {:.1} ms, p95 {:.1} ms (goal ≤ 100 ms: {})",
        percentile(&console_app, 0.5),
        p95,
        if p95 <= 100.0 { "met" } else { "not met" }
    );
    println!("host requests per page, first view: {first_requests:?} (one listing, plus text previews read once)");
    println!("host requests per page, later views: {later_requests:?}");
}
