//! `scripts/deploy.sh` on the repository's `docker-compose.yml` (the images of
//! `tests/docker-images/build.sh deployment`, so `--no-pull --no-build`): without
//! `SANDBOXD_TOKEN` it starts no sandboxd; with it, it prepares the runtimes in a one-off container
//! of the new sandboxd image while the running one keeps serving, fails naming a runtime it could
//! not prepare after three tries before anything is replaced, migrates before the console is
//! replaced, waits until each replaced service is healthy, and the new sandboxd then
//! serves the changed runtime from an image built before it started (docs/design.md §14, "When a
//! runtime build is paid").
//!
//! The changed runtime's build waits on a gate this test holds (its setup command fetches a URL on
//! this machine), so the test looks at the old sandboxd exactly while the new runtime is being
//! prepared, without racing it.

use std::path::PathBuf;
use std::time::Duration;

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
    stack.set_env("SANDBOXD_TOKEN", present.then_some(stack.sandboxd_token.as_str()))
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
    assert_eq!(stack.container_of("sandboxd"), "", "sandboxd started without a token");

    // With it, and a runtime that cannot be built: tried three times, named, and the deploy fails
    // before anything is replaced (no sandboxd started, the console the same container).
    let console = stack.container_of("app");
    set_token(&stack, true).expect(".env");
    let (ok, log) =
        tokio::time::timeout(DEPLOY_TIMEOUT, deploy(stack.dir.clone(), run.clone())).await.expect("deploy timed out");
    assert!(!ok, "a deploy with a runtime that cannot be prepared succeeded:\n{log}");
    for attempt in ["attempt 1 of 3", "attempt 2 of 3"] {
        assert!(log.contains(&format!("Preparing runtime broken failed ({attempt}); trying again")), "{log}");
    }
    assert!(log.contains("deploy: runtime not prepared: broken"), "{log}");
    assert!(log.contains("nothing was replaced"), "{log}");
    assert!(!log.contains("runtime not prepared: workbench"), "{log}");
    assert!(!log.contains("deploy: replacing"), "{log}");
    assert_eq!(stack.container_of("sandboxd"), "", "sandboxd started by a failed deploy");
    assert_eq!(stack.container_of("app"), console, "the console was replaced by a failed deploy");

    // Without it: prepared, migrated, swapped, each replaced service waited for until healthy.
    stack.write_override(&images, &runtimes(&images, &run, first, json!({}))).unwrap_or_else(|e| panic!("{e:#}"));
    let (ok, log) =
        tokio::time::timeout(DEPLOY_TIMEOUT, deploy(stack.dir.clone(), run.clone())).await.expect("deploy timed out");
    assert!(ok, "{log}\n{}", stack.logs());
    assert!(log.contains("deploy: every runtime is prepared"), "{log}");
    assert!(in_order(&log, "deploy: preparing the runtimes", "deploy: replacing sandboxd"), "{log}");
    assert!(in_order(&log, "deploy: migrations applied", "deploy: replacing the console"), "{log}");
    assert!(in_order(&log, "deploy: replacing the console", "deploy: the console is healthy"), "{log}");
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    let token = stack.owner_token().unwrap_or_else(|e| panic!("{e:#}"));
    let conn = stack.connect_own_sandboxd(&token).await;
    let agent = stack.agent(&token, "versioned", "workbench").await;
    let (out, _) = stack.exec_in_new_run(&token, &agent, "cat /etc/deploy-version").await;
    assert_eq!(out["stdout"], "one\n", "{out}");
    let old = stack.container_of("sandboxd");
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
    assert_eq!(stack.container_of("sandboxd"), old, "sandboxd was replaced before its runtime was prepared");
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
    assert!(in_order(&log, "deploy: replacing sandboxd", "deploy: sandboxd is healthy"), "{log}");
    assert!(in_order(&log, "deploy: sandboxd is healthy", "deploy: replacing the console"), "{log}");
    let new = stack.container_of("sandboxd");
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

/// The `sh` block of docs/operating.md that follows the comment naming this file and `what`.
fn documented_block(what: &str) -> String {
    let docs = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/operating.md"))
        .expect("docs/operating.md");
    let marker = format!("<!-- tests/api/docker_deploy.rs runs this block: {what} -->");
    let after = &docs[docs.find(&marker).unwrap_or_else(|| panic!("no block `{what}` in docs/operating.md"))..];
    let start = after.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let end = after[start..].find("```").expect("the block's end");
    after[start..start + end].to_string()
}

/// Runs `script` with bash in the stack's directory, as an operator would there (the project's
/// name, files and profiles in the environment): its output, or a panic with it.
async fn run_documented(stack: &ComposeStack, script: &str) -> String {
    let out = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(&stack.dir)
        .env("COMPOSE_PROJECT_NAME", docker_support::compose_project(&stack.run))
        .env("COMPOSE_FILE", COMPOSE_FILES)
        .env("COMPOSE_PROFILES", "sandbox,docker-proxy")
        .output()
        .await
        .expect("running bash");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{script}\nfailed:\n{text}");
    text
}

