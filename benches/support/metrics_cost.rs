//! What `/metrics` costs the console: two consoles on one peer, one with `AGENTICOS_METRICS=1`
//! (scraped once per block, as Prometheus would every few seconds) and one without, driven in
//! alternating blocks of the same sequential operations (write, read, ls of a 1 KiB file), and
//! each console's CPU time (user + system, `/proc/<pid>/stat`) per operation compared. Interleaved
//! so that drift on this shared machine hits both alike. The goal: under 5 % more with metrics on.

use serde_json::json;

use super::console::{owner_token, start_console_with, Console};
use super::peer::Peer;
use super::{content, cpu_seconds, loadavg, Api};

/// The metrics token of the console with metrics on.
const TOKEN: &str = "bench-metrics-token-0123456789";

/// One console, ready to take operations on a run of its own.
struct Side {
    name: &'static str,
    console: Console,
    api: Api,
    run: String,
    /// CPU seconds and operations so far.
    cpu: f64,
    ops: u64,
    scrapes: u64,
}

async fn side(name: &'static str, peer: &Peer, env: &[(&str, &str)]) -> Side {
    let plain = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let console = start_console_with(&plain, None, env).await;
    let token = owner_token(&console.base, "metrics-cost").await;
    let api = Api::new(&console.base, &token);
    api.post("/api/v1/sandbox-connections", json!({"name": "peer", "address": peer.url, "new_key": peer.token})).await;
    let agent =
        api.create("/api/v1/agents", json!({"name": "cost", "backend": "service", "scope": "conversation"})).await;
    let conv = api.create("/api/v1/conversations", json!({"agent_id": agent, "title": "cost"})).await;
    let run =
        api.create("/api/v1/runs", json!({"agent_id": agent, "conversation_id": conv, "started_by": "member"})).await;
    Side { name, console, api, run, cpu: 0.0, ops: 0, scrapes: 0 }
}

impl Side {
    /// `n` operations (write, read, ls in turn), sequential; the console's CPU time they took.
    async fn block(&mut self, n: usize, version: &mut u64) {
        let pid = self.console.child.id().to_string();
        let before = cpu_seconds(&pid);
        for i in 0..n {
            let path = "cost/one-kib.txt";
            let r = match i % 3 {
                0 => {
                    *version += 1;
                    let body = content(0, 1, *version);
                    self.api.http.put(self.api.ws(&self.run, &format!("files?path={path}"))).body(body)
                }
                1 => self.api.http.get(self.api.ws(&self.run, &format!("files?path={path}"))),
                _ => self.api.http.get(self.api.ws(&self.run, "ls?path=cost")),
            };
            let r = r.bearer_auth(&self.api.token).send().await.expect("an operation");
            assert!(r.status().is_success(), "{}: {}", self.name, r.status());
            let _ = r.bytes().await;
        }
        if self.name == "on" {
            let r = self.api.http.get(format!("{}/metrics", self.api.base)).bearer_auth(TOKEN).send().await;
            let r = r.expect("a scrape");
            assert_eq!(r.status(), 200, "the scrape");
            let _ = r.bytes().await;
            self.scrapes += 1;
        }
        self.cpu += cpu_seconds(&pid) - before;
        self.ops += n as u64;
    }

    fn per_op_ms(&self) -> f64 {
        self.cpu * 1000.0 / self.ops.max(1) as f64
    }
}

/// The comparison: `blocks` blocks of `per_block` operations on each console, alternating which
/// goes first. Prints CPU per operation each way and the difference; `true` when under 5 %.
pub async fn compare(peer: &Peer, blocks: usize, per_block: usize) -> bool {
    let mut off = side("off", peer, &[]).await;
    let mut on = side("on", peer, &[("AGENTICOS_METRICS", "1"), ("AGENTICOS_METRICS_TOKEN", TOKEN)]).await;
    let mut version = 0;
    // Warm-up: sessions open, caches fill, both sides alike; not counted.
    for s in [&mut off, &mut on] {
        s.block(per_block, &mut version).await;
        (s.cpu, s.ops, s.scrapes) = (0.0, 0, 0);
    }
    for b in 0..blocks {
        if b % 2 == 0 {
            off.block(per_block, &mut version).await;
            on.block(per_block, &mut version).await;
        } else {
            on.block(per_block, &mut version).await;
            off.block(per_block, &mut version).await;
        }
    }
    let difference = (on.per_op_ms() / off.per_op_ms() - 1.0) * 100.0;
    let met = difference < 5.0;
    println!();
    println!(
        "metrics cost: {blocks} interleaved blocks of {per_block} sequential operations (write, read, ls of 1 KiB) per \
         console, the metrics console scraped once per block (load average {})",
        loadavg()
    );
    for s in [&off, &on] {
        println!(
            "  metrics {:<3}: {:>6} operations, console CPU {:>7.2} s, {:.4} ms per operation{}",
            s.name,
            s.ops,
            s.cpu,
            s.per_op_ms(),
            if s.scrapes > 0 { format!(", {} scrapes", s.scrapes) } else { String::new() }
        );
    }
    println!("  difference on/off: {difference:+.1} % (goal under 5 %: {})", if met { "met" } else { "NOT met" });
    met
}
