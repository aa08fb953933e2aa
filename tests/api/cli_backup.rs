//! Backups (docs/operating.md, "Backups"), with a real console process serving and writing:
//! on SQLite `agenticos backup --to FILE` copies the database consistently and refuses to write
//! over a file; on PostgreSQL it says to use pg_dump, and the documented pg_dump/pg_restore is run.
//! Either copy, restored into a fresh data folder, serves a console a person signs in to, with
//! the rows that were acknowledged before the backup began.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::db_test;
use crate::helpers::{fresh_database, Backend, Client, TestDatabase};
use crate::support::console_process::{agenticos, agenticos_on, printed_token, run_ok, serve, Console};

const EMAIL: &str = "ops@example.com";
const PASSWORD: &str = "a long backup password";

/// An owner with a password of their own, and an admin API token.
fn owner_and_token(database: &TestDatabase) -> String {
    run_ok(agenticos(database).arg("migrate"));
    let mut owner = agenticos(database)
        .args(["admin", "create-owner", "--email", EMAIL, "--organization", "Ops", "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    writeln!(owner.stdin.take().expect("stdin"), "{PASSWORD}").expect("password");
    let out = owner.wait_with_output().expect("create-owner");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    printed_token(&run_ok(agenticos(database).args([
        "admin",
        "create-token",
        "--organization",
        "Ops",
        "--role",
        "admin",
        "--name",
        "writer",
    ])))
}

/// Creates agents `agent-0`, `agent-1`, … through the API until `stop`; the count acknowledged.
fn keep_writing(
    console: &Console,
    token: &str,
    stop: Arc<AtomicBool>,
) -> (watch::Receiver<usize>, tokio::task::JoinHandle<()>) {
    let (count, acknowledged) = watch::channel(0);
    let (base, token) = (console.address.clone(), token.to_string());
    let writer = tokio::spawn(async move {
        let http = reqwest::Client::new();
        for i in 0.. {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let body = json!({"name": format!("agent-{i}"), "backend": "state", "scope": "run"});
            let r = http.post(format!("{base}/api/v1/agents")).bearer_auth(&token).json(&body).send().await;
            assert_eq!(r.expect("the console answers").status(), StatusCode::CREATED);
            count.send_modify(|n| *n += 1);
        }
    });
    (acknowledged, writer)
}

/// Waits until at least `n` writes are acknowledged.
async fn acknowledged_at_least(count: &mut watch::Receiver<usize>, n: usize) {
    count.wait_for(|done| *done >= n).await.expect("the writer stopped early");
}

/// The agent names the restored console lists (sorted by number).
async fn agent_names(console: &Console, token: &str) -> Vec<usize> {
    let r = reqwest::Client::new()
        .get(format!("{}/api/v1/agents", console.address))
        .bearer_auth(token)
        .send()
        .await
        .expect("the restored console answers");
    assert_eq!(r.status(), StatusCode::OK);
    let answer: Value = r.json().await.expect("json");
    let items = answer.as_array().unwrap_or_else(|| panic!("a list: {answer}"));
    let mut numbers: Vec<usize> =
        items.iter().filter_map(|a| a["name"].as_str()?.strip_prefix("agent-")?.parse().ok()).collect();
    numbers.sort_unstable();
    numbers
}

/// A console on the restored database in `dir`: the owner signs in, and every agent acknowledged
/// before the backup began is there, numbered without a gap.
async fn restored_console_serves(url: &str, dir: &Path, token: &str, before: usize) {
    let console = serve(agenticos_on(url, dir)).await;
    let browser = Client::new(&console.address);
    let signed_in = browser.post_login(EMAIL, PASSWORD).await;
    assert_eq!(signed_in.status, StatusCode::SEE_OTHER, "{}", signed_in.body);
    let home = browser.get("/").await;
    assert_eq!(home.status, StatusCode::OK);
    assert!(home.body.contains(EMAIL), "the home page is not the owner's: {}", home.body);
    let numbers = agent_names(&console, token).await;
    assert!(numbers.len() >= before, "{} agents restored, {before} acknowledged before the backup", numbers.len());
    assert_eq!(numbers, (0..numbers.len()).collect::<Vec<_>>(), "a consistent copy has no gap");
}

db_test! {
    async fn a_backup_taken_while_serving_restores_into_a_console_one_signs_in_to(database: TestDatabase) {
        let token = owner_and_token(&database);
        let console = serve(agenticos(&database)).await;
        let stop = Arc::new(AtomicBool::new(false));
        let (mut count, writer) = keep_writing(&console, &token, stop.clone());
        acknowledged_at_least(&mut count, 20).await;
        let before = *count.borrow();
        let restore = tempfile::tempdir().expect("a fresh data folder");
        let backup = database.dir.path().join("backup.db");

        let out = agenticos(&database).args(["backup", "--to"]).arg(&backup).output().expect("runs");
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let restored_url = if database.url.starts_with("sqlite:") {
            assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
            assert!(stdout.contains("a consistent copy") && stdout.contains("vault.key"), "{stdout}");
            // The writes go on after the copy, and a second backup to the same file is refused.
            acknowledged_at_least(&mut count, before + 20).await;
            let copied = std::fs::read(&backup).expect("the backup");
            let again = agenticos(&database).args(["backup", "--to"]).arg(&backup).output().expect("runs");
            assert_eq!(again.status.code(), Some(1));
            let refusal = String::from_utf8_lossy(&again.stderr);
            assert!(refusal.contains("already exists") && refusal.contains("never writes over"), "{refusal}");
            assert_eq!(std::fs::read(&backup).expect("the backup"), copied, "the backup was written over");
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&backup).expect("stat").permissions().mode() & 0o777, 0o600);
            // Restored as docs/operating.md says: the file and the vault key into a data folder.
            std::fs::copy(&backup, restore.path().join("agenticos.db")).expect("restore");
            format!("sqlite://{}/agenticos.db", restore.path().display())
        } else {
            assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
            assert!(stderr.contains("pg_dump --format=custom"), "{stderr}");
            assert!(!backup.exists(), "a PostgreSQL backup wrote a file");
            // The documented pg_dump, while serving, and pg_restore into a fresh database.
            let dump = database.dir.path().join("agenticos.dump");
            let dumped = std::process::Command::new("pg_dump")
                .args(["--format=custom", "--file"])
                .arg(&dump)
                .arg(&database.url)
                .output()
                .expect("pg_dump runs");
            assert!(dumped.status.success(), "{}", String::from_utf8_lossy(&dumped.stderr));
            acknowledged_at_least(&mut count, before + 20).await;
            let fresh = fresh_database(Backend::Postgres).await.expect("a fresh PostgreSQL database");
            let restored = std::process::Command::new("pg_restore")
                .args(["--no-owner", "--dbname", &fresh.url])
                .arg(&dump)
                .output()
                .expect("pg_restore runs");
            assert!(restored.status.success(), "{}", String::from_utf8_lossy(&restored.stderr));
            fresh.url
        };
        stop.store(true, Ordering::SeqCst);
        writer.await.expect("the writer");
        drop(console);
        std::fs::copy(database.dir.path().join("vault.key"), restore.path().join("vault.key")).expect("the vault key");
        restored_console_serves(&restored_url, restore.path(), &token, before).await;
        if !restored_url.starts_with("sqlite:") {
            crate::helpers::drop_database(restored_url.rsplit('/').next().map(str::to_string)).await;
        }
    }
}

#[test]
fn a_backup_needs_a_target_and_an_existing_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}/none.db", dir.path().display());
    let out = agenticos_on(&url, dir.path()).arg("backup").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("backup needs --to FILE"));
    let target = dir.path().join("copy.db");
    let out = agenticos_on(&url, dir.path()).args(["backup", "--to"]).arg(&target).output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("there is no SQLite database at"), "{stderr}");
    assert!(!target.exists() && !dir.path().join("none.db").exists(), "a file was left behind");
}