/// The names of the agents the console lists.
async fn agent_names(stack: &ComposeStack, token: &str) -> Vec<String> {
    let (status, agents) = api(stack, token, reqwest::Method::GET, "/api/v1/agents", None).await;
    assert_eq!(status, 200, "{agents}");
    let items = agents.get("items").unwrap_or(&agents).as_array().cloned().unwrap_or_default();
    let mut names: Vec<String> = items.iter().filter_map(|a| a["name"].as_str().map(str::to_string)).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_deploy_asked_for_the_docker_proxy_starts_it_and_the_documented_backup_restores() {
    let Some(images) = docker_support::deployment_images("docker_deploy::proxy_backup").await else { return };
    let stack = ComposeStack::create().unwrap_or_else(|e| panic!("{e:#}"));
    let run = stack.run.clone();
    stack
        .write_override(&images, &crate::docker_peer::runtimes_value(&images.images).expect("runtimes"))
        .unwrap_or_else(|e| panic!("{e:#}"));
    // Asked for in .env, as the template shows.
    stack.set_env("AGENTICOS_DOCKER_HOST", Some("tcp://docker-proxy:2375")).expect(".env");
    let (ok, log) =
        tokio::time::timeout(DEPLOY_TIMEOUT, deploy(stack.dir.clone(), run.clone())).await.expect("deploy timed out");
    assert!(ok, "{log}\n{}", stack.logs());
    assert!(in_order(&log, "deploy: starting the Docker proxy", "deploy: replacing the console"), "{log}");
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    let proxy = stack.container_of("docker-proxy");
    assert!(!proxy.is_empty(), "no Docker proxy runs:\n{log}");

    // The console reads the engine through the proxy: it finds this deployment's sandboxd.
    let token = stack.owner_token().unwrap_or_else(|e| panic!("{e:#}"));
    let (status, found) =
        api(&stack, &token, reqwest::Method::GET, "/api/v1/sandbox-connections/discovered", None).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!((&found["engine_enabled"], &found["engine_problem"]), (&json!(true), &json!(null)), "{found}");
    let sandboxd = docker(&["inspect", "--format", "{{.Name}}", &stack.container_of("sandboxd")]).expect("name");
    let names: Vec<&str> =
        found["containers"].as_array().into_iter().flatten().filter_map(|c| c["name"].as_str()).collect();
    assert!(names.contains(&sandboxd.trim_start_matches('/')), "{sandboxd} not in {found}");

    // The documented backup, taken while the console serves, restores what was there before it
    // (and not what came after), with the console's volume.
    stack.connect_own_sandboxd(&token).await;
    stack.agent(&token, "before-backup", "python").await;
    run_documented(&stack, &documented_block("backup")).await;
    for file in ["agenticos.dump", "console-data.tar.gz"] {
        let size = std::fs::metadata(stack.dir.join(file)).map(|m| m.len()).unwrap_or(0);
        assert!(size > 100, "{file}: {size} bytes");
    }
    stack.agent(&token, "after-backup", "python").await;
    assert_eq!(agent_names(&stack, &token).await, ["after-backup", "before-backup"]);
    run_documented(&stack, &documented_block("restore")).await;
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    assert_eq!(agent_names(&stack, &token).await, ["before-backup"]);
}

/// `NAME`'s value in the stack's `.env`.
fn env_of(stack: &ComposeStack, name: &str) -> String {
    let text = std::fs::read_to_string(stack.dir.join(".env")).expect(".env");
    text.lines().find_map(|l| l.strip_prefix(&format!("{name}="))).unwrap_or_default().to_string()
}

/// Runs `program ARGS…` in the stack's directory as an operator of a fresh host would: the
/// project's name and files (the override with the local images), the console's port and the
/// workspace root in the environment, nothing else of compose's. Success and output.
async fn install(stack: &ComposeStack, program: &str, args: &[&str]) -> (bool, String) {
    let run = tokio::process::Command::new(program)
        .args(args)
        .current_dir(&stack.dir)
        .env("COMPOSE_PROJECT_NAME", docker_support::compose_project(&stack.run))
        .env("COMPOSE_FILE", COMPOSE_FILES)
        .env("AGENTICOS_PORT", stack.port())
        .env("SANDBOXD_WORKSPACE_ROOT", stack.workspaces())
        .env_remove("COMPOSE_PROFILES")
        .env_remove("SANDBOXD_TOKEN")
        .env_remove("DOCKER_GID")
        .env_remove("AGENTICOS_PUBLIC_URL")
        .output();
    let out = tokio::time::timeout(DEPLOY_TIMEOUT, run).await.expect("install timed out").expect("install runs");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The deployment's own sandboxd, connected without a key, probes healthy with the token of .env.
async fn own_sandboxd_is_healthy(stack: &mut ComposeStack) {
    stack.sandboxd_token = env_of(stack, "SANDBOXD_TOKEN");
    assert_eq!(stack.sandboxd_token.len(), 43, "the generated sandboxd token");
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    stack.healthy("sandboxd").await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    let token = stack.owner_token().unwrap_or_else(|e| panic!("{e:#}"));
    let conn = stack.connect_own_sandboxd(&token).await;
    let probe = format!("/api/v1/sandbox-connections/{conn}/probe");
    let (status, probed) = api(stack, &token, reqwest::Method::POST, &probe, None).await;
    assert_eq!((status, &probed["health"]), (200, &json!("healthy")), "{probed}");
}

#[tokio::test]
async fn make_prod_starts_the_console_without_sandboxd_and_make_dev_adds_it() {
    let Some(images) = docker_support::deployment_images("docker_deploy::make").await else { return };
    let mut stack = ComposeStack::empty().unwrap_or_else(|e| panic!("{e:#}"));
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(stack.dir.join("scripts")).expect("scripts/");
    for file in ["docker-compose.yml", ".env.example", "Makefile", "scripts/deploy.sh", "scripts/quickstart.sh"] {
        std::fs::copy(repo.join(file), stack.dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    stack
        .write_override(&images, &crate::docker_peer::runtimes_value(&images.images).expect("runtimes"))
        .unwrap_or_else(|e| panic!("{e:#}"));

    let (ok, log) = install(&stack, "make", &["prod", "DEPLOY_FLAGS=--no-pull --no-build"]).await;
    assert!(ok, "{log}\n{}", stack.logs());
    assert!(log.contains("quickstart: wrote .env"), "{log}");
    assert_eq!(env_of(&stack, "AGENTICOS_PUBLIC_URL"), format!("http://localhost:{}", stack.port()));
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    assert_eq!(stack.container_of("sandboxd"), "", "make prod started sandboxd:\n{log}");

    let (ok, log) = install(&stack, "make", &["dev", "DEPLOY_FLAGS=--no-pull --no-build"]).await;
    assert!(ok, "{log}\n{}", stack.logs());
    assert!(log.contains("deploy: sandboxd is healthy"), "{log}");
    own_sandboxd_is_healthy(&mut stack).await;
}

#[tokio::test]
async fn quickstart_installs_the_release_served_over_loopback_and_its_stack_serves() {
    let Some(images) = docker_support::deployment_images("docker_deploy::quickstart").await else { return };
    let mut stack = ComposeStack::empty().unwrap_or_else(|e| panic!("{e:#}"));
    // The release: this repository's files under the names the release publishes, served by a
    // static HTTP server on loopback.
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let release = docker_support::run_dir(&stack.run).join("release");
    std::fs::create_dir_all(&release).expect("release/");
    for (from, to) in [
        ("docker-compose.yml", "docker-compose.yml"),
        (".env.example", "env.example"),
        ("catalog/sandboxd.version", "sandboxd.version"),
        ("scripts/deploy.sh", "deploy.sh"),
    ] {
        std::fs::copy(repo.join(from), release.join(to)).unwrap_or_else(|e| panic!("{from}: {e}"));
    }
    let mut server = tokio::process::Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory"])
        .arg(&release)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 -m http.server");
    let mut first = String::new();
    let mut stdout = tokio::io::BufReader::new(server.stdout.take().expect("stdout"));
    tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut first).await.expect("the server's first line");
    let url = first.split_whitespace().find(|w| w.starts_with("(http://")).expect("its address");
    let url = url.trim_start_matches('(').trim_end_matches(['/', ')']).to_string();
    // Only the override (local images, labels) is there before the quickstart.
    stack
        .write_override(&images, &crate::docker_peer::runtimes_value(&images.images).expect("runtimes"))
        .unwrap_or_else(|e| panic!("{e:#}"));

    let script = repo.join("scripts/quickstart.sh").display().to_string();
    let dir = stack.dir.display().to_string();
    let (ok, log) = install(&stack, "bash", &[&script, "--release-url", &url, "--dir", &dir, "--", "--no-pull"]).await;
    assert!(ok, "{log}\n{}", stack.logs());
    let pin = std::fs::read_to_string(repo.join("catalog/sandboxd.version")).expect("pin");
    assert!(log.contains(&format!("sandboxd is pinned to ghcr.io/vstorm-co/sandboxd:{}", pin.trim())), "{log}");
    // .env: private, the release's console image, new secrets, the address of the chosen port.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(stack.dir.join(".env")).expect(".env").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(env_of(&stack, "AGENTICOS_IMAGE"), format!("ghcr.io/vstorm-co/agenticos:{}", env!("CARGO_PKG_VERSION")));
    assert_eq!(env_of(&stack, "AGENTICOS_VAULT_KEY").len(), 64);
    assert_eq!(env_of(&stack, "AGENTICOS_PUBLIC_URL"), format!("http://localhost:{}", stack.port()));
    own_sandboxd_is_healthy(&mut stack).await;
    let _ = server.kill().await;
}

#[test]
fn quickstart_installs_this_release() {
    // No engine: the script's release is the crate's version (the console image it names, and the
    // release address it fetches from by default).
    let script =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/quickstart.sh"))
            .expect("scripts/quickstart.sh");
    let release = format!("version={}", env!("CARGO_PKG_VERSION"));
    assert!(script.lines().any(|l| l == release), "scripts/quickstart.sh does not say `{release}`");
}
