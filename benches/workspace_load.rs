//! `cargo bench --bench workspace_load [-- --seconds N --clients N --quick]`: workspace operations
//! under load, against the real sandboxd peer (`tests/peer/run.sh`, no Docker), through the release
//! binary on a fresh SQLite file, everything set up over HTTP as a person and a runtime would.
//!
//! 1. Load: `--clients` (50) concurrent API clients, each with a run of its own (a conversation-scoped
//!    service agent), for `--seconds` (60; `--quick` 10): 40% read a 1 KiB file, 25% write one, 15% ls,
//!    10% exec (`cat` a file or `echo`), 10% stat. Reports ops/s, p50/p99 overall and per kind, and
//!    every status code.
//! 2. Recording: finishes every run (that flushes the recorder) and compares the rows of
//!    `sandbox_operations` with the recorded operations done (read, write, ls, exec; not stat).
//! 3. Added latency: sequential 1 KiB reads through our API against the same reads sent straight to
//!    the peer, interleaved, after a warm-up; medians, p99 and their ratios (goal ≤ 1.10), with
//!    `/healthz`, `/api/v1/me` and `/workspace/state` beside them to show where our time goes.
//!
//! 4. Metrics cost: console CPU per operation with `/metrics` on and off, two consoles driven in
//!    interleaved blocks (`support/metrics_cost.rs`; goal under 5 %). `--metrics-cost` runs only this.
//!
//! 5. `--churn` (instead of 1–3; `--postgres URL` adds PostgreSQL): 50 clients creating, finishing
//!    and deleting conversations and runs, and the added latency of the durable recording
//!    (`support/churn.rs`). With `--sweep-orphans` instead: the churn on a sandboxd host, each
//!    written file read back, while `agenticos sweep --orphans --purge` loops beside it as its own
//!    process; no read of a live workspace may answer 410 (`support/churn_sweep.rs`).
//!
//! Exits non-zero when a 5xx occurred, a request failed, or rows ≠ operations, so the numbers it
//! prints can be trusted; the latency goal is reported, not enforced.

#[path = "support/churn.rs"]
mod churn;
#[path = "support/churn_sweep.rs"]
mod churn_sweep;
#[path = "support/console.rs"]
mod console;
#[path = "support/flags.rs"]
mod flags;
#[path = "support/load_peer.rs"]
mod load_peer;
#[path = "support/metrics_cost.rs"]
mod metrics_cost;
#[path = "../tests/api/peer.rs"]
mod peer;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use serde_json::{json, Value};

use console::{owner_token, start_console, Console};
use flags::Flags;
use load_peer::start_load_peer;
use peer::Peer;

const FILE_BYTES: usize = 1024;
/// Operations per block in the metrics cost comparison.
const COST_BLOCK: usize = 300;
/// Files each client writes and reads in its workspace (`load/f0.txt` … ).
const FILES: usize = 8;

// ---------------------------------------------------------------------------------------------
// Arguments

struct Args {
    seconds: u64,
    clients: usize,
    /// Sequential reads per path in the latency comparison.
    reads: usize,
    /// Skip the load and the recording check: only the latency comparison (for profiling).
    latency_only: bool,
    /// The create/finish/delete mix and the durable recording's cost instead.
    churn: bool,
    /// Rounds per client in the churn.
    rounds: usize,
    /// The churn on sandboxd with the orphan sweep looping beside it.
    sweep_orphans: bool,
    /// The PostgreSQL server the churn also runs on (a fresh database is created there).
    postgres: Option<String>,
    /// Only the metrics cost comparison.
    metrics_cost_only: bool,
    /// Blocks per console in the metrics cost comparison.
    cost_blocks: usize,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 60,
        clients: 50,
        reads: 1000,
        latency_only: false,
        churn: false,
        rounds: 10,
        sweep_orphans: false,
        postgres: None,
        metrics_cost_only: false,
        cost_blocks: 20,
    };
    let mut flags = Flags::from_env();
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--quick" => {
                a.seconds = 10;
                a.reads = 300;
                a.cost_blocks = 6;
            }
            "--metrics-cost" => a.metrics_cost_only = true,
            "--cost-blocks" => a.cost_blocks = flags.number("--cost-blocks", 2) as usize,
            "--seconds" => a.seconds = flags.number("--seconds", 1),
            "--clients" => a.clients = flags.number("--clients", 1) as usize,
            "--reads" => a.reads = flags.number("--reads", 10) as usize,
            "--churn" => a.churn = true,
            "--sweep-orphans" => a.sweep_orphans = true,
            "--rounds" => a.rounds = flags.number("--rounds", 1) as usize,
            "--postgres" => a.postgres = Some(flags.value("--postgres")),
            "--latency-only" => {
                a.latency_only = true;
                a.clients = 1;
            }
            // `cargo bench` passes `--bench`; filters and the like mean nothing here.
            _ => {}
        }
    }
    a
}

