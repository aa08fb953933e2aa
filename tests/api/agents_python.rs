//! The Python sandbox providers (`clients/python/`): their pytest suites against this console
//! (the test's own app on a loopback port, on SQLite and PostgreSQL) and a real sandboxd peer of
//! the test's own. The venv is `<CARGO_TARGET_DIR or ./target>/agents-venv` (or `AGENTS_VENV`),
//! made by `clients/python/venv.sh --install-only` from its pinned `requirements-test.txt`
//! (`.ci/run` prepares it; reused while that file is unchanged).
//!
//! Each test sets up an organization with an owner's token, a connection to the peer, a
//! `run`-scoped agent on it and one of the `state` backend, and a run of another organization,
//! names them to pytest in `AGENTICOS_*` variables (`clients/python/tests/conftest.py`), asserts
//! pytest's exit status 0 and writes pytest's summary line ("N passed in …") to the test's
//! standard error, uncaptured, so the log of every run shows each suite's count.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;

use crate::daytona_fake::FakeDaytona;
use crate::helpers::TestApp;
use crate::peer::{Peer, PeerOptions};
use crate::support::connections::daytona;
use crate::support::org::{service_agent, Org};

/// The standard suite writes fixed paths under `/tmp/test_sandbox_ops` of the sandbox, which is
/// the test machine's own `/tmp` for the local peer and for the fake Daytona's commands: its four
/// runs (two backends, two databases) take turns rather than share those files.
static FIXED_PATHS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python")
}

fn venv_dir() -> PathBuf {
    crate::peer::venv_in_target("AGENTS_VENV", "agents-venv")
}

/// What pytest is told about the console, the agent and the peer.
struct Fixture {
    env: Vec<(String, String)>,
    _peer: Peer,
}

async fn fixture(app: &TestApp) -> Fixture {
    let org = Org::new(app).await;
    // A peer whose commands cannot read a file of mode 000 (as a sandbox not run as root), which
    // the suite's permission test needs.
    let peer = Peer::start(PeerOptions::default().env("SANDBOXD_MAX_SESSIONS", "200").without_read_override())
        .await
        .expect("the sandboxd peer starts");
    org.connect(&peer).await;
    let agent = org.agent(service_agent("python-providers", "run")).await;
    let state_agent = org.agent(json!({"name": "python-documents", "backend": "state", "scope": "run"})).await;
    let other = app.other_org_user("other-owner@example.com", "Other Org").await;
    let other_token = other.create_token_in_page("other", "owner").await;
    let other_agent = other
        .bearer(
            &other_token,
            reqwest::Method::POST,
            "/api/v1/agents",
            Some(json!({"name": "theirs", "backend": "state", "scope": "run"})),
        )
        .await;
    assert_eq!(other_agent.status, 201, "{}", other_agent.body);
    let other_run = other
        .bearer(
            &other_token,
            reqwest::Method::POST,
            "/api/v1/runs",
            Some(json!({"agent_id": other_agent.json()["id"], "started_by": "api"})),
        )
        .await;
    assert_eq!(other_run.status, 201, "{}", other_run.body);
    let env = vec![
        ("AGENTICOS_URL".to_string(), app.address.clone()),
        ("AGENTICOS_TOKEN".to_string(), org.token.clone()),
        ("AGENTICOS_AGENT_ID".to_string(), agent),
        ("AGENTICOS_STATE_AGENT_ID".to_string(), state_agent),
        ("AGENTICOS_PEER_ROOT".to_string(), peer.workspace_root.display().to_string()),
        ("AGENTICOS_OTHER_RUN_ID".to_string(), other_run.json()["id"].as_str().expect("id").to_string()),
    ];
    Fixture { env, _peer: peer }
}

