//! The Docker engine integration (docs/operating.md, "The Docker engine") against the real engine:
//! discovery in the API and the connection dialog, doctor's engine section, live usage of a
//! session container, and nothing of it without a configured engine. Images and containers are
//! made here (`docker_engine_fixture.rs`) and removed when each test ends.

use std::path::Path;

use agenticos::config::VaultKeySource;
use reqwest::{Method, StatusCode};
use secrecy::ExposeSecret as _;
use serde_json::Value;

use crate::docker_engine_fixture::{DockerRun, SOCKET};
use crate::helpers::{spawn_app_with, Backend, TestApp};
use crate::support::source_files::source_files;

/// Another release than the pin.
const OTHER_TAG: &str = "0.2.36";

pub(crate) fn pin() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("catalog/sandboxd.version"))
        .expect("the pin")
        .trim()
        .to_string()
}

async fn app_with_engine(backend: Backend, run: &DockerRun) -> Option<TestApp> {
    spawn_app_with(backend, &[("AGENTICOS_DOCKER_SOCKET", SOCKET), ("AGENTICOS_SANDBOXD_IMAGE", &run.image_name)]).await
}

pub(crate) fn container<'a>(answer: &'a Value, name: &str) -> &'a Value {
    answer["containers"]
        .as_array()
        .expect("a list")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name} not discovered: {answer:#}"))
}

/// The lines httpd logged for requests (`-v`: one per connection, naming the URL).
fn requests(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("url:") || l.contains("response:")).collect()
}