/// The API with a bearer token.
#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    fn new(base: &str, token: &str) -> Api {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(120))
            .default_headers(accepts_gzip())
            .build()
            .expect("client");
        Api { http, base: base.to_string(), token: token.to_string() }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        let r = self.http.post(format!("{}{path}", self.base)).bearer_auth(&self.token).json(&body).send().await;
        let r = r.expect("request");
        let status = r.status();
        let text = text_of(r).await;
        assert!(status.is_success(), "POST {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn get(&self, path: &str) -> Value {
        let r = self.http.get(format!("{}{path}", self.base)).bearer_auth(&self.token).send().await.expect("request");
        let status = r.status();
        let text = text_of(r).await;
        assert!(status.is_success(), "GET {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn create(&self, path: &str, body: Value) -> String {
        self.post(path, body).await["id"].as_str().expect("an id").to_string()
    }

    fn ws(&self, run: &str, sub: &str) -> String {
        format!("{}/api/v1/runs/{run}/workspace/{sub}", self.base)
    }
}

// ---------------------------------------------------------------------------------------------
// The load

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Read,
    Write,
    Ls,
    Exec,
    Stat,
}

impl Kind {
    const ALL: [Kind; 5] = [Kind::Read, Kind::Write, Kind::Ls, Kind::Exec, Kind::Stat];

    fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Ls => "ls",
            Kind::Exec => "exec",
            Kind::Stat => "stat",
        }
    }

    /// The `operation` of its `sandbox_operations` row; none for a question (stat).
    fn recorded_as(self) -> Option<&'static str> {
        match self {
            Kind::Read => Some("read"),
            Kind::Write => Some("write"),
            Kind::Ls => Some("ls"),
            Kind::Exec => Some("execute"),
            Kind::Stat => None,
        }
    }

    /// 40% read, 25% write, 15% ls, 10% exec, 10% stat.
    fn pick(rng: &mut StdRng) -> Kind {
        match rng.gen_range(0..100) {
            0..40 => Kind::Read,
            40..65 => Kind::Write,
            65..80 => Kind::Ls,
            80..90 => Kind::Exec,
            _ => Kind::Stat,
        }
    }
}

/// What one client saw.
#[derive(Default)]
struct Tally {
    /// Microseconds, per kind, of answered calls.
    latencies: BTreeMap<Kind, Vec<u64>>,
    /// (kind, status) → count.
    statuses: BTreeMap<(Kind, u16), u64>,
    /// Calls that got no answer (connection error, timeout).
    failed: BTreeMap<Kind, u64>,
    /// 2xx answers whose body was not what was written.
    wrong_body: u64,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        for (k, mut v) in other.latencies {
            self.latencies.entry(k).or_default().append(&mut v);
        }
        for (k, n) in other.statuses {
            *self.statuses.entry(k).or_default() += n;
        }
        for (k, n) in other.failed {
            *self.failed.entry(k).or_default() += n;
        }
        self.wrong_body += other.wrong_body;
    }

    fn answered(&self, kind: Kind) -> u64 {
        self.statuses.iter().filter(|((k, _), _)| *k == kind).map(|(_, n)| n).sum()
    }

    fn with(&self, kind: Kind, pred: impl Fn(u16) -> bool) -> u64 {
        self.statuses.iter().filter(|((k, s), _)| *k == kind && pred(*s)).map(|(_, n)| n).sum()
    }
}

