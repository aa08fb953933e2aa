//! `scripts/deploy.sh` on the repository's `docker-compose.yml` (the images of
//! `tests/docker-images/build.sh deployment`, so `--no-pull --no-build`): without
//! `SANDBOXD_TOKEN` it starts no sandboxd; with it, it prepares the runtimes in a one-off container
//! of the new sandboxd image while the running one keeps serving, names a runtime it could not
//! prepare after three tries, migrates before the console is replaced, and the new sandboxd then
//! serves the changed runtime from an image built before it started (docs/design.md §14, "When a
//! runtime build is paid").
//!
//! The changed runtime's build waits on a gate this test holds (its setup command fetches a URL on
//! this machine), so the test looks at the old sandboxd exactly while the new runtime is being
//! prepared, without racing it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use crate::docker_compose::{api, ComposeStack, COMPOSE_FILES};
use crate::docker_support::{self, docker, outward_address, DeploymentImages, BUILT_IMAGE_RUN_ENV};

/// How long a deploy (or the gate's first request) may take before the test gives up.
const DEPLOY_TIMEOUT: Duration = Duration::from_secs(900);

/// Runs `scripts/deploy.sh --no-pull --no-build` in the directory of the stack of `run`:
/// success and its output.
async fn deploy(dir: PathBuf, run: String) -> (bool, String) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/deploy.sh");
    let out = tokio::process::Command::new("bash")
        .arg(script)
        .args(["--no-pull", "--no-build"])
        .current_dir(dir)
        .env("COMPOSE_PROJECT_NAME", docker_support::compose_project(&run))
        .env("COMPOSE_FILE", COMPOSE_FILES)
        .env_remove("COMPOSE_PROFILES")
        .env_remove("SANDBOXD_TOKEN")
        .env_remove("DOCKER_GID")
        .output()
        .await
        .expect("running scripts/deploy.sh");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// The id of the stack's running service container of `service` (not a one-off `run`), or empty.
fn container_of(stack: &ComposeStack, service: &str) -> String {
    let project = docker_support::compose_project(&stack.run);
    docker(&[
        "ps",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label=com.docker.compose.project={project}"),
        "--filter",
        &format!("label=com.docker.compose.service={service}"),
        "--filter",
        "label=com.docker.compose.oneoff=False",
    ])
    .unwrap_or_default()
}

