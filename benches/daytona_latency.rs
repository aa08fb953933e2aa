//! `cargo bench --bench daytona_latency [-- --reads N]`: the added cost of a Daytona connection.
//! Against the FAKE Daytona (tests/peer/daytona/fake_daytona.py; no Daytona can run here), through
//! the release binary on a fresh SQLite file: sequential 1 KiB reads and `echo`s through our API
//! (`GET …/workspace/files`, `POST …/workspace/exec`) against the same calls sent straight to the
//! fake's toolbox (`GET …/files/download`, `POST …/process/execute`), interleaved in one run (each
//! pair in alternating order), after a warm-up; medians, p95, p99 and their ratios. Every timed
//! request asks `Accept-Encoding: gzip`. The Daytona connection is written into the console's
//! database directly (its key through the vault API, bound to the fake's API URL).

#[path = "support/console.rs"]
mod console;
#[path = "../tests/api/daytona_fake.rs"]
mod daytona_fake;
#[path = "support/flags.rs"]
mod flags;
#[path = "../tests/api/peer.rs"]
mod peer;

use std::time::Instant;

use serde_json::{json, Value};
use sqlx::Connection as _;

use console::{owner_token, start_console};
use daytona_fake::FakeDaytona;
use flags::Flags;

/// A name and how to build its request again.
type Probe = (&'static str, Box<dyn Fn() -> reqwest::RequestBuilder>);

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut flags = Flags::from_env();
    let mut reads = 1000;
    while let Some(word) = flags.next() {
        if word == "--reads" {
            reads = flags.number("--reads", 10) as usize;
        }
    }
    let fake = FakeDaytona::start(&[]);
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let console = start_console(&http).await;
    let token = owner_token(&console.base, "daytona-latency").await;
    let api = |method: reqwest::Method, path: &str| {
        http.request(method, format!("{}{path}", console.base)).bearer_auth(&token)
    };
    let json_of = |r: reqwest::Response| async move {
        let status = r.status();
        let body: Value = r.json().await.expect("json");
        assert!(status.is_success(), "{status}: {body}");
        body
    };

    // The key in the vault, bound to the fake's API URL; the connection row written directly.
    let secret = json_of(
        api(reqwest::Method::POST, "/api/v1/vault/secrets")
            .json(
                &json!({"name": "daytona-bench", "purpose": "daytona", "value": fake.api_key, "address": fake.api_url}),
            )
            .send()
            .await
            .expect("vault"),
    )
    .await;
    let me = json_of(api(reqwest::Method::GET, "/api/v1/me").send().await.expect("me")).await;
    let org_id = me["organization"]["id"].as_str().expect("org").to_string();
    let connection_id = uuid::Uuid::new_v4().to_string();
    let mut db = sqlx::SqliteConnection::connect(&console.database_url).await.expect("the console's database");
    sqlx::query("UPDATE vault_secrets SET bound_address = $1 WHERE id = $2")
        .bind(&fake.api_url)
        .bind(secret["id"].as_str())
        .execute(&mut db)
        .await
        .expect("bind");
    sqlx::query(
        "INSERT INTO sandbox_connections (id, organization_id, name, kind, address, credential_secret_id, \
         default_runtime, is_default, is_enabled, created_at, updated_at) VALUES ($1, $2, 'daytona', 'daytona', $3, $4, NULL, 1, 1, 0, 0)",
    )
    .bind(&connection_id)
    .bind(&org_id)
    .bind(&fake.api_url)
    .bind(secret["id"].as_str())
    .execute(&mut db)
    .await
    .expect("the Daytona connection");
    drop(db);

    let agent = json_of(
        api(reqwest::Method::POST, "/api/v1/agents")
            .json(&json!({"name": "bench", "backend": "service", "scope": "conversation", "connection_id": connection_id}))
            .send()
            .await
            .expect("agent"),
    )
    .await["id"]
        .as_str()
        .expect("agent id")
        .to_string();
    let conv = json_of(
        api(reqwest::Method::POST, "/api/v1/conversations")
            .json(&json!({"agent_id": agent, "title": "bench"}))
            .send()
            .await
            .expect("conv"),
    )
    .await["id"]
        .as_str()
        .expect("conversation id")
        .to_string();
    let run = json_of(
        api(reqwest::Method::POST, "/api/v1/runs")
            .json(&json!({"agent_id": agent, "conversation_id": conv, "started_by": "member"}))
            .send()
            .await
            .expect("run"),
    )
    .await["id"]
        .as_str()
        .expect("run id")
        .to_string();
    let one_kib: Vec<u8> = (0..1024u32).map(|i| b'a' + (i % 26) as u8).collect();
    let ws = |sub: &str| format!("{}/api/v1/runs/{run}/workspace/{sub}", console.base);
    let r = http
        .put(ws("files?path=bench/one-kib.txt"))
        .bearer_auth(&token)
        .body(one_kib.clone())
        .send()
        .await
        .expect("write");
    assert_eq!(r.status(), 204, "{}", r.text().await.unwrap_or_default());
    let state = json_of(http.get(ws("state")).bearer_auth(&token).send().await.expect("state")).await;
    let key = state["session_key"].as_str().expect("session key").to_string();
    let sandbox = fake.sandboxes().into_iter().find(|s| s["name"] == key.as_str()).expect("the sandbox");
    let toolbox =
        format!("{}/{}", sandbox["toolboxProxyUrl"].as_str().expect("toolbox"), sandbox["id"].as_str().expect("id"));

    let direct = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let gzip = |r: reqwest::RequestBuilder| r.header("Accept-Encoding", "gzip");
    let probes: [Probe; 4] = [
        ("fake direct: GET …/files/download", {
            let (c, u, k) =
                (direct.clone(), format!("{toolbox}/files/download?path=bench/one-kib.txt"), fake.api_key.clone());
            Box::new(move || gzip(c.get(&u).bearer_auth(&k)))
        }),
        ("ours: GET /api/v1/runs/{run}/workspace/files", {
            let (c, u, t) = (http.clone(), ws("files?path=bench/one-kib.txt"), token.clone());
            Box::new(move || gzip(c.get(&u).bearer_auth(&t)))
        }),
        ("fake direct: POST …/process/execute (echo ok)", {
            let (c, u, k) = (direct.clone(), format!("{toolbox}/process/execute"), fake.api_key.clone());
            Box::new(move || {
                gzip(c.post(&u).bearer_auth(&k).json(&json!({"command": "sh -c 'echo ok'", "timeout": 10})))
            })
        }),
        ("ours: POST …/workspace/exec (echo ok)", {
            let (c, u, t) = (http.clone(), ws("exec"), token.clone());
            Box::new(move || gzip(c.post(&u).bearer_auth(&t).json(&json!({"argv": ["echo", "ok"]}))))
        }),
    ];
    for (name, req) in &probes[..2] {
        let r = req().send().await.expect("read");
        assert_eq!(r.status(), 200, "{name}");
        let gzipped = r.headers().get("content-encoding").is_some_and(|v| v == "gzip");
        let body = r.bytes().await.expect("bytes").to_vec();
        // A gzip-accepting client sees the bytes once they are unpacked.
        let body = if gzipped {
            let mut plain = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(body.as_slice()), &mut plain).expect("gunzip");
            plain
        } else {
            body
        };
        assert_eq!(body, one_kib, "{name}");
    }
    let warm_up = (reads / 5).max(50);
    let mut samples: Vec<Vec<u64>> = vec![Vec::with_capacity(reads); probes.len()];
    for round in 0..warm_up + reads {
        let order: [usize; 4] = if round % 2 == 0 { [0, 1, 2, 3] } else { [1, 0, 3, 2] };
        for i in order {
            let started = Instant::now();
            let r = probes[i].1().send().await.expect("request");
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
    println!("daytona_latency: {reads} sequential calls each way, interleaved, after {warm_up} warm-up rounds; the FAKE Daytona, release binary on SQLite");
    println!("  {:<48} {:>9} {:>9} {:>9}", "", "p50 ms", "p95 ms", "p99 ms");
    for (i, (name, _)) in probes.iter().enumerate() {
        let s = &samples[i];
        println!("  {name:<48} {:>9.3} {:>9.3} {:>9.3}", percentile(s, 0.5), percentile(s, 0.95), percentile(s, 0.99));
    }
    for (what, d, o) in [("1 KiB read", 0, 1), ("echo", 2, 3)] {
        let ratio = |p: f64| percentile(&samples[o], p) / percentile(&samples[d], p);
        println!(
            "  {what}, ratio ours/direct: p50 {:.2}, p95 {:.2}, p99 {:.2}; added at p50 {:.3} ms, at p95 {:.3} ms",
            ratio(0.5),
            ratio(0.95),
            ratio(0.99),
            percentile(&samples[o], 0.5) - percentile(&samples[d], 0.5),
            percentile(&samples[o], 0.95) - percentile(&samples[d], 0.95),
        );
    }
    drop(console);
}