fn content(client: usize, file: usize, version: u64) -> Vec<u8> {
    let head = format!("client {client} file {file} version {version}\n");
    let mut v = head.into_bytes();
    v.resize(FILE_BYTES, b'.');
    v
}

/// One simulated runtime: its run, the files it wrote (so reads can check their bytes), its tally.
struct Worker {
    api: Api,
    run: String,
    client: usize,
    rng: StdRng,
    files: [Option<Vec<u8>>; FILES],
    version: u64,
    tally: Tally,
}

impl Worker {
    fn new(api: Api, run: String, client: usize) -> Worker {
        let mut files: [Option<Vec<u8>>; FILES] = Default::default();
        files[0] = Some(content(client, 0, 0));
        Worker {
            api,
            run,
            client,
            rng: StdRng::seed_from_u64(client as u64),
            files,
            version: 0,
            tally: Tally::default(),
        }
    }

    /// The first write opens the session: not timed, but recorded, so counted.
    async fn open(mut self) -> Tally {
        let r = self
            .api
            .http
            .put(self.api.ws(&self.run, "files?path=load/f0.txt"))
            .bearer_auth(&self.api.token)
            .body(content(self.client, 0, 0))
            .send()
            .await;
        match r {
            Ok(r) => *self.tally.statuses.entry((Kind::Write, r.status().as_u16())).or_default() += 1,
            Err(_) => *self.tally.failed.entry(Kind::Write).or_default() += 1,
        }
        self.tally
    }

    async fn run_until(mut self, until: Instant) -> Tally {
        while Instant::now() < until {
            let kind = Kind::pick(&mut self.rng);
            if let Some(took) = self.op(kind).await {
                self.tally.latencies.entry(kind).or_default().push(took.as_micros() as u64);
            }
        }
        self.tally
    }

    /// One call and its latency when answered. Writes remember what they wrote, reads check it.
    async fn op(&mut self, kind: Kind) -> Option<Duration> {
        let (api, run) = (&self.api, self.run.as_str());
        let written: Vec<usize> = (0..FILES).filter(|i| self.files[*i].is_some()).collect();
        let known = written[self.rng.gen_range(0..written.len())];
        let q = |i: usize| format!("path=load/f{i}.txt");
        let mut wrote = None;
        let started = Instant::now();
        let (result, expect) = match kind {
            Kind::Read => {
                let r = api.http.get(api.ws(run, &format!("files?{}", q(known)))).bearer_auth(&api.token).send().await;
                (r, self.files[known].clone())
            }
            Kind::Write => {
                let i = self.rng.gen_range(0..FILES);
                self.version += 1;
                let body = content(self.client, i, self.version);
                let r = api
                    .http
                    .put(api.ws(run, &format!("files?{}", q(i))))
                    .bearer_auth(&api.token)
                    .body(body.clone())
                    .send()
                    .await;
                wrote = Some((i, body));
                (r, None)
            }
            Kind::Ls => (api.http.get(api.ws(run, "ls?path=load")).bearer_auth(&api.token).send().await, None),
            Kind::Stat => {
                (api.http.get(api.ws(run, &format!("stat?{}", q(known)))).bearer_auth(&api.token).send().await, None)
            }
            Kind::Exec => {
                let body = if self.rng.gen_bool(0.5) {
                    json!({"command": format!("cat load/f{known}.txt")})
                } else {
                    json!({"argv": ["echo", "ok"]})
                };
                (api.http.post(api.ws(run, "exec")).bearer_auth(&api.token).json(&body).send().await, None)
            }
        };
        let answer = match result {
            Ok(r) => {
                let status = r.status().as_u16();
                let gzipped = is_gzipped(&r);
                r.bytes().await.ok().map(|b| (status, if gzipped { gunzip(&b) } else { b.to_vec() }))
            }
            Err(_) => None,
        };
        let took = started.elapsed();
        let Some((status, body)) = answer else {
            *self.tally.failed.entry(kind).or_default() += 1;
            return None;
        };
        if (200..300).contains(&status) {
            if let Some((i, bytes)) = wrote {
                self.files[i] = Some(bytes);
            }
            if expect.is_some_and(|e| body != e) {
                self.tally.wrong_body += 1;
            }
        } else if !self.tally.statuses.contains_key(&(kind, status)) {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            eprintln!("{} → {status}: {text}", kind.name());
        }
        *self.tally.statuses.entry((kind, status)).or_default() += 1;
        Some(took)
    }
}

