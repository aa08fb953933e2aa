//! `cargo bench --bench agents_overhead [-- --rounds N]`: each Python provider's added time per
//! operation over the raw REST call (a 1 KiB write, a 1 KiB read, an `echo`), through the console
//! binary of the bench's profile (release; `--profile dev` for a debug one) on a fresh SQLite file
//! and a sandboxd peer (tests/peer). The timing is
//! `clients/python/bench/overhead.py`, run in the providers' venv (`clients/python/venv.sh
//! --install-only <target>/agents-venv`): one run of a `run`-scoped agent; every round sends, per
//! operation and provider (in a rotating order), the raw call and the provider's call back to back,
//! which one first alternating, and keeps their difference; a tenth of the rounds warms up first;
//! every request sends `Accept-Encoding: gzip` (checked on each). Every HTTP exchange is timed as
//! well, so a call's time outside its exchanges (the client's own) is known apart from the server's
//! noise. It prints p50 and p95 per variant and its requests a call; of the paired differences in
//! wall time, own time and CPU, the p50 (with a 95 % confidence interval) and the p95; and per
//! provider and operation whether the goal (added p50 at most 1 ms) is met, not met or not shown.

#[path = "support/console.rs"]
mod console;
#[path = "support/flags.rs"]
mod flags;
#[path = "../tests/api/peer.rs"]
mod peer;

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use console::{owner_token, start_console};
use flags::Flags;
use peer::{Peer, PeerOptions};

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut flags = Flags::from_env();
    let mut rounds = 600;
    while let Some(word) = flags.next() {
        if word == "--rounds" {
            rounds = flags.number("--rounds", 10);
        }
    }
    let peer = Peer::start(PeerOptions::default()).await.expect("the sandboxd peer starts");
    let http = reqwest::Client::new();
    let console = start_console(&http).await;
    let token = owner_token(&console.base, "agents-overhead").await;
    let post =
        |path: &str, body: Value| http.post(format!("{}{path}", console.base)).bearer_auth(&token).json(&body).send();
    let r = post("/api/v1/sandbox-connections", json!({"name": "peer", "address": peer.url, "new_key": peer.token}))
        .await
        .expect("connect");
    assert!(r.status().is_success(), "connecting the peer: {}", r.text().await.unwrap_or_default());
    let agent: Value = post("/api/v1/agents", json!({"name": "bench", "backend": "service", "scope": "run"}))
        .await
        .expect("agent")
        .json()
        .await
        .expect("agent json");

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python");
    let venv = peer::venv_in_target("AGENTS_VENV", "agents-venv");
    let prepared = Command::new("bash").arg(dir.join("venv.sh")).arg("--install-only").arg(&venv).status();
    assert!(prepared.is_ok_and(|s| s.success()), "clients/python/venv.sh --install-only failed");
    let status = Command::new(venv.join("bin/python"))
        .arg("bench/overhead.py")
        .arg(rounds.to_string())
        .current_dir(&dir)
        .env("PYTHONPATH", dir.join("src"))
        .env("AGENTICOS_URL", &console.base)
        .env("AGENTICOS_TOKEN", &token)
        .env("AGENTICOS_AGENT_ID", agent["id"].as_str().expect("agent id"))
        .status()
        .expect("bench/overhead.py runs");
    assert!(status.success(), "bench/overhead.py failed: {status}");
}
