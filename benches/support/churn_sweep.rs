//! `workspace_load --churn --sweep-orphans`: the churn on a sandboxd host (the peer) while
//! `agenticos sweep --orphans --purge` loops beside it as its own process (issue 45), on SQLite
//! and (with `--postgres URL`) PostgreSQL.
//!
//! `clients` (50) concurrent API clients each repeat for `rounds` rounds: create a conversation
//! and a run of a `conversation`-scoped service agent, write a 1 KiB file (the first operation
//! opens the session), read it back, finish the run, delete the conversation. The sweep runs with
//! `AGENTICOS_ORPHAN_MIN_AGE_SECONDS=0`, so no age protects a session: only the rows, tombstones
//! and claims it decides by under the open's claim do. Reports every status, the reads answered
//! 410 (files gone: they must be 0, every workspace read is live), the sweeps run and what they
//! purged and spared, and the rows of `sandbox_operations` against the acknowledged operations
//! (writes and reads answered 2xx: equal).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;

use super::churn::{drop_database, rest_for, rows, start, ChurnArgs};
use super::console::Console;
use super::peer::Peer;

/// What the looping sweep did.
#[derive(Debug, Default)]
struct Sweeps {
    runs: u64,
    purged: u64,
    spared: u64,
    failed: u64,
}

/// `agenticos sweep --orphans --purge` on `console`'s database, again and again until `stop`.
async fn sweep_loop(console: &Console, stop: &AtomicBool) -> Sweeps {
    let mut s = Sweeps::default();
    while !stop.load(Ordering::Relaxed) {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"))
            .args(["sweep", "--orphans", "--purge"])
            .env("DATABASE_URL", &console.database_url)
            .env("AGENTICOS_VAULT_KEY_FILE", &console.vault_key)
            .env("AGENTICOS_CATALOG_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/catalog"))
            .env("AGENTICOS_LOG", "warn")
            .env("AGENTICOS_ORPHAN_MIN_AGE_SECONDS", "0")
            .output()
            .await
            .expect("agenticos sweep runs");
        let text = String::from_utf8_lossy(&out.stdout);
        s.runs += 1;
        s.spared += text.lines().filter(|l| l.starts_with("spared: ")).count() as u64;
        s.purged += text.lines().find_map(|l| l.strip_suffix(" purged")?.parse::<u64>().ok()).unwrap_or(0);
        if !out.status.success() {
            if s.failed == 0 {
                eprintln!("sweep failed: {text}{}", String::from_utf8_lossy(&out.stderr));
            }
            s.failed += 1;
        }
    }
    s
}

/// The churn with the sweep beside it on one database kind; `false` when a 5xx, a failed request,
/// a read answered 410 or a lost row makes the run untrustworthy.
pub async fn churn_with_sweep(a: &ChurnArgs, peer: &Peer, postgres: Option<&str>, label: &str) -> bool {
    let plain = reqwest::Client::new();
    let console = start(&plain, postgres, true).await;
    let rest = rest_for(&console).await;
    let body = json!({"name": "peer", "address": peer.url, "new_key": peer.token});
    rest.create("/api/v1/sandbox-connections", body).await;
    let agent =
        rest.create("/api/v1/agents", json!({"name": "swept", "backend": "service", "scope": "conversation"})).await;
    let statuses: Arc<Mutex<BTreeMap<(&'static str, u16), u64>>> = Arc::default();
    let acknowledged = Arc::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let clients: Vec<_> = (0..a.clients)
        .map(|c| {
            let (rest, agent, statuses, acknowledged) =
                (rest.clone(), agent.clone(), statuses.clone(), acknowledged.clone());
            let rounds = a.rounds;
            tokio::spawn(async move {
                let tally = |what: &'static str, s: u16| {
                    if let Ok(mut m) = statuses.lock() {
                        *m.entry((what, s)).or_default() += 1;
                    }
                    if matches!(what, "write" | "read") && (200..300).contains(&s) {
                        acknowledged.fetch_add(1, Ordering::Relaxed);
                    }
                    s
                };
                for i in 0..rounds {
                    let rest = &rest;
                    let work = |run: String| async move {
                        let file = format!("c{c}-{i}.txt");
                        tally("write", rest.write(&run, &file).await.0);
                        let path = format!("/api/v1/runs/{run}/workspace/files?path={file}");
                        tally("read", rest.call(reqwest::Method::GET, &path, None).await.0);
                    };
                    rest.round(&agent, &format!("c{c}-{i}"), &tally, work).await;
                }
            })
        })
        .collect();
    let all_done = async {
        for c in clients {
            c.await.expect("client");
        }
        stop.store(true, Ordering::Relaxed);
    };
    let ((), sweeps) = tokio::join!(all_done, sweep_loop(&console, &stop));
    let secs = started.elapsed().as_secs_f64();
    let acknowledged = acknowledged.load(Ordering::Relaxed);
    let rows = rows(&console).await;
    let statuses = statuses.lock().map(|m| m.clone()).unwrap_or_default();
    let server_errors: u64 = statuses.iter().filter(|((_, s), _)| *s >= 500 || *s == 0).map(|(_, n)| n).sum();
    let gone: u64 = statuses.iter().filter(|((what, s), _)| *what == "read" && *s == 410).map(|(_, n)| n).sum();
    println!(
        "\nchurn with the orphan sweep ({label}): {} clients x {} rounds (create conversation, create run, \
         write 1 KiB, read it, finish, delete) on sandboxd in {secs:.1} s",
        a.clients, a.rounds
    );
    for ((what, s), n) in &statuses {
        println!("  {what:<20} {s}: {n}");
    }
    println!(
        "  sweeps beside it: {} runs of `agenticos sweep --orphans --purge` (minimum age 0), {} purged, {} spared, \
         {} failed",
        sweeps.runs, sweeps.purged, sweeps.spared, sweeps.failed
    );
    println!("  5xx or failed requests: {server_errors}; reads answered 410: {gone}");
    println!("  operations acknowledged: {acknowledged}; rows in sandbox_operations: {rows}");
    drop_database(console).await;
    server_errors == 0 && gone == 0 && sweeps.failed == 0 && rows == acknowledged as i64
}