/// `Accept-Encoding: gzip` on every request, as browsers and HTTP libraries send it: the console
/// then compresses what is worth compressing, and its answers are timed and checked as such a
/// client gets them.
fn accepts_gzip() -> reqwest::header::HeaderMap {
    let mut h = reqwest::header::HeaderMap::new();
    h.insert(reqwest::header::ACCEPT_ENCODING, reqwest::header::HeaderValue::from_static("gzip"));
    h
}

fn is_gzipped(r: &reqwest::Response) -> bool {
    r.headers().get(reqwest::header::CONTENT_ENCODING).is_some_and(|v| v == "gzip")
}

/// An answer's body as text, gunzipped when it came compressed.
async fn text_of(r: reqwest::Response) -> String {
    let gzipped = is_gzipped(&r);
    let body = r.bytes().await.expect("body");
    String::from_utf8(if gzipped { gunzip(&body) } else { body.to_vec() }).expect("UTF-8")
}

fn gunzip(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body), &mut out).expect("gunzip");
    out
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

/// CPU time (user + system, its reaped children included) of a process so far, in seconds.
fn cpu_seconds(pid: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return f64::NAN };
    // After the command's closing parenthesis: field 3 (state) first; utime, stime, cutime, cstime
    // are fields 14–17, in clock ticks (USER_HZ: 100 on Linux).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<u64> = rest.split_whitespace().skip(11).take(4).filter_map(|f| f.parse().ok()).collect();
    fields.iter().sum::<u64>() as f64 / 100.0
}

/// The peer's Python process: the one whose command is `sandboxd_peer.py` and whose environment
/// says our port (other developers' peers may be running on this machine).
fn peer_pid(port: u16) -> Option<String> {
    let want = format!("SANDBOXD_PORT={port}");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid = e.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let has = |hay: &[u8], needle: &[u8]| hay.split(|b| *b == 0).any(|part| part.ends_with(needle));
        (has(&cmdline, b"sandboxd_peer.py") && has(&environ, want.as_bytes())).then_some(pid)
    })
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let a = args();
    let trustworthy = if a.churn && a.sweep_orphans {
        let c =
            churn::ChurnArgs { clients: a.clients, rounds: a.rounds, writes: a.reads, postgres: a.postgres.clone() };
        let peer = start_load_peer().await;
        let mut trustworthy = churn_sweep::churn_with_sweep(&c, &peer, None, "SQLite").await;
        if let Some(pg) = a.postgres.as_deref() {
            trustworthy &= churn_sweep::churn_with_sweep(&c, &peer, Some(pg), "PostgreSQL").await;
        }
        trustworthy
    } else if a.churn {
        let c =
            churn::ChurnArgs { clients: a.clients, rounds: a.rounds, writes: a.reads, postgres: a.postgres.clone() };
        churn::run(&c).await
    } else if a.metrics_cost_only {
        let peer = start_load_peer().await;
        metrics_cost::compare(&peer, a.cost_blocks, COST_BLOCK).await;
        true
    } else {
        run(&a).await
    };
    if !trustworthy {
        eprintln!("FAILED: the numbers above are not trustworthy (a 5xx, a failed request, or rows ≠ operations)");
        std::process::exit(1);
    }
}