/// Prepares the venv (a no-op once made) and runs pytest on `files` with `env` added.
async fn pytest(app: &TestApp, env: &[(String, String)], files: &[&str]) -> Output {
    let venv = venv_dir();
    let dir = client_dir();
    let files: Vec<String> = files.iter().map(|f| f.to_string()).collect();
    let env = env.to_vec();
    let label = format!("{:?}", app.backend);
    tokio::task::spawn_blocking(move || {
        let prepared = Command::new("bash")
            .arg(dir.join("venv.sh"))
            .arg("--install-only")
            .arg(&venv)
            .output()
            .expect("clients/python/venv.sh runs");
        assert!(
            prepared.status.success(),
            "clients/python/venv.sh --install-only {} failed:\n{}",
            venv.display(),
            String::from_utf8_lossy(&prepared.stderr)
        );
        let output = Command::new(venv.join("bin/python"))
            .args(["-m", "pytest", "-q", "-rfEs", "--no-header", "-p", "no:cacheprovider"])
            .args(&files)
            .current_dir(&dir)
            .env("PYTHONPATH", dir.join("src"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("CI", "true")
            .envs(env)
            .output()
            .expect("pytest runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let summary = stdout.lines().rev().find(|l| l.contains(" in ") && l.contains("passed")).unwrap_or("no summary");
        let _ = writeln!(std::io::stderr(), "agents_python [{label}] {}: {summary}", files.join(" "));
        output
    })
    .await
    .expect("pytest's thread")
}

fn assert_passed(output: &Output) {
    assert!(
        output.status.success(),
        "pytest failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

crate::db_test! {
    /// Deep Agents' standard `SandboxIntegrationTests` (langchain-tests 1.1.9), unmodified,
    /// sync and async, through `AgenticosSandbox` as an application builds it (the tests that
    /// still state the protocol before deepagents 0.7 are strict expected failures, and what
    /// 0.7.32 states instead is asserted by test_deepagents_protocol.py).
    async fn deepagents_standard_suite_passes(app: TestApp) {
        let fixture = fixture(&app).await;
        let _turn = FIXED_PATHS.lock().await;
        let files = ["tests/test_deepagents_standard.py", "tests/test_deepagents_protocol.py"];
        assert_passed(&pytest(&app, &fixture.env, &files).await);
    }
}

crate::db_test! {
    /// The same suite on a Daytona connection, against the FAKE Daytona (no Daytona runs here):
    /// its commands run on this machine, so its fixed paths take turns with the peer's.
    async fn deepagents_standard_suite_passes_on_daytona(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let org = Org::new(&app).await;
        daytona(&org, &fake.api_url, &fake.api_key).await;
        let agent = org.agent(service_agent("deepagents-on-daytona", "run")).await;
        let env = daytona_env(&app, &org, agent);
        let _turn = FIXED_PATHS.lock().await;
        let files = ["tests/test_deepagents_standard.py", "tests/test_deepagents_protocol.py"];
        assert_passed(&pytest(&app, &env, &files).await);
    }
}

fn daytona_env(app: &TestApp, org: &Org, agent: String) -> Vec<(String, String)> {
    vec![
        ("AGENTICOS_URL".to_string(), app.address.clone()),
        ("AGENTICOS_TOKEN".to_string(), org.token.clone()),
        ("AGENTICOS_AGENT_ID".to_string(), agent),
        ("AGENTICOS_DAYTONA".to_string(), "1".to_string()),
    ]
}

crate::db_test! {
    /// The client (problem types, retries, deadlines, the token kept out of text), governance
    /// and scope through the providers, the `state` backend through them, Pydantic AI's
    /// `AgenticosWorkspace`, the OpenAI Agents SDK's `AgenticosSandboxClient`, and
    /// docs/agents.md's examples.
    async fn python_providers_pass(app: TestApp) {
        let fixture = fixture(&app).await;
        let files = [
            "tests/test_client.py",
            "tests/test_governance.py",
            "tests/test_backends.py",
            "tests/test_pydantic_ai.py",
            "tests/test_openai_agents.py",
            "tests/test_scope.py",
            "tests/test_docs_examples.py",
        ];
        assert_passed(&pytest(&app, &fixture.env, &files).await);
    }
}

crate::db_test! {
    /// 50 concurrent sessions, a mix of the three providers, for 60 s against the real peer: no
    /// 5xx, and one row in the operation log per operation acknowledged.
    async fn python_providers_under_load(app: TestApp) {
        let fixture = fixture(&app).await;
        assert_passed(&pytest(&app, &fixture.env, &["tests/test_load.py"]).await);
    }
}

crate::db_test! {
    /// The providers on a Daytona connection, against the FAKE Daytona (no Daytona runs here).
    async fn python_providers_on_daytona(app: TestApp) {
        let fake = FakeDaytona::start(&[]);
        let org = Org::new(&app).await;
        daytona(&org, &fake.api_url, &fake.api_key).await;
        let agent = org.agent(service_agent("python-on-daytona", "run")).await;
        let env = daytona_env(&app, &org, agent);
        assert_passed(&pytest(&app, &env, &["tests/test_daytona.py"]).await);
    }
}
