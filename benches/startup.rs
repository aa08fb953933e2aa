//! `cargo bench --bench startup`: start-up time to `/readyz`, idle RSS, and sign-in throughput of
//! the release binary on a fresh SQLite file. Prints a table; asserts nothing (timing goals live
//! here, not in tests).

#[path = "support/console.rs"]
mod console;
#[path = "support/proc_status.rs"]
mod proc_status;

use std::time::{Duration, Instant};

use console::{browser_like, csrf, set_up_owner, start_console, OWNER_EMAIL, OWNER_PASSWORD};

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().expect("client");
    let mut ready = Vec::new();
    let mut rss = Vec::new();
    for run in 0..5 {
        let console = start_console(&client).await;
        ready.push(console.ready_after);
        tokio::time::sleep(Duration::from_secs(1)).await; // idle, by definition of "idle RSS"
        rss.push(proc_status::status_kib(&console.child.id().to_string(), "VmRSS"));
        if run == 4 {
            login_throughput(&console.base).await;
        }
    }
    ready.sort();
    rss.sort();
    println!("start to /readyz (SQLite, fresh file, migrations included): median {:?}, max {:?}", ready[2], ready[4]);
    println!("idle RSS after start: median {:.1} MiB, max {:.1} MiB", rss[2] as f64 / 1024.0, rss[4] as f64 / 1024.0);
}

async fn login_throughput(base: &str) {
    set_up_owner(&browser_like(), base).await;
    let concurrency = 4;
    let duration = Duration::from_secs(5);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let base = base.to_string();
        tasks.push(tokio::spawn(async move {
            let mut done = 0u32;
            while started.elapsed() < duration {
                let c = browser_like();
                let token = csrf(&c, &format!("{base}/login")).await;
                let form = [("email", OWNER_EMAIL), ("password", OWNER_PASSWORD), ("csrf_token", &token)];
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