/// Everything; `false` when the run is not to be trusted. The peer and the console stop when this
/// returns (their `Drop`s), before the process exits.
async fn run(a: &Args) -> bool {
    let peer = start_load_peer().await;
    let plain = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let console = start_console(&plain).await;
    let token = owner_token(&console.base, "workspace-load").await;
    let api = Api::new(&console.base, &token);

    api.post("/api/v1/sandbox-connections", json!({"name": "peer", "address": peer.url, "new_key": peer.token})).await;
    let agent =
        api.create("/api/v1/agents", json!({"name": "loader", "backend": "service", "scope": "conversation"})).await;
    let mut runs = Vec::new();
    for i in 0..a.clients {
        let conv = api.create("/api/v1/conversations", json!({"agent_id": agent, "title": format!("load {i}")})).await;
        let run = api
            .create("/api/v1/runs", json!({"agent_id": agent, "conversation_id": conv, "started_by": "member"}))
            .await;
        runs.push((conv, run));
    }
    println!(
        "workspace_load: {} clients, {} s, peer {} (pydantic-ai-backend sandboxd), release binary on SQLite, load average {}",
        a.clients,
        a.seconds,
        peer.url,
        loadavg()
    );

    // Each client's first write opens its session (not timed, but recorded and counted).
    let warm = runs
        .iter()
        .enumerate()
        .map(|(i, (_, run))| Worker::new(Api::new(&console.base, &token), run.clone(), i).open());
    let mut total = Tally::default();
    for t in futures_util::future::join_all(warm).await {
        total.merge(t);
    }
    let opened = total.with(Kind::Write, |s| s == 204);
    if opened != a.clients as u64 {
        eprintln!("only {opened} of {} sessions opened: {:?}", a.clients, total.statuses);
        return false;
    }

    let mut trustworthy = true;
    if a.latency_only {
        for (_, run) in &runs {
            api.post(&format!("/api/v1/runs/{run}/finish"), json!({})).await;
        }
    } else {
        trustworthy = load_and_recording(a, &console, &peer, &api, &token, &runs, total).await;
    }

    // Added latency, on a run of its own.
    let (conv, _) = &runs[0];
    let run =
        api.create("/api/v1/runs", json!({"agent_id": agent, "conversation_id": conv, "started_by": "member"})).await;
    compare_latency(&api, &peer, &run, a.reads).await;
    api.post(&format!("/api/v1/runs/{run}/finish"), json!({})).await;
    drop(console);
    // The goal is reported, not enforced (like the latency's).
    metrics_cost::compare(&peer, a.cost_blocks, COST_BLOCK).await;
    drop(peer);
    trustworthy
}

/// The load from `a.clients` clients, then the recorded rows checked against what was done.
async fn load_and_recording(
    a: &Args,
    console: &Console,
    peer: &Peer,
    api: &Api,
    token: &str,
    runs: &[(String, String)],
    mut total: Tally,
) -> bool {
    // The load, and the CPU time each process spends on it.
    let pids = [
        ("console", console.child.id().to_string()),
        ("peer", peer_pid(peer.port()).unwrap_or_default()),
        ("load generator", "self".to_string()),
    ];
    let cpu_before: Vec<f64> = pids.iter().map(|(_, pid)| cpu_seconds(pid)).collect();
    let started = Instant::now();
    let until = started + Duration::from_secs(a.seconds);
    let tasks: Vec<_> = runs
        .iter()
        .enumerate()
        .map(|(i, (_, run))| tokio::spawn(Worker::new(Api::new(&console.base, token), run.clone(), i).run_until(until)))
        .collect();
    let mut load = Tally::default();
    for t in tasks {
        load.merge(t.await.expect("client task"));
    }
    let secs = started.elapsed().as_secs_f64();
    let mut trustworthy = report_load(&load, secs);
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let spent: Vec<String> = pids
        .iter()
        .zip(&cpu_before)
        .map(|((name, pid), before)| {
            let s = cpu_seconds(pid) - before;
            format!("{name} {s:.1} s ({:.0}% of one core)", 100.0 * s / secs)
        })
        .collect();
    let console_cpu = cpu_seconds(&pids[0].1) - cpu_before[0];
    let ops: u64 = load.statuses.values().sum();
    println!("  CPU during the load ({cores} cores): {}", spent.join(", "));
    println!("  console CPU per operation: {:.3} ms", 1000.0 * console_cpu / ops.max(1) as f64);
    total.merge(load);

    // Recording: finish every run (flushes its rows), then count.
    for (_, run) in runs {
        api.post(&format!("/api/v1/runs/{run}/finish"), json!({})).await;
    }
    trustworthy &= check_rows(console, &total).await;
    trustworthy
}

