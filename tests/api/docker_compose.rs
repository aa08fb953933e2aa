//! The deployment as shipped: the repository's `docker-compose.yml`, unchanged, run with the
//! images built here (no registry is reachable): the console image from the repository's own
//! `Dockerfile` (`RUST_IMAGE` and `BASE_IMAGE` are local stand-ins), a stand-in PostgreSQL image
//! and the pinned sandboxd image (`tests/docker-images/build.sh deployment`).
//!
//! A small override file changes only what a test must: the console and PostgreSQL images,
//! labels naming the test run, and `SANDBOXD_RUNTIMES` pointing at the reduced local runtime
//! images, each with `network_mode none`. The console is published on 127.0.0.1 only (the
//! compose file's own port mapping, with `AGENTICOS_PORT` set to a free port); the stack's own
//! network is the compose default. What the stack leaves is removed when the test ends, also
//! after a failure (its logs are kept in the run's directory then).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::docker_peer::runtimes_value;
use crate::docker_support::{self, docker, DeploymentImages, LABEL, RUN_LABEL, SANDBOX_UID};

/// How long the console gets to answer `/readyz` after `up` returned.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// A compose project of the repository's `docker-compose.yml` in `<RUNS_DIR>/<run>/compose`.
/// Every `docker-compose` call of the stack runs with the profile `sandbox` (sandboxd's).
pub struct ComposeStack {
    pub run: String,
    pub dir: PathBuf,
    /// `http://127.0.0.1:<AGENTICOS_PORT>`
    pub url: String,
    /// The `SANDBOXD_TOKEN` `agenticos sandbox-token` wrote.
    pub sandboxd_token: String,
}

/// The files `docker-compose` reads, as `COMPOSE_FILE` spells them.
pub const COMPOSE_FILES: &str = "docker-compose.yml:test.override.yml";

impl ComposeStack {
    /// Writes the project (compose file, `.env`, override) and runs `up -d`.
    fn up(images: &DeploymentImages) -> anyhow::Result<ComposeStack> {
        let stack = Self::create()?;
        stack.write_override(images, &runtimes_value(&images.images)?)?;
        // From here on a failure still takes the stack down (Drop).
        stack.compose(&["up", "--detach", "--no-build"]).context("docker-compose up")?;
        Ok(stack)
    }

    /// Writes the project: the repository's compose file and a `.env` as an operator makes it
    /// (the sandboxd token by `agenticos sandbox-token`, the engine socket's group); the
    /// workspace root belongs to the sandbox uid. Starts nothing; the override is
    /// [`ComposeStack::write_override`]'s.
    pub fn create() -> anyhow::Result<ComposeStack> {
        let stack = Self::empty()?;
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(repo.join("docker-compose.yml"), stack.dir.join("docker-compose.yml"))
            .context("copying docker-compose.yml")?;
        stack.write_env(&repo.join(".env.example"))
    }

    /// The project's directory, empty, and a workspace root that belongs to the sandbox uid, with
    /// a free port for the console and no token yet. Starts nothing.
    pub fn empty() -> anyhow::Result<ComposeStack> {
        docker_support::sweep_abandoned();
        let run = docker_support::new_run_id();
        let dir = docker_support::run_dir(&run).join("compose");
        let workspaces = docker_support::run_dir(&run).join("workspaces");
        std::fs::create_dir_all(&workspaces).context("creating the workspace root")?;
        std::os::unix::fs::chown(&workspaces, Some(SANDBOX_UID), Some(SANDBOX_UID))
            .context("giving the workspace root to the sandbox uid")?;
        std::fs::create_dir_all(&dir).context("creating the project directory")?;
        let url = format!("http://127.0.0.1:{}", free_port()?);
        Ok(ComposeStack { run, dir, url, sandboxd_token: String::new() })
    }

    /// The console's published port.
    pub fn port(&self) -> &str {
        self.url.rsplit(':').next().unwrap_or_default()
    }

