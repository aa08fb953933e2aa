//! `cargo bench --bench startup`: start-up time to `/readyz`, idle RSS, and sign-in throughput of
//! the release binary on a fresh SQLite file. Prints a table; asserts nothing (timing goals live
//! here, not in tests).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("free port")
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn start(dir: &std::path::Path, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_agenticos"))
        .arg("serve")
        .env("AGENTICOS_BIND", format!("127.0.0.1:{port}"))
        .env("DATABASE_URL", format!("sqlite://{}/bench.db", dir.display()))
        .env("AGENTICOS_VAULT_KEY_FILE", dir.join("vault.key"))
        .env("AGENTICOS_CATALOG_DIR", concat!(env!("CARGO_MANIFEST_DIR"), "/catalog"))
        .env("AGENTICOS_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start agenticos")
}

async fn wait_ready(client: &reqwest::Client, base: &str, started: Instant) -> Duration {
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await {
            if r.status().is_success() {
                return started.elapsed();
            }
        }
        assert!(started.elapsed() < Duration::from_secs(30), "not ready within 30 s");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let mut ready = Vec::new();
    let mut rss = Vec::new();
    for run in 0..5 {
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let mut child = start(dir.path(), port);
        ready.push(wait_ready(&client, &base, started).await);
        tokio::time::sleep(Duration::from_secs(1)).await; // idle, by definition of "idle RSS"
        rss.push(rss_kib(child.id()).unwrap_or(0));
        if run == 4 {
            login_throughput(&base, dir.path()).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    ready.sort();
    rss.sort();
    println!("start to /readyz (SQLite, fresh file, migrations included): median {:?}, max {:?}", ready[2], ready[4]);
    println!("idle RSS after start: median {:.1} MiB, max {:.1} MiB", rss[2] as f64 / 1024.0, rss[4] as f64 / 1024.0);
}

async fn login_throughput(base: &str, _dir: &std::path::Path) {
    let setup_client =
        reqwest::Client::builder().cookie_store(true).redirect(reqwest::redirect::Policy::none()).build().expect("c");
    let token = csrf(&setup_client, &format!("{base}/setup")).await;
    let form = [
        ("email", "bench@example.com"),
        ("password", "bench password 1"),
        ("organization", "Bench"),
        ("csrf_token", &token),
    ];
    let r = setup_client.post(format!("{base}/setup")).form(&form).send().await.expect("setup");
    assert_eq!(r.status(), 303);
    let concurrency = 4;
    let duration = Duration::from_secs(5);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let base = base.to_string();
        tasks.push(tokio::spawn(async move {
            let mut done = 0u32;
            while started.elapsed() < duration {
                let c = reqwest::Client::builder()
                    .cookie_store(true)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .expect("c");
                let token = csrf(&c, &format!("{base}/login")).await;
                let form = [("email", "bench@example.com"), ("password", "bench password 1"), ("csrf_token", &token)];
                let r = c.post(format!("{base}/login")).form(&form).send().await.expect("login");
                assert_eq!(r.status(), 303);
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("task");
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "sign-in throughput ({concurrency} clients, {secs:.1} s, argon2id m=19MiB t=2): {:.1} sign-ins/s",
        total as f64 / secs
    );
}

async fn csrf(c: &reqwest::Client, url: &str) -> String {
    let body = c.get(url).send().await.expect("page").text().await.expect("body");
    let start = body.find("name=\"csrf_token\" value=\"").expect("csrf field") + 25;
    body[start..start + body[start..].find('"').expect("end")].to_string()
}