async fn discovery(backend: Backend) {
    let pin = pin();
    let Some(mut run) = DockerRun::start(&[&pin, OTHER_TAG]) else { return };
    let run_id = run.id.clone();
    let (good, good_port) = run.httpd(&pin, "pinned");
    let (drifted, drifted_port) = run.httpd(OTHER_TAG, "drifted");
    let Some(app) = app_with_engine(backend, &run).await else { return };
    app.setup_owner().await;

    // The API: both containers, with their tags; only the pinned one matches.
    let r = app.web.api(Method::GET, "/api/v1/sandbox-connections/discovered", None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(!r.body.contains(&run.env_secret), "a container's environment reached the answer: {}", r.body);
    let answer: Value = serde_json::from_str(&r.body).expect("json");
    assert_eq!(answer["engine_enabled"], true);
    assert!(answer["engine_problem"].is_null(), "{answer:#}");
    let g = container(&answer, &good);
    assert_eq!(
        (g["tag"].as_str(), g["version"].as_str(), g["state"].as_str()),
        (Some(pin.as_str()), Some("matches"), Some("running"))
    );
    assert_eq!(g["address"], format!("http://127.0.0.1:{good_port}"));
    assert!(g["version_message"].is_null());
    let d = container(&answer, &drifted);
    assert_eq!((d["tag"].as_str(), d["version"].as_str()), (Some(OTHER_TAG), Some("mismatch")));
    let message = d["version_message"].as_str().expect("a mismatch message");
    assert!(
        message.contains(&format!("{}:{OTHER_TAG}", run.image_name))
            && message.contains(&format!("expected {pin}"))
            && message.contains(&format!("Run {}:{pin} and redeploy it", run.image_name)),
        "{message}"
    );

    // The dialog: one click on the pinned container's address; the drifted one is the message.
    let page = app.web.get("/sandboxes/new").await;
    assert_eq!(page.status, StatusCode::OK);
    let doc = scraper::Html::parse_document(&page.body);
    let fill = scraper::Selector::parse("[data-fill-address]").expect("selector");
    let offered: Vec<&str> = doc.select(&fill).filter_map(|e| e.value().attr("data-fill-address")).collect();
    assert_eq!(offered, vec![format!("http://127.0.0.1:{good_port}")], "{}", page.body);
    let mismatch = scraper::Selector::parse(".discovered-mismatch").expect("selector");
    let shown: Vec<String> = doc.select(&mismatch).map(|e| e.text().collect()).collect();
    assert_eq!(shown.len(), 1, "{}", page.body);
    assert!(shown[0].contains(&format!("{}:{OTHER_TAG}", run.image_name)), "{shown:?}");
    assert!(!page.body.contains(&format!("127.0.0.1:{drifted_port}\"")), "the drifted address is offered");
    assert!(!page.body.contains(&run.env_secret));
    // Without JavaScript, the offer is the dialog again with the address filled in.
    let filled = app.web.get(&format!("/sandboxes/new?address=http%3A%2F%2F127.0.0.1%3A{good_port}")).await;
    assert!(filled.body.contains(&format!("value=\"http://127.0.0.1:{good_port}\"")), "{}", filled.body);

    // Not one request reached either container; a request of our own shows in the log.
    assert_eq!(requests(&run.logs(&drifted)), Vec::<&str>::new(), "the drifted container was asked");
    assert_eq!(requests(&run.logs(&good)), Vec::<&str>::new(), "discovery asked a container");
    let body = reqwest::get(format!("http://127.0.0.1:{good_port}/")).await.expect("httpd answers").text().await;
    assert!(body.expect("body").contains("sandboxd stand-in"));
    assert!(!requests(&run.logs(&good)).is_empty(), "httpd logs requests: {}", run.logs(&good));

    // Discovery is for those who add connections.
    let operator = app.member_with_role("operator@example.com", "operator").await;
    let r = operator.api(Method::GET, "/api/v1/sandbox-connections/discovered", None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.header("content-type").as_deref(), Some("application/problem+json"));

    drop(run);
    assert_eq!(DockerRun::leftovers(&run_id), Vec::<String>::new(), "the run left objects behind");
    if let Some(db) = app.database.clone() {
        crate::helpers::drop_database(Some(db)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_the_pinned_container_and_flags_another_tag_without_asking_it_sqlite() {
    discovery(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_the_pinned_container_and_flags_another_tag_without_asking_it_postgres() {
    discovery(Backend::Postgres).await
}

/// `agenticos doctor` on the app's database with `extra` environment.
pub(crate) async fn doctor(app: &TestApp, extra: &[(&str, &str)]) -> (i32, String) {
    let VaultKeySource::Inline(key) = &app.state.config.vault.key else { panic!("inline vault key") };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_agenticos"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(dir.path())
        .env("DATABASE_URL", &app.state.config.database.url)
        .env("AGENTICOS_VAULT_KEY", key.expose_secret())
        .env("AGENTICOS_CATALOG_DIR", crate::helpers::TEST_CATALOG_DIR)
        .env("AGENTICOS_LOG", "warn")
        .envs(extra.iter().copied())
        .arg("doctor");
    let out = c.output().await.expect("the binary runs");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

async fn doctor_drift(backend: Backend) {
    let pin = pin();
    let Some(mut run) = DockerRun::start(&[&pin, OTHER_TAG]) else { return };
    let run_id = run.id.clone();
    let (good, _) = run.httpd(&pin, "pinned");
    let (drifted, _) = run.httpd(OTHER_TAG, "drifted");
    let Some(app) = spawn_app_with(backend, &[]).await else { return };

    let (code, out) =
        doctor(&app, &[("AGENTICOS_DOCKER_SOCKET", SOCKET), ("AGENTICOS_SANDBOXD_IMAGE", &run.image_name)]).await;
    assert_eq!(code, 1, "a drifted tag makes doctor fail: {out}");
    assert!(out.contains(&format!("Docker engine: sandboxd containers ({}, pinned {pin})", run.image_name)), "{out}");
    let block = |name: &str| -> String {
        let start = out.find(&format!("  {name} (")).unwrap_or_else(|| panic!("{name} missing: {out}"));
        out[start..].lines().take(4).collect::<Vec<_>>().join("\n")
    };
    let g = block(&good);
    assert!(g.contains(&format!("✓ image tag          {pin} is the pinned version")), "{g}");
    assert!(g.contains("- restarts           0"), "{g}");
    assert!(g.contains("- health             no health check"), "{g}");
    let d = block(&drifted);
    assert!(d.contains("✗ image tag          drifted: The sandbox service runs"), "{d}");
    assert!(d.contains(&format!("{}:{OTHER_TAG}", run.image_name)), "{d}");
    assert!(out.contains("2 containers: 1 fine, 1 with a problem"), "{out}");
    assert!(!out.contains(&run.env_secret), "a container's environment reached doctor's report: {out}");
    assert_eq!(requests(&run.logs(&drifted)), Vec::<&str>::new(), "doctor asked the drifted container");

    // Without an engine configured, the section is absent and a clean report passes.
    let (code, out) = doctor(&app, &[]).await;
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("Docker engine"), "{out}");

    drop(run);
    assert_eq!(DockerRun::leftovers(&run_id), Vec::<String>::new(), "the run left objects behind");
    if let Some(db) = app.database.clone() {
        crate::helpers::drop_database(Some(db)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reports_a_drifted_tag_sqlite() {
    doctor_drift(Backend::Sqlite).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reports_a_drifted_tag_postgres() {
    doctor_drift(Backend::Postgres).await
}

crate::db_test! {
    /// No engine configured: the API says so with an empty list, the dialog has no section.
    async fn without_an_engine_nothing_of_it_shows(app: TestApp) {
        app.setup_owner().await;
        assert!(app.state.docker.is_none());
        let r = app.web.api(Method::GET, "/api/v1/sandbox-connections/discovered", None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let answer: Value = serde_json::from_str(&r.body).expect("json");
        assert_eq!(answer, serde_json::json!({"engine_enabled": false, "engine_problem": null, "containers": []}));
        let page = app.web.get("/sandboxes/new").await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(!page.body.contains("connection-discovered"), "{}", page.body);
        let running = app.web.get("/sandboxes/running?usage=1").await;
        assert!(!running.body.contains(">CPU<"), "{}", running.body);
    }
}

/// A session container's live usage: one sample each, a few at a time; a missing one is absent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_usage_of_a_session_container_comes_from_the_engine() {
    let pin = pin();
    let Some(mut run) = DockerRun::start(&[&pin]) else { return };
    let run_id = run.id.clone();
    let session = format!("sandboxd-{}-s1", run.id);
    run.sleeper(&pin, &session);
    let engine = agenticos::docker::Engine::connect(&format!("unix://{SOCKET}")).expect("engine");
    let missing = format!("sandboxd-{}-gone", run.id);
    let usage = engine.usage_of_all(vec![session.clone(), missing.clone()]).await;
    assert!(!usage.contains_key(&missing), "{usage:?}");
    let u = usage.get(&session).unwrap_or_else(|| panic!("no usage of {session}: {usage:?}"));
    assert!(u.memory_bytes.is_some_and(|m| m > 0), "{u:?}");
    assert_eq!(u.memory_limit_bytes, Some(64 * 1024 * 1024), "the container's own limit: {u:?}");
    assert!(u.cpu_percent.is_some_and(|c| (0.0..=100.0 * 64.0).contains(&c)), "{u:?}");

    // An engine that does not answer: nothing, quickly, never an error.
    // (bollard refuses a socket path that does not exist; a file that is no socket answers nothing.)
    let not_a_socket = tempfile::NamedTempFile::new().expect("file");
    let nowhere =
        agenticos::docker::Engine::connect(&format!("unix://{}", not_a_socket.path().display())).expect("engine");
    assert!(nowhere.usage_of_all(vec![session.clone()]).await.is_empty());
    let err = nowhere.sandboxd_containers("x", &pin).await.expect_err("no engine");
    assert_eq!(err.to_string(), "The Docker engine did not answer");

    drop(run);
    assert_eq!(DockerRun::leftovers(&run_id), Vec::<String>::new(), "the run left objects behind");
}

/// bollard is used by `src/docker/` only.
#[test]
fn only_the_docker_module_uses_bollard() {
    let users: Vec<String> = source_files()
        .into_iter()
        .filter(|path| std::fs::read_to_string(path).unwrap_or_default().contains("bollard::"))
        .map(|path| path.display().to_string())
        .collect();
    let outside: Vec<&String> = users.iter().filter(|p| !p.contains("/src/docker/")).collect();
    assert!(outside.is_empty(), "bollard outside src/docker/: {outside:?}");
    assert!(!users.is_empty());
}