/// `docker inspect --format FORMAT TARGET` as a time.
fn inspected_time(format: &str, target: &str) -> OffsetDateTime {
    let text = docker(&["inspect", "--format", format, target]).unwrap_or_else(|e| panic!("{e:#}"));
    OffsetDateTime::parse(&text, &Rfc3339).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A URL on this machine whose first request is held until [`Gate::release`].
struct Gate {
    listener: TcpListener,
    url: String,
}

impl Gate {
    async fn open() -> Gate {
        let listener = TcpListener::bind(("0.0.0.0", 0)).await.expect("gate listener");
        let port = listener.local_addr().expect("addr").port();
        Gate { url: format!("http://{}:{port}/", outward_address()), listener }
    }

    /// Waits for the first request; the connection to answer later.
    async fn requested(&self) -> TcpStream {
        let (mut stream, _) = self.listener.accept().await.expect("gate accept");
        let mut buf = [0u8; 1024];
        let _ = stream.read(&mut buf).await;
        stream
    }

    async fn release(mut stream: TcpStream) {
        stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok").await.expect("gate answer");
        stream.shutdown().await.expect("gate close");
    }
}

/// The allowlist: `workbench` built on the local `python` test image with `setup`, and `extra`.
fn runtimes(images: &DeploymentImages, run: &str, setup: &str, extra: serde_json::Value) -> String {
    let mut all = json!({
        "workbench": {
            "runtime": {
                "name": format!("deploy-{run}"),
                "base_image": images.images.python,
                "setup_commands": [setup],
                "env_vars": {BUILT_IMAGE_RUN_ENV: run},
            },
            "description": "changed between two deploys",
            "mem_limit": "1g",
            "network_mode": "none",
        }
    });
    if let (Some(all), Some(extra)) = (all.as_object_mut(), extra.as_object()) {
        all.extend(extra.clone());
    }
    all.to_string()
}

/// Removes `SANDBOXD_TOKEN` from the stack's `.env` (`false`) or puts it back (`true`).
fn set_token(stack: &ComposeStack, present: bool) -> anyhow::Result<()> {
    let path = stack.dir.join(".env");
    let text = std::fs::read_to_string(&path).context("reading .env")?;
    let mut lines: Vec<String> =
        text.lines().filter(|l| !l.starts_with("SANDBOXD_TOKEN=")).map(str::to_string).collect();
    if present {
        lines.push(format!("SANDBOXD_TOKEN={}", stack.sandboxd_token));
    }
    std::fs::write(&path, lines.join("\n") + "\n").context("writing .env")
}

/// Whether `earlier` appears in `log` before `later` (both must appear).
fn in_order(log: &str, earlier: &str, later: &str) -> bool {
    matches!((log.find(earlier), log.find(later)), (Some(a), Some(b)) if a < b)
}

#[tokio::test]
async fn a_deploy_prepares_a_changed_runtime_while_the_old_sandboxd_serves_then_swaps() {
    let Some(images) = docker_support::deployment_images("docker_deploy::prepare").await else { return };
    let stack = ComposeStack::create().unwrap_or_else(|e| panic!("{e:#}"));
    let run = stack.run.clone();
    let first = "echo one > /etc/deploy-version";
    // `broken` never builds: the deploy tries it three times and names it.
    let broken = json!({"broken": {"runtime": {"name": format!("broken-{run}"), "base_image": images.images.python,
        "setup_commands": ["exit 3"], "env_vars": {BUILT_IMAGE_RUN_ENV: run}}, "network_mode": "none"}});
    stack.write_override(&images, &runtimes(&images, &run, first, broken)).unwrap_or_else(|e| panic!("{e:#}"));

    // Without SANDBOXD_TOKEN: the console and its database, no sandbox service.
    set_token(&stack, false).expect(".env");
    let (ok, log) =
        tokio::time::timeout(DEPLOY_TIMEOUT, deploy(stack.dir.clone(), run.clone())).await.expect("deploy timed out");
    assert!(ok, "{log}");
    assert!(log.contains("deploy: SANDBOXD_TOKEN is not set"), "{log}");
    assert!(!log.contains("pydantic_ai_backends"), "{log}");
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    assert_eq!(container_of(&stack, "sandboxd"), "", "sandboxd started without a token");

    // With it: prepared (one runtime named as not), migrated, swapped.
    set_token(&stack, true).expect(".env");
    let (ok, log) =
        tokio::time::timeout(DEPLOY_TIMEOUT, deploy(stack.dir.clone(), run.clone())).await.expect("deploy timed out");
    assert!(ok, "{log}\n{}", stack.logs());
    for attempt in ["attempt 1 of 3", "attempt 2 of 3"] {
        assert!(log.contains(&format!("Preparing runtime broken failed ({attempt}); trying again")), "{log}");
    }
    assert!(log.contains("deploy: runtime not prepared: broken (sandboxd builds it when a session asks"), "{log}");
    assert!(!log.contains("runtime not prepared: workbench"), "{log}");
    assert!(in_order(&log, "deploy: preparing the runtimes", "deploy: replacing sandboxd"), "{log}");
    assert!(in_order(&log, "deploy: migrations applied", "deploy: replacing the console"), "{log}");
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    let token = stack.owner_token().unwrap_or_else(|e| panic!("{e:#}"));
    let conn = stack.connect_own_sandboxd(&token).await;
    let agent = stack.agent(&token, "versioned", "workbench").await;
    let (out, _) = stack.exec_in_new_run(&token, &agent, "cat /etc/deploy-version").await;
    assert_eq!(out["stdout"], "one\n", "{out}");
    let old = container_of(&stack, "sandboxd");
    assert!(!old.is_empty());

    // The runtime changes; its build waits on the gate, so the deploy is held inside `prepare`.
    let gate = Gate::open().await;
    let second = format!(
        "python3 -c \"import urllib.request; urllib.request.urlopen('{}', timeout=900)\" && echo two > /etc/deploy-version",
        gate.url
    );
    stack.write_override(&images, &runtimes(&images, &run, &second, json!({}))).unwrap_or_else(|e| panic!("{e:#}"));
    let mut deploying = tokio::spawn(deploy(stack.dir.clone(), run.clone()));
    let held = tokio::select! {
        held = gate.requested() => held,
        done = &mut deploying => panic!("the deploy ended before the changed runtime was built: {done:?}"),
        _ = tokio::time::sleep(DEPLOY_TIMEOUT) => panic!("the changed runtime's build never started"),
    };
    // While the new image's runtime is being prepared: the old sandboxd runs, answers the probe,
    // and opens a new session on the old runtime.
    assert_eq!(container_of(&stack, "sandboxd"), old, "sandboxd was replaced before its runtime was prepared");
    let probe = format!("/api/v1/sandbox-connections/{conn}/probe");
    let (status, probed) = api(&stack, &token, reqwest::Method::POST, &probe, None).await;
    assert_eq!((status, &probed["health"]), (200, &json!("healthy")), "{probed}");
    let (out, _) = stack.exec_in_new_run(&token, &agent, "cat /etc/deploy-version").await;
    assert_eq!(out["stdout"], "one\n", "{out}");
    assert!(!deploying.is_finished(), "the deploy went on while the build was held");
    Gate::release(held).await;

    let (ok, log) =
        tokio::time::timeout(DEPLOY_TIMEOUT, deploying).await.expect("deploy timed out").expect("deploy task");
    assert!(ok, "{log}\n{}", stack.logs());
    assert!(log.contains("deploy: every runtime is prepared"), "{log}");
    // The console is replaced only once the new sandboxd answers (its first session must not
    // meet a sandboxd still starting).
    assert!(in_order(&log, "deploy: replacing sandboxd", "deploy: sandboxd answers"), "{log}");
    assert!(in_order(&log, "deploy: sandboxd answers", "deploy: replacing the console"), "{log}");
    let new = container_of(&stack, "sandboxd");
    assert!(!new.is_empty() && new != old, "sandboxd was not replaced: {old} / {new}");

    // The new sandboxd serves the changed runtime from the image the deploy built before it
    // started: nothing for the first session to wait for.
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    let (out, container) = stack.exec_in_new_run(&token, &agent, "cat /etc/deploy-version").await;
    assert_eq!(out["stdout"], "two\n", "{out}");
    let image = docker(&["inspect", "--format", "{{.Image}}", &container]).unwrap_or_else(|e| panic!("{e:#}"));
    let built = inspected_time("{{.Created}}", &image);
    let started = inspected_time("{{.State.StartedAt}}", &new);
    assert!(built < started, "the runtime's image ({built}) was built after the new sandboxd started ({started})");
}