fn report_load(t: &Tally, secs: f64) -> bool {
    let mut all: Vec<u64> = t.latencies.values().flatten().copied().collect();
    all.sort_unstable();
    let answered: u64 = t.statuses.values().sum();
    let failed: u64 = t.failed.values().sum();
    let server_errors: u64 = t.statuses.iter().filter(|((_, s), _)| *s >= 500).map(|(_, n)| n).sum();
    println!();
    println!("load: {} operations in {secs:.1} s = {:.1} ops/s", answered + failed, (answered + failed) as f64 / secs);
    println!(
        "  latency overall: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        percentile(&all, 1.0)
    );
    println!("  {:<6} {:>8} {:>9} {:>10} {:>10}   statuses", "op", "count", "ops/s", "p50 ms", "p99 ms");
    for kind in Kind::ALL {
        let mut v = t.latencies.get(&kind).cloned().unwrap_or_default();
        v.sort_unstable();
        let statuses: Vec<String> =
            t.statuses.iter().filter(|((k, _), _)| *k == kind).map(|((_, s), n)| format!("{s}×{n}")).collect();
        println!(
            "  {:<6} {:>8} {:>9.1} {:>10.2} {:>10.2}   {}",
            kind.name(),
            v.len(),
            v.len() as f64 / secs,
            percentile(&v, 0.5),
            percentile(&v, 0.99),
            statuses.join(" ")
        );
    }
    println!(
        "  5xx answers: {server_errors}; requests without an answer: {failed}; reads whose bytes differed: {}",
        t.wrong_body
    );
    server_errors == 0 && failed == 0 && t.wrong_body == 0
}