    /// The workspace root [`ComposeStack::empty`] made.
    pub fn workspaces(&self) -> PathBuf {
        docker_support::run_dir(&self.run).join("workspaces")
    }

    /// Writes `.env` from `template`; the stack with its token.
    fn write_env(mut self, template: &Path) -> anyhow::Result<ComposeStack> {
        let dir = self.dir.clone();
        // `.env` as an operator makes it: the shipped template, the token written by the binary
        // into its empty line (unprinted), the rest filled in.
        let env_file = dir.join(".env");
        std::fs::copy(template, &env_file).context("copying .env.example")?;
        let out = Command::new(env!("CARGO_BIN_EXE_agenticos"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .current_dir(&dir)
            .args(["sandbox-token", "--env-file", ".env"])
            .output()
            .context("running agenticos sandbox-token")?;
        if !out.status.success() {
            bail!("agenticos sandbox-token failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let written = std::fs::read_to_string(&env_file).context("reading .env")?;
        let sandboxd_token = written
            .lines()
            .find_map(|l| l.strip_prefix("SANDBOXD_TOKEN=").filter(|t| !t.is_empty()))
            .context("sandbox-token wrote no SANDBOXD_TOKEN")?
            .to_string();
        self.sandboxd_token = sandboxd_token;
        let stack = self;
        let port = stack.port().to_string();
        let vault_key = uuid::Uuid::new_v4().simple().to_string() + &uuid::Uuid::new_v4().simple().to_string();
        stack.set_env("AGENTICOS_VAULT_KEY", Some(&vault_key))?;
        stack.set_env("POSTGRES_PASSWORD", Some(&uuid::Uuid::new_v4().simple().to_string()))?;
        stack.set_env("AGENTICOS_PORT", Some(&port))?;
        stack.set_env("AGENTICOS_PUBLIC_URL", Some(&stack.url))?;
        stack.set_env("SANDBOXD_WORKSPACE_ROOT", Some(&stack.workspaces().display().to_string()))?;
        stack.set_env("DOCKER_GID", Some(&docker_support::socket_gid()?))?;
        Ok(stack)
    }

    /// Sets `name` in the project's `.env` to `value` (its first line, or a new one; other lines
    /// of it go), or removes it (`None`).
    pub fn set_env(&self, name: &str, value: Option<&str>) -> anyhow::Result<()> {
        let path = self.dir.join(".env");
        let text = std::fs::read_to_string(&path).context("reading .env")?;
        let prefix = format!("{name}=");
        let mut lines: Vec<String> = Vec::new();
        let mut set = false;
        for line in text.lines() {
            if !line.starts_with(&prefix) {
                lines.push(line.to_string());
            } else if let (Some(value), false) = (value, set) {
                lines.push(format!("{prefix}{value}"));
                set = true;
            }
        }
        if let (Some(value), false) = (value, set) {
            lines.push(format!("{prefix}{value}"));
        }
        std::fs::write(&path, lines.join("\n") + "\n").context("writing .env")
    }

    /// (Re)writes the override: local images, the run's labels, and sandboxd's `runtimes`.
    pub fn write_override(&self, images: &DeploymentImages, runtimes: &str) -> anyhow::Result<()> {
        std::fs::write(self.dir.join("test.override.yml"), override_file(images, &self.run, runtimes)?)
            .context("writing the override")
    }

    /// `docker-compose ARGS…` in the project's directory, with the project's name, files and the
    /// profile `sandbox`; its standard output.
    pub fn compose(&self, args: &[&str]) -> anyhow::Result<String> {
        self.compose_with_input(args, None)
    }

    fn compose_with_input(&self, args: &[&str], input: Option<&str>) -> anyhow::Result<String> {
        use std::io::Write as _;
        let mut child = Command::new("docker-compose")
            .current_dir(&self.dir)
            .env("COMPOSE_PROJECT_NAME", docker_support::compose_project(&self.run))
            .env("COMPOSE_FILE", COMPOSE_FILES)
            .env("COMPOSE_PROFILES", "sandbox")
            .args(args)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("running docker-compose")?;
        if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
            stdin.write_all(text.as_bytes()).context("writing to docker-compose")?;
        }
        let out = child.wait_with_output().context("waiting for docker-compose")?;
        if !out.status.success() {
            bail!(
                "docker-compose {} failed ({}):\n{}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `agenticos ARGS…` in the console's container.
    pub fn agenticos(&self, args: &[&str], input: Option<&str>) -> anyhow::Result<String> {
        let mut full = vec!["exec", "-T", "app", "agenticos"];
        full.extend(args);
        self.compose_with_input(&full, input)
    }

    /// The first owner (organization `Compose`) and an owner API token for it, made on the
    /// console's own command line; the token.
    pub fn owner_token(&self) -> anyhow::Result<String> {
        self.agenticos(
            &["admin", "create-owner", "--email", "owner@example.com", "--organization", "Compose", "--password-stdin"],
            Some("a long enough password\n"),
        )?;
        let created = self.agenticos(
            &["admin", "create-token", "--organization", "Compose", "--role", "owner", "--name", "runtime"],
            None,
        )?;
        created
            .lines()
            .find_map(|l| l.strip_prefix("API token (shown once): "))
            .map(|t| t.trim().to_string())
            .with_context(|| format!("no token in {created}"))
    }

    /// Saves the deployment's own sandboxd (`http://sandboxd:8080`) as a connection, without a
    /// key: the console uses the `SANDBOXD_TOKEN` of its .env. The connection's id.
    pub async fn connect_own_sandboxd(&self, token: &str) -> String {
        let body = json!({"name": "this deployment", "address": "http://sandboxd:8080"});
        let (status, conn) = api(self, token, reqwest::Method::POST, "/api/v1/sandbox-connections", Some(body)).await;
        assert_eq!(status, 201, "{conn}\n{}", self.logs());
        conn["id"].as_str().expect("id").to_string()
    }

    /// A new agent `name` of the service backend on `runtime`, one workspace per run; its id.
    pub async fn agent(&self, token: &str, name: &str, runtime: &str) -> String {
        let body = json!({"name": name, "backend": "service", "scope": "run", "runtime": runtime});
        let (status, agent) = api(self, token, reqwest::Method::POST, "/api/v1/agents", Some(body)).await;
        assert_eq!(status, 201, "{agent}");
        agent["id"].as_str().expect("agent id").to_string()
    }

    /// Starts a run of `agent` and executes `command` in its workspace (the first operation
    /// opens its session): the result, which must be a 200 with exit code 0, and the container
    /// the session runs in.
    pub async fn exec_in_new_run(&self, token: &str, agent: &str, command: &str) -> (Value, String) {
        let body = json!({"agent_id": agent, "started_by": "member"});
        let (status, run) = api(self, token, reqwest::Method::POST, "/api/v1/runs", Some(body)).await;
        assert_eq!(status, 201, "{run}");
        let run_id = run["id"].as_str().expect("run id").to_string();
        let exec = format!("/api/v1/runs/{run_id}/workspace/exec");
        let (status, out) = api(self, token, reqwest::Method::POST, &exec, Some(json!({"command": command}))).await;
        assert_eq!(status, 200, "{out}\n{}", self.logs());
        assert_eq!(out["exit_code"], 0, "{out}");
        let state = format!("/api/v1/runs/{run_id}/workspace/state");
        let (_, state) = api(self, token, reqwest::Method::GET, &state, None).await;
        let key = state["session_key"].as_str().unwrap_or_else(|| panic!("no session key: {state}"));
        (out, format!("{}{key}", docker_support::SESSION_CONTAINER_PREFIX))
    }

    /// The output of every service of the stack.
    pub fn logs(&self) -> String {
        self.compose(&["logs", "--no-color"]).unwrap_or_else(|e| format!("(no logs: {e:#})"))
    }

    /// Waits until the console's `/readyz` answers 200; its body.
    pub async fn ready(&self) -> anyhow::Result<Value> {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(3)).build()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut pause = Duration::from_millis(100);
        loop {
            if let Ok(r) = http.get(format!("{}/readyz", self.url)).send().await {
                if r.status() == 200 {
                    return Ok(r.json().await?);
                }
            }
            if Instant::now() >= deadline {
                bail!("/readyz did not answer 200 within {READY_TIMEOUT:?}");
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// The id of the stack's running container of `service` (not a one-off `run`), or empty.
    pub fn container_of(&self, service: &str) -> String {
        let project = docker_support::compose_project(&self.run);
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

    /// Waits until the container of `service` is `healthy` by its own compose healthcheck.
    pub async fn healthy(&self, service: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let container = self.container_of(service);
            let health =
                docker(&["inspect", "--format", "{{if .State.Health}}{{.State.Health.Status}}{{end}}", &container])
                    .unwrap_or_default();
            if health == "healthy" {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!("{service} is not healthy within {READY_TIMEOUT:?}: `{health}`");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Names of the running containers of the stack: the project's, and the session
    /// containers sandboxd started (their bind mounts are under the run's directory).
    fn running(&self) -> Vec<String> {
        let project = docker_support::compose_project(&self.run);
        let mut names: Vec<String> = docker(&[
            "ps",
            "--filter",
            &format!("label=com.docker.compose.project={project}"),
            "--format",
            "{{.Names}}",
        ])
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
        let all = docker_support::containers_of(&self.run);
        let running = docker(&["ps", "--format", "{{.Names}}"]).unwrap_or_default();
        names.extend(all.into_iter().filter(|n| running.lines().any(|r| r == n)));
        names.sort();
        names.dedup();
        names
    }
}

impl Drop for ComposeStack {
    fn drop(&mut self) {
        let run_dir = docker_support::run_dir(&self.run);
        if std::thread::panicking() {
            let _ = std::fs::write(run_dir.join("compose.log"), self.logs());
            let _ = std::fs::write(run_dir.join("KEPT"), "its test panicked");
            eprintln!("compose stack: kept {} (compose.log has the services' output)", run_dir.display());
        }
        if let Err(error) = self.compose(&["down", "--volumes", "--remove-orphans", "--timeout", "5"]) {
            eprintln!("compose stack: {error:#}");
        }
        docker_support::remove_containers(Some(&self.run));
        docker_support::remove_compose_leftovers(Some(&self.run));
        docker_support::remove_built_images(Some(&self.run));
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&run_dir);
        }
    }
}

/// The override: local images, the run's labels, and `runtimes` as sandboxd's allowlist.
fn override_file(images: &DeploymentImages, run: &str, runtimes: &str) -> anyhow::Result<String> {
    let (key, value) = LABEL.split_once('=').context("LABEL is key=value")?;
    let labels = json!({ key: value, RUN_LABEL: run });
    // JSON is YAML: the override is written as JSON.
    let file = json!({
        "services": {
            "app": {"image": images.console, "labels": labels},
            "docker-proxy": {"image": images.console, "labels": labels},
            "postgres": {"image": images.postgres, "labels": labels},
            "sandboxd": {
                "labels": labels,
                "environment": {"SANDBOXD_RUNTIMES": runtimes},
            },
        }
    });
    Ok(serde_json::to_string_pretty(&file)?)
}

/// `GET path` on the console's API with `token`: status and the body's bytes.
pub async fn get_bytes(stack: &ComposeStack, token: &str, path: &str) -> (u16, Vec<u8>) {
    let response = reqwest::Client::new()
        .get(format!("{}{path}", stack.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = response.status().as_u16();
    (status, response.bytes().await.map(|b| b.to_vec()).unwrap_or_default())
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("picking a free port")?;
    Ok(listener.local_addr()?.port())
}

/// `method path` on the console's API with `token`: status and JSON body.
pub async fn api(
    stack: &ComposeStack,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, format!("{}{path}", stack.url)).bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap_or_else(|e| panic!("{path}: {e}"));
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test]
async fn the_compose_stack_runs_echo_in_a_real_sandbox_and_down_leaves_nothing_running() {
    let Some(images) = docker_support::deployment_images("docker_compose::stack").await else { return };
    let stack = ComposeStack::up(&images).unwrap_or_else(|e| panic!("{e:#}"));
    let ready = stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    assert_eq!(ready["status"], "ready", "{ready}");
    // The console runs on the stack's PostgreSQL, not a SQLite file inside its container.
    let db =
        stack.compose(&["exec", "-T", "app", "sh", "-c", "echo \"$DATABASE_URL\""]).unwrap_or_else(|e| panic!("{e:#}"));
    assert!(db.trim().starts_with("postgres://agenticos:") && db.trim().ends_with("@postgres:5432/agenticos"), "{db}");
    // Configured from .env, not edited: the public address follows what .env says.
    let public = stack
        .compose(&["exec", "-T", "app", "sh", "-c", "echo \"$AGENTICOS_PUBLIC_URL\""])
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(public.trim(), stack.url);
    // The binary says which release it is.
    let version = stack.agenticos(&["--version"], None).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(version, format!("agenticos {}\n", env!("CARGO_PKG_VERSION")));

    // Both services become healthy by their own healthchecks (the console's asks /readyz,
    // sandboxd's its /healthz), and run hardened: a read-only root filesystem, no capability, no
    // privilege to gain. Everything the console writes is on its named volume (or /tmp, memory).
    for service in ["app", "sandboxd"] {
        stack.healthy(service).await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
        let container = stack.container_of(service);
        let hardening = docker(&[
            "inspect",
            "--format",
            "{{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.SecurityOpt}}",
            &container,
        ])
        .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(hardening, "true [ALL] [no-new-privileges:true]", "{service}");
    }
    let mounts = docker(&[
        "inspect",
        "--format",
        "{{range .Mounts}}{{.Type}}:{{.Destination}} {{end}}",
        &stack.container_of("app"),
    ])
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(mounts.trim(), "volume:/app/data", "the console's mounts");

    // The first owner and a token, on the console's own command line.
    let token = stack.owner_token().unwrap_or_else(|e| panic!("{e:#}"));

    // The deployment's own sandboxd, saved without a key: it probes healthy with the token
    // `agenticos sandbox-token` wrote (the console has it from .env, nobody typed it).
    let conn_id = stack.connect_own_sandboxd(&token).await;
    let (status, probe) =
        api(&stack, &token, reqwest::Method::POST, &format!("/api/v1/sandbox-connections/{conn_id}/probe"), None).await;
    assert_eq!(status, 200, "{probe}");
    assert_eq!(probe["status"], "ok", "{probe}");
    assert_eq!(probe["health"], "healthy", "{probe}");

    // A run executes `echo` in a real sandbox container.
    let agent = stack.agent(&token, "echo", "python").await;
    let (out, container) = stack.exec_in_new_run(&token, &agent, "echo hello from compose; cat /etc/hostname").await;
    let stdout = out["stdout"].as_str().unwrap_or_default();
    assert!(stdout.starts_with("hello from compose\n"), "{out}");
    let inspected = docker(&[
        "inspect",
        "--format",
        "{{.State.Running}} {{.Config.Image}} {{.HostConfig.NetworkMode}} {{.Config.Hostname}}",
        &container,
    ])
    .unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(
        inspected,
        format!("true {} none {}", images.images.python, stdout.lines().nth(1).unwrap_or_default()),
        "the command ran in this container"
    );

    // The token never reached the console's (or any service's) output.
    let logs = stack.logs();
    assert!(!logs.contains(&stack.sandboxd_token), "a service logged the sandboxd token");

    // `down` leaves nothing of the stack running: not its services, not the sandboxes.
    assert!(stack.running().iter().any(|n| n == &container), "{:?}", stack.running());
    stack.compose(&["down"]).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(stack.running(), Vec::<String>::new(), "still running after docker-compose down");
    // sandboxd stopped its sandbox on the way down; a persisted container is kept, stopped, for
    // SANDBOXD_CONTAINER_TTL (the test's Drop removes it).
    let status = docker(&["inspect", "--format", "{{.State.Status}}", &container]).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(status, "exited");
}

#[tokio::test]
async fn a_recreated_console_still_downloads_and_restores_a_snapshot_taken_before() {
    let Some(images) = docker_support::deployment_images("docker_compose::snapshot").await else { return };
    let stack = ComposeStack::up(&images).unwrap_or_else(|e| panic!("{e:#}"));
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));
    let token = stack.owner_token().unwrap_or_else(|e| panic!("{e:#}"));
    stack.connect_own_sandboxd(&token).await;
    let agent = stack.agent(&token, "keeper", "python").await;

    // A run writes a file; an on-demand snapshot of its workspace is stored locally (no S3).
    let run_body = json!({"agent_id": agent, "started_by": "member"});
    let (status, run) = api(&stack, &token, reqwest::Method::POST, "/api/v1/runs", Some(run_body.clone())).await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().expect("run id").to_string();
    let file = format!("{}/api/v1/runs/{run_id}/workspace/files?path=kept.txt", stack.url);
    let put = reqwest::Client::new().put(&file).bearer_auth(&token).body("kept across deploys\n").send().await;
    assert_eq!(put.expect("write").status(), 204);
    let (_, state) =
        api(&stack, &token, reqwest::Method::GET, &format!("/api/v1/runs/{run_id}/workspace/state"), None).await;
    let workspace = state["workspace_id"].as_str().unwrap_or_else(|| panic!("{state}")).to_string();
    let (status, snapshot) =
        api(&stack, &token, reqwest::Method::POST, &format!("/api/v1/workspaces/{workspace}/snapshots"), None).await;
    assert_eq!(status, 201, "{snapshot}\n{}", stack.logs());
    let snapshot_id = snapshot["id"].as_str().expect("snapshot id").to_string();
    let archive = format!("/api/v1/snapshots/{snapshot_id}/archive");
    let (status, before) = get_bytes(&stack, &token, &archive).await;
    assert_eq!(status, 200);
    assert!(!before.is_empty());

    // The console is recreated, as every deploy does: a new container of the same service.
    let old = stack.container_of("app");
    stack
        .compose(&["up", "--detach", "--no-deps", "--no-build", "--force-recreate", "app"])
        .unwrap_or_else(|e| panic!("{e:#}"));
    let new = stack.container_of("app");
    assert!(!new.is_empty() && new != old, "the console was not recreated: {old} / {new}");
    stack.ready().await.unwrap_or_else(|e| panic!("{e:#}\n{}", stack.logs()));

    // The snapshot taken before is still there: the same bytes, and a new run starts from it.
    let (status, after) = get_bytes(&stack, &token, &archive).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&after));
    assert!(after == before, "the archive changed across the recreate");
    let mut restored = run_body;
    restored["snapshot_id"] = json!(snapshot_id);
    let (status, run) = api(&stack, &token, reqwest::Method::POST, "/api/v1/runs", Some(restored)).await;
    assert_eq!(status, 201, "{run}");
    let run_id = run["id"].as_str().expect("run id");
    let (status, read) =
        get_bytes(&stack, &token, &format!("/api/v1/runs/{run_id}/workspace/files?path=kept.txt")).await;
    assert_eq!((status, String::from_utf8_lossy(&read).into_owned()), (200, "kept across deploys\n".to_string()));
}