/// Rows of `sandbox_operations` against the recorded operations done: every answered read, write,
/// ls and exec that succeeded. A failed one may or may not have reached the host, so any makes the
/// count unverifiable.
async fn check_rows(console: &Console, t: &Tally) -> bool {
    use sqlx::ConnectOptions as _;
    let mut expected: BTreeMap<&str, i64> = BTreeMap::new();
    let mut unclassified = 0;
    for kind in Kind::ALL {
        let Some(op) = kind.recorded_as() else { continue };
        *expected.entry(op).or_default() += t.with(kind, |s| (200..300).contains(&s)) as i64;
        unclassified += t.answered(kind) - t.with(kind, |s| (200..300).contains(&s));
        unclassified += t.failed.get(&kind).copied().unwrap_or(0);
    }
    let done: i64 = expected.values().sum();
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&console.db_path).read_only(true);
    let mut db = options.connect().await.expect("open the console's SQLite file");
    // Finishing a run commits its rows; a periodic flush that took some a moment earlier may still
    // be committing them, so give it (docs/design.md §8 "shortly after") up to 5 s.
    let finished = Instant::now();
    // A console that writes the log behind its recorder (SQLite's `sandbox_operations_inbox`) holds
    // rows there that it has not moved yet: they are counted too. An older console has no inbox.
    let inbox: Option<(String,)> =
        sqlx::query_as("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sandbox_operations_inbox'")
            .fetch_optional(&mut db)
            .await
            .expect("look for the inbox");
    let logged = match inbox {
        Some(_) => "(SELECT operation, ok FROM sandbox_operations UNION ALL SELECT operation, ok FROM sandbox_operations_inbox)",
        None => "sandbox_operations",
    };
    let mut rows: BTreeMap<String, i64>;
    loop {
        let list: Vec<(String, i64)> =
            sqlx::query_as(&format!("SELECT operation, COUNT(*) FROM {logged} AS l GROUP BY operation"))
                .fetch_all(&mut db)
                .await
                .expect("count rows");
        rows = list.into_iter().collect();
        if rows.values().sum::<i64>() >= done || finished.elapsed() > Duration::from_secs(5) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let recorded: i64 = rows.values().sum();
    let failed_rows: (i64,) = sqlx::query_as(&format!("SELECT COUNT(*) FROM {logged} AS l WHERE ok = 0"))
        .fetch_one(&mut db)
        .await
        .expect("count");
    println!();
    println!(
        "recording: rows recorded: {recorded}, operations done: {done} ({}) — {}",
        expected
            .iter()
            .map(|(op, n)| format!("{op} {n}/{}", rows.get(*op).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", "),
        if recorded == done && unclassified == 0 { "equal" } else { "NOT equal" }
    );
    if finished.elapsed() > Duration::from_millis(150) {
        println!("  (the rows were complete {:?} after the last run finished)", finished.elapsed());
    }
    if failed_rows.0 > 0 {
        println!("  rows with ok = 0: {}", failed_rows.0);
    }
    if unclassified > 0 {
        println!("  {unclassified} recorded-kind calls failed or were refused: whether each reached the host is unknown from outside");
    }
    recorded == done && unclassified == 0 && expected.iter().all(|(op, n)| rows.get(*op).copied().unwrap_or(0) == *n)
}

/// A name and how to build its request again.
type Probe = (&'static str, Box<dyn Fn() -> reqwest::RequestBuilder>);

/// Sequential 1 KiB reads, ours and the peer's, interleaved so drift hits both alike, each pair in
/// alternating order.
async fn compare_latency(api: &Api, peer: &Peer, run: &str, reads: usize) {
    let one_kib = content(0, 99, 0);
    let r = api
        .http
        .put(api.ws(run, "files?path=bench/one-kib.txt"))
        .bearer_auth(&api.token)
        .body(one_kib.clone())
        .send()
        .await;
    assert_eq!(r.expect("write").status(), 204);
    let state = api.get(&format!("/api/v1/runs/{run}/workspace/state")).await;
    let key = state["session_key"].as_str().expect("session_key").to_string();
    let direct = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(accepts_gzip())
        .build()
        .expect("client");
    let direct_url = format!("{}/sessions/{key}/files/read", peer.url);
    let direct_body = json!({"path": "/workspace/bench/one-kib.txt"});
    let ours_url = api.ws(run, "files?path=bench/one-kib.txt");
    let me_url = format!("{}/api/v1/me", api.base);
    let state_url = api.ws(run, "state");
    let health_url = format!("{}/healthz", api.base);

    let run_url = format!("{}/sessions/{key}/run", peer.url);
    let ours_exec_url = api.ws(run, "exec");

    // Each probe: (name, request). All sequential on one keep-alive connection per client; the
    // pairs compared (direct, ours) come first, in the order [read, read, echo, echo].
    let probes: [Probe; 7] = [
        ("peer direct: POST /sessions/{id}/files/read", {
            let (c, u, b, t) = (direct.clone(), direct_url.clone(), direct_body.clone(), peer.token.clone());
            Box::new(move || c.post(&u).header("X-Sandbox-Token", &t).json(&b))
        }),
        ("ours: GET /api/v1/runs/{run}/workspace/files", {
            let (c, u, t) = (api.http.clone(), ours_url.clone(), api.token.clone());
            Box::new(move || c.get(&u).bearer_auth(&t))
        }),
        ("peer direct: POST /sessions/{id}/run (echo ok)", {
            let (c, u, t) = (direct.clone(), run_url.clone(), peer.token.clone());
            Box::new(move || {
                let run_id = format!("{:032x}", rand::random::<u128>());
                c.post(&u).header("X-Sandbox-Token", &t).json(&json!({"argv": ["echo", "ok"], "run_id": run_id}))
            })
        }),
        ("ours: POST …/workspace/exec (echo ok)", {
            let (c, u, t) = (api.http.clone(), ours_exec_url.clone(), api.token.clone());
            Box::new(move || c.post(&u).bearer_auth(&t).json(&json!({"argv": ["echo", "ok"]})))
        }),
        ("ours: GET /healthz (HTTP only)", {
            let (c, u) = (api.http.clone(), health_url.clone());
            Box::new(move || c.get(&u))
        }),
        ("ours: GET /api/v1/me (token auth)", {
            let (c, u, t) = (api.http.clone(), me_url.clone(), api.token.clone());
            Box::new(move || c.get(&u).bearer_auth(&t))
        }),
        ("ours: GET …/workspace/state (auth + resolve)", {
            let (c, u, t) = (api.http.clone(), state_url.clone(), api.token.clone());
            Box::new(move || c.get(&u).bearer_auth(&t))
        }),
    ];
    // Check both reads answer the same bytes, then warm up.
    for (name, req) in &probes[..2] {
        let r = req().send().await.expect("read");
        assert_eq!(r.status(), 200, "{name}");
        let gzipped = is_gzipped(&r);
        let body = r.bytes().await.expect("bytes");
        assert_eq!(if gzipped { gunzip(&body) } else { body.to_vec() }, one_kib, "{name}");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let warm_up = (reads / 5).max(50);
    let mut samples: Vec<Vec<u64>> = vec![Vec::with_capacity(reads); probes.len()];
    for round in 0..warm_up + reads {
        // Each pair compared swaps its order every round, so that neither side always follows
        // the other (the host's state after an answer, or after idling, would favour one).
        let order: Vec<usize> = match round % 2 {
            0 => (0..probes.len()).collect(),
            _ => [1, 0, 3, 2].into_iter().chain(4..probes.len()).collect(),
        };
        for i in order {
            let req = &probes[i].1;
            let started = Instant::now();
            let r = req().send().await.expect("request");
            let ok = r.status().is_success();
            let _ = r.bytes().await.expect("body");
            let took = started.elapsed();
            assert!(ok, "{}", probes[i].0);
            if round >= warm_up {
                samples[i].push(took.as_micros() as u64);
            }
        }
    }
    for s in &mut samples {
        s.sort_unstable();
    }
    println!();
    println!("added latency: {reads} sequential reads of a 1 KiB file each way, interleaved, after {warm_up} warm-up rounds (load average {})", loadavg());
    println!("  {:<48} {:>9} {:>9} {:>9}", "", "p50 ms", "p95 ms", "p99 ms");
    for (i, (name, _)) in probes.iter().enumerate() {
        let s = &samples[i];
        println!("  {name:<48} {:>9.3} {:>9.3} {:>9.3}", percentile(s, 0.5), percentile(s, 0.95), percentile(s, 0.99));
    }
    for (what, direct, ours, goal) in [("1 KiB read", 0, 1, Some(1.10)), ("echo", 2, 3, None)] {
        let (peer_s, ours_s) = (&samples[direct], &samples[ours]);
        let ratio = |p: f64| percentile(ours_s, p) / percentile(peer_s, p);
        let verdict = match goal {
            Some(g) if ratio(0.5) <= g && ratio(0.95) <= g => format!(" (goal ≤ {g:.2} at p50 and p95: met)"),
            Some(g) => format!(" (goal ≤ {g:.2} at p50 and p95: NOT met)"),
            None => String::new(),
        };
        println!(
            "  {what}, ratio ours/direct: p50 {:.2}, p95 {:.2}, p99 {:.2}{verdict}; added at p50 {:.3} ms, at p95 {:.3} ms",
            ratio(0.5),
            ratio(0.95),
            ratio(0.99),
            percentile(ours_s, 0.5) - percentile(peer_s, 0.5),
            percentile(ours_s, 0.95) - percentile(peer_s, 0.95),
        );
    }
}
